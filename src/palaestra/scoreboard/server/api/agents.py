"""``/v1/agents``: agents the board evaluates itself (:mod:`palaestra.scoreboard.protocol.agents`).

``POST`` takes a multipart form: ``model`` (the ``.onnx`` file), ``descriptor`` (its JSON, as a file or
a field) and optionally ``algorithm``, ``writeup`` and ``episodes``. The API key is checked before the
body is read; the body is held to ``max_agent_bytes`` (:mod:`..guards.body_limits`) and the uploads to
``agents_per_hour`` per user. The file is hostile until the artifact checks passed it
(:func:`palaestra.agents.artifact.check_artifact_bytes`, off the event loop): what they refuse is one
4xx naming the problem. Then the seeds are drawn and the job queued (:mod:`..agents.jobs`): 202 with the job, and its URL in ``Location``.
``GET /{job_id}`` (public, as evaluations are) is the job: status, progress, failure and log tail.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session
from starlette.datastructures import UploadFile

from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol.agents import (
    AGENTS_PATH,
    DEFAULT_EPISODES,
    MAX_EPISODES,
    AgentJobObject,
)
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.accounts.rate_limits import UPLOAD_WINDOW_S, too_many
from palaestra.scoreboard.server.agents import jobs as agent_jobs
from palaestra.scoreboard.server.agents.matches import match_games
from palaestra.scoreboard.server.api.common import base_url
from palaestra.scoreboard.server.api.deps import CurrentUser, State
from palaestra.scoreboard.server.core.answers import Idempotency, answer
from palaestra.scoreboard.server.core.deps import run_blocking
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import sha256_of
from palaestra.scoreboard.server.problems import Problem

__all__ = ["router"]

router = APIRouter(prefix=AGENTS_PATH, tags=["agents"])


class _Upload(protocol.Request):
    """What an ``Idempotency-Key`` of ``POST /v1/agents`` stands for: the same files and fields."""

    model_sha256: str
    descriptor_sha256: str
    fields: dict[str, str]


@router.post("", status_code=202, response_model=AgentJobObject)
async def upload_agent(request: Request, principal: CurrentUser, state: State) -> Response:
    """Queue the board's own evaluation of an agent artifact: ``model`` (.onnx) + ``descriptor`` (JSON).

    An ``Idempotency-Key`` (the client sends one per command) makes a retried upload the same job."""
    form = await request.form(max_files=2, max_fields=10)
    try:
        model, descriptor = await _parts(state, form)
        fields = {name: form.get(name) for name in ("algorithm", "writeup", "episodes")}
        response = await run_blocking(
            state, _queue, state, request, principal, model, descriptor, fields, small=False
        )
    finally:
        await form.close()
    job_id = json.loads(bytes(response.body))["id"]
    response.headers["Location"] = f"{base_url(state, request)}{protocol.API_PREFIX}{AGENTS_PATH}/{job_id}"
    return response


async def _parts(state: ServerState, form: Any) -> tuple[bytes, bytes]:
    model = form.get("model")
    if not isinstance(model, UploadFile):
        raise Problem(
            400,
            "The form has no 'model' file: send the agent's .onnx file as the multipart field 'model' "
            "(`palaestra upload --agent MODEL.onnx` does).",
            "model",
        )
    cap = state.config.max_agent_bytes
    data = await model.read(cap + 1)
    if len(data) > cap:
        raise Problem(
            413,
            f"The model {model.filename or 'model'!r} is larger than this server accepts for an agent "
            f"({cap} bytes; PALAESTRA_MAX_AGENT_BYTES). Export a smaller network.",
            "model",
        )
    descriptor = form.get("descriptor")
    if isinstance(descriptor, UploadFile):
        text = await descriptor.read(protocol.MAX_TEXT_LENGTH + 1)
    elif isinstance(descriptor, str):
        text = descriptor.encode()
    else:
        raise Problem(
            400,
            "The form has no 'descriptor': send the agent's JSON descriptor (what `palaestra agent pack` "
            "writes beside the .onnx file) as the multipart field 'descriptor'.",
            "descriptor",
        )
    return data, text


def _queue(
    state: ServerState,
    request: Request,
    principal: Principal,
    model: bytes,
    descriptor: bytes,
    fields: dict[str, Any],
) -> Response:
    texts = {name: value for name, value in fields.items() if isinstance(value, str)}
    upload = _Upload(model_sha256=sha256_of(model), descriptor_sha256=sha256_of(descriptor), fields=texts)
    idempotency = Idempotency.of(request, principal, upload)
    if (stored := idempotency.stored_answer(state.db)) is not None:
        return stored  # a retried upload: its job, not a second one
    _check_rate(state, principal)
    episodes = _episodes(fields.get("episodes"))
    algorithm = _text(fields.get("algorithm"), "algorithm")
    writeup = _text(fields.get("writeup"), "writeup")
    if writeup is not None:
        try:
            writeup = protocol.check_writeup(writeup)
        except ValueError as e:
            raise Problem(400, str(e), "writeup") from None
    checked = _check_artifact(state, model, descriptor)
    games = match_games(state.config, checked["env_id"])
    if games is not None:  # a Go or Hex agent plays the anchors: its "episodes" are those games
        episodes = games
    key, digest = agent_jobs.store_artifact(state, model)
    base = base_url(state, request)

    def create(session: Session) -> tuple[int, AgentJobObject]:
        job = agent_jobs.add_job(
            session, state, principal, artifact=(key, digest, len(model)), descriptor=checked["descriptor"],
            env_id=checked["env_id"], episodes=episodes, algorithm_ref=algorithm, writeup=writeup,
        )  # fmt: skip
        return 202, agent_jobs.job_object(job, principal.user_name, base)

    return idempotency.create(state.db, create)


def _check_rate(state: ServerState, principal: Principal) -> None:
    limit = state.config.agents_per_hour
    if limit > 0 and agent_jobs.recent_jobs(state, principal.user_seq, UPLOAD_WINDOW_S) >= limit:
        raise too_many(
            f"Too many agents: this server evaluates {limit} agents per user and hour, and you uploaded "
            f"{limit} in the last hour. Try again later, or ask the operator to raise "
            "PALAESTRA_RATE_LIMIT_AGENTS_PER_HOUR.",
            UPLOAD_WINDOW_S / max(limit, 1),
        )


def _episodes(value: Any) -> int:
    if value is None or value == "":
        return DEFAULT_EPISODES
    if not isinstance(value, str) or not value.strip().isdigit() or not 1 <= int(value) <= MAX_EPISODES:
        raise Problem(
            400, f"episodes must be a whole number from 1 to {MAX_EPISODES}, not {value!r}.", "episodes"
        )
    return int(value)


def _text(value: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > protocol.MAX_ID_LENGTH:
        raise Problem(400, f"{name} must be text of at most {protocol.MAX_ID_LENGTH} characters.", name)
    return value


def _check_artifact(state: ServerState, model: bytes, descriptor: bytes) -> dict[str, Any]:
    """The artifact checked as hostile (:func:`palaestra.agents.artifact.check_artifact_bytes`): its
    descriptor (as a JSON object) and env id; a refusal is one 400 naming the problem and the fix."""
    from palaestra.agents.artifact import (
        AgentDescriptor,
        ArtifactError,
        DescriptorError,
        check_artifact_bytes,
    )

    try:
        checked = AgentDescriptor.from_json(descriptor)
    except DescriptorError as e:
        raise Problem(400, f"The agent's descriptor was refused: {e}.", "descriptor") from None
    try:
        check_artifact_bytes(model, checked, max_bytes=state.config.max_agent_bytes)
    except ArtifactError as e:
        raise Problem(400, f"The agent's model was refused: {e}.", "model") from None
    return {"descriptor": json.loads(checked.to_json()), "env_id": checked.env_id}


@router.get("/{job_id}", response_model=AgentJobObject)
def get_agent_job(job_id: str, request: Request, state: State) -> Response:
    """An agent's evaluation job: status, the episodes so far, the failure's reason and log."""
    with state.db.read() as session:
        job, owner = agent_jobs.load_job(session, job_id)
        matches = agent_jobs.job_matches(session, job_id)
    return answer(agent_jobs.job_object(job, owner, base_url(state, request), matches))
