"""``/v1/evaluations``: an evaluation is one upload of a training directory (its episode batch and
video archive), scored once, when it is created (:mod:`palaestra.scoreboard.server.evaluations.create`).

Answers render :class:`~palaestra.scoreboard.server.evaluations.records.EvaluationRecord`, as the web
pages do.
"""

from __future__ import annotations

import logging
from typing import Annotated

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.api.common import base_url, filtered, page
from palaestra.scoreboard.server.api.deps import CurrentUser, ListQuery, State, json_body
from palaestra.scoreboard.server.core.answers import answer
from palaestra.scoreboard.server.core.deps import run_blocking
from palaestra.scoreboard.server.evaluations import create
from palaestra.scoreboard.server.evaluations.records import (
    RunAlgorithm,
    evaluation_record,
    evaluation_select,
)
from palaestra.scoreboard.server.live import twins
from palaestra.scoreboard.server.problems import not_found
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, Evaluation

__all__ = ["router"]

router = APIRouter(prefix="/evaluations", tags=["evaluations"])
logger = logging.getLogger("palaestra.scoreboard.api")



# -- reading -----------------------------------------------------------------------------------------


@router.get("/{evaluation_id}", response_model=protocol.EvaluationObject)
def get_evaluation(evaluation_id: str, request: Request, state: State) -> Response:
    with state.db.read() as session:
        row = session.execute(evaluation_select().where(Evaluation.id == evaluation_id)).first()
    if row is None:
        raise not_found("evaluation", evaluation_id)
    return answer(evaluation_record(row).to_object(base_url(state, request)))


@router.get("", response_model=protocol.ListPage[protocol.EvaluationObject])
def list_evaluations(request: Request, state: State, asked: ListQuery) -> Response:
    """Evaluations, newest first (filters: ``env``, ``algorithm``, ``benchmark_run_id``, ``owner``)."""
    base = base_url(state, request)
    columns = {
        "env": Evaluation.env_id,
        # the algorithm an evaluation belongs to (records.of_algorithm's rule): its own, else its run's
        "algorithm": sa.func.coalesce(Algorithm.id, RunAlgorithm.id),
        "benchmark_run_id": BenchmarkRun.id,
        "owner": User.name,
    }
    query = filtered(evaluation_select(), asked.filters, columns)
    with state.db.read() as session:
        body = page(
            session,
            Evaluation,
            query,
            asked,
            f"{protocol.API_PREFIX}/evaluations",
            lambda r: evaluation_record(r).to_object(base),
            protocol.EvaluationObject,
        )
    return answer(body)


# -- creating ----------------------------------------------------------------------------------------


@router.post(
    "",
    status_code=201,
    response_model=protocol.EvaluationCreated,
    responses={
        200: {
            "model": protocol.EvaluationCreated,
            "description": "A repeat: these episodes were uploaded before with the same details; the "
            "evaluation made then, with already_uploaded (a repeat with other details is a 409).",
        }
    },
)
async def create_evaluation(
    body: Annotated[protocol.EvaluationCreate, json_body(protocol.EvaluationCreate)],
    request: Request,
    principal: CurrentUser,
    state: State,
) -> Response:
    """Create an evaluation from uploaded files; scored on ingest; atomic. The same episodes again make
    no second evaluation (docs/upload.md, "Uploading the same run again")."""
    return await run_blocking(
        state, create.create_evaluation, body, request, principal, state, twins.sealed_twin_answer
    )


