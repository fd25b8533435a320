"""``/v1/live_evaluations``: runs followed while they train (:mod:`palaestra.scoreboard.protocol.live`).

``POST`` creates one (``Idempotency-Key`` honoured), ``GET /{id}`` reads it with each source's
position (public, as evaluations are), ``POST /{id}/chunks`` appends one source's next episodes and
``POST /{id}/seal`` makes its evaluation (:mod:`palaestra.scoreboard.server.live.runs`), with the
directory's video archive and provenance when its body names them (:class:`LiveSeal`; it may be
empty). Creating and chunks are rate-limited per user (:mod:`palaestra.scoreboard.server.accounts.rate_limits`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol.live import (
    LiveChunk,
    LiveChunkAnswer,
    LiveEvaluationCreate,
    LiveEvaluationObject,
    LiveSeal,
)
from palaestra.scoreboard.server.accounts import rate_limits
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.api.common import base_url
from palaestra.scoreboard.server.api.deps import CurrentUser, State, json_body
from palaestra.scoreboard.server.core.answers import Idempotency, answer
from palaestra.scoreboard.server.core.deps import run_blocking
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.live import runs as live
from palaestra.scoreboard.server.problems import Problem

__all__ = ["router"]

router = APIRouter(prefix="/live_evaluations", tags=["live evaluations"])


@router.post("", status_code=201, response_model=LiveEvaluationObject)
def create_live_evaluation(
    body: Annotated[LiveEvaluationCreate, json_body(LiveEvaluationCreate)],
    request: Request,
    principal: CurrentUser,
    state: State,
) -> Response:
    """A new live evaluation, in progress."""
    base = base_url(state, request)

    def create(session: object) -> tuple[int, LiveEvaluationObject]:
        live.check_new_live_run(state, session, principal.user_seq)  # type: ignore[arg-type]
        made = live.create_live(session, principal, body)  # type: ignore[arg-type]
        return 201, live.live_object(state, made, {}, principal.user_name, base)

    return Idempotency.of(request, principal, body).answer(state.db, create)


@router.get("/{live_id}", response_model=LiveEvaluationObject)
def get_live_evaluation(live_id: str, request: Request, state: State) -> Response:
    with state.db.read() as session:
        found, sources, owner = live.load_live(session, live_id)
    return answer(live.live_object(state, found, sources, owner, base_url(state, request)))


@router.post("/{live_id}/chunks", response_model=LiveChunkAnswer)
def append_chunk(
    live_id: str,
    body: Annotated[LiveChunk, json_body(LiveChunk)],
    principal: CurrentUser,
    state: State,
) -> Response:
    """One source's next episodes (``start``: its first one's index in the source); all or nothing."""
    rate_limits.note_live_chunk(state, principal.user_seq)
    return answer(live.apply_chunk(state, principal, live_id, body))


@router.post("/{live_id}/seal", response_model=LiveEvaluationObject)
async def seal_live_evaluation(
    live_id: str, request: Request, principal: CurrentUser, state: State
) -> Response:
    """Make the evaluation an upload of the finished directory makes; idempotent."""
    body = await _seal_body(request)
    return await run_blocking(state, _seal, live_id, request, principal, state, body)


async def _seal_body(request: Request) -> LiveSeal:
    """The seal's body: empty (a follower of an older palaestra, ``upload --seal``), or a :class:`LiveSeal`."""
    data = await request.body()  # after the key was checked (CurrentUser), within the JSON body cap
    if not data.strip():
        return LiveSeal()
    try:
        doc = protocol.parse_json(data, "The request body")
    except protocol.JSONInputError as e:
        raise Problem(400, str(e)) from None
    if not isinstance(doc, dict):
        raise Problem(400, "The request body must be a JSON object (or empty).")
    try:
        return LiveSeal.model_validate(doc)
    except ValidationError as e:
        raise RequestValidationError(e.errors(include_url=False)) from None


def _seal(live_id: str, request: Request, principal: Principal, state: ServerState, body: LiveSeal) -> Response:
    live.seal(state, principal, live_id, request, body)
    return get_live_evaluation(live_id, request, state)
