"""``/v1/algorithms``: a user's algorithms (a name is unique per user). An evaluation or benchmark run
that names an algorithm by an id or name the user does not have creates one of that name (2017)."""

from __future__ import annotations

from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.api.common import answer, base_url, filtered, not_found, page
from palaestra.scoreboard.server.api.deps import CurrentUser, ListQuery, State, json_body
from palaestra.scoreboard.server.api.idempotency import Idempotency
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.evaluations.records import AlgorithmRecord
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.base import from_row
from palaestra.scoreboard.server.tables.scores import Algorithm

__all__ = ["find_algorithm", "resolve_algorithm", "router"]

router = APIRouter(prefix="/algorithms", tags=["algorithms"])

_ALGORITHMS = Algorithm.__table__
_ALGORITHM_BY_ID_OR_NAME = (
    sa.select(_ALGORITHMS)
    .where(
        _ALGORITHMS.c.user_seq == sa.bindparam("user_seq"),
        sa.or_(_ALGORITHMS.c.id == sa.bindparam("ref"), _ALGORITHMS.c.name == sa.bindparam("ref")),
    )
    .order_by((_ALGORITHMS.c.id == sa.bindparam("ref")).desc())
    .limit(1)
)
#: Found algorithms kept per state (an upload names the same algorithm again and again); algorithms
#: are never renamed or deleted, so one found stays right.
CACHE_SIZE = 10_000


def find_algorithm(
    state: ServerState, conn: sa.Connection, principal: Principal, ref: str
) -> Algorithm | None:
    """The caller's algorithm with id ``ref``, else named ``ref``, else None."""
    cache = state.known_algorithms
    known = cache.get((principal.user_seq, ref))
    if known is not None:
        return known
    row = conn.execute(_ALGORITHM_BY_ID_OR_NAME, {"user_seq": principal.user_seq, "ref": ref}).first()
    if row is None:
        return None
    if len(cache) > CACHE_SIZE:
        cache.clear()
    found = cache[(principal.user_seq, ref)] = from_row(Algorithm, row)
    return found


def resolve_algorithm(
    state: ServerState, session: Session, principal: Principal, ref: str | None
) -> Algorithm | None:
    """An algorithm of the caller by id, else by name, else a new one named ``ref`` (2017 semantics)."""
    if not ref:
        return None
    found = find_algorithm(state, session.connection(), principal, ref)
    if found is not None:
        return found
    alg = Algorithm(id=new_id("algorithm"), user_seq=principal.user_seq, name=ref)
    session.add(alg)
    session.flush()
    return alg


@router.post("", status_code=201, response_model=protocol.AlgorithmObject)
def create_algorithm(
    body: Annotated[protocol.AlgorithmCreate, json_body(protocol.AlgorithmCreate)],
    request: Request,
    principal: CurrentUser,
    state: State,
) -> Response:
    """Create an algorithm (its name is unique per user)."""
    base = base_url(state, request)

    def create(session: Session) -> tuple[int, protocol.AlgorithmObject]:
        existing = session.scalar(
            sa.select(Algorithm).where(Algorithm.name == body.name, Algorithm.user_seq == principal.user_seq)
        )
        if existing is not None:
            raise Problem(409, f"You already have an algorithm named {body.name!r} ({existing.id}).", "name")
        alg = Algorithm(
            id=new_id("algorithm"),
            user_seq=principal.user_seq,
            name=body.name,
            description=body.description,
            writeup=body.writeup,
        )
        session.add(alg)
        session.flush()
        return 201, AlgorithmRecord.of(alg, principal.user_name).to_object(base)

    return Idempotency.of(request, principal, body).answer(state.db, create)


def _with_owner() -> Any:
    return sa.select(Algorithm, User.name).join(User, User.seq == Algorithm.user_seq)


@router.get("/{algorithm_id}", response_model=protocol.AlgorithmObject)
def get_algorithm(algorithm_id: str, request: Request, state: State) -> Response:
    with state.db.read() as session:
        row = session.execute(_with_owner().where(Algorithm.id == algorithm_id)).first()
    if row is None:
        raise not_found("algorithm", algorithm_id)
    return answer(AlgorithmRecord.of(row[0], row[1]).to_object(base_url(state, request)))


@router.get("", response_model=protocol.ListPage[protocol.AlgorithmObject])
def list_algorithms(request: Request, state: State, asked: ListQuery) -> Response:
    """Algorithms, newest first (filter: ``owner``)."""
    base = base_url(state, request)
    query = filtered(_with_owner(), asked.filters, {"owner": User.name})
    with state.db.read() as session:
        body = page(
            session,
            Algorithm,
            query,
            asked,
            f"{protocol.API_PREFIX}/algorithms",
            lambda r: AlgorithmRecord.of(r[0], r[1]).to_object(base),
            protocol.AlgorithmObject,
        )
    return answer(body)
