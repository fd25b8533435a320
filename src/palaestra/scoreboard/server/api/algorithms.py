"""``/v1/algorithms``: a user's algorithms (a name is unique per user). An evaluation or benchmark run
that names an algorithm by an id or name the user does not have creates one of that name (2017)."""

from __future__ import annotations

from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.api.common import base_url, filtered, page
from palaestra.scoreboard.server.api.deps import CurrentUser, ListQuery, State, json_body
from palaestra.scoreboard.server.core.answers import Idempotency, answer
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.evaluations.records import AlgorithmRecord
from palaestra.scoreboard.server.problems import Problem, not_found
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.scores import Algorithm

__all__ = ["router"]

router = APIRouter(prefix="/algorithms", tags=["algorithms"])


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
