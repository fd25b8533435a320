"""``/v1/benchmark_runs``: a run of a benchmark collects evaluations until it is committed, and is
scored (:mod:`palaestra.scoreboard.server.evaluations.benchmarking`) as they arrive and when it is committed; an
open run's bootstrap statistics are computed after the response that first asks for them
(``score.statistics.computing`` until then), a committed run's by its commit.
Any ``benchmark_id`` is accepted (the 2017 client checks ids itself)."""

from __future__ import annotations

from typing import Annotated, Any, cast

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.api.common import base_url, filtered, page
from palaestra.scoreboard.server.api.deps import CurrentUser, ListQuery, State, json_body
from palaestra.scoreboard.server.core.answers import Idempotency, answer
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.evaluations import benchmarking
from palaestra.scoreboard.server.evaluations.owners import own_run, resolve_algorithm
from palaestra.scoreboard.server.evaluations.records import AlgorithmRecord
from palaestra.scoreboard.server.problems import not_found
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.base import sorted_keys, utcnow
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, Evaluation

__all__ = ["router"]

router = APIRouter(prefix="/benchmark_runs", tags=["benchmark runs"])



def _runs() -> Any:
    return (
        sa.select(BenchmarkRun, Algorithm, User.name)
        .join(User, User.seq == BenchmarkRun.user_seq)
        .outerjoin(Algorithm, Algorithm.seq == BenchmarkRun.algorithm_seq)
    )


def run_object(
    session: Session,
    base: str,
    run: BenchmarkRun,
    alg: Algorithm | None,
    owner: str | None,
    state: ServerState | None = None,
) -> protocol.BenchmarkRunObject:
    """The run as ``/v1`` answers it: its score with the kept bootstrap statistics, and
    ``statistics.computing`` true while they are computed (queued now if ``state`` is given)."""
    score = run.score
    if score is not None:
        if state is not None:
            statistics, computing = benchmarking.run_statistics_of(state, run.id, score, run.statistics)
        else:
            statistics = {**(score.get("statistics") or {}), **(run.statistics or {})}
            computing = False
        score = {**score, "statistics": {**statistics, **({"computing": True} if computing else {})}}
    evaluations = session.scalars(
        sa.select(Evaluation.id).where(Evaluation.benchmark_run_seq == run.seq).order_by(Evaluation.seq)
    )
    return protocol.BenchmarkRunObject(
        id=run.id,
        benchmark_id=run.benchmark_id,
        algorithm=AlgorithmRecord.of(alg, owner).to_object(base) if alg is not None else None,
        tags=sorted_keys(run.tags or {}),
        status=cast(protocol.BenchmarkRunStatus, run.status),
        evaluations=list(evaluations),
        score=sorted_keys(score),
        owner=owner,
        created=run.created,
        committed=run.committed,
        web_url=f"{base}{protocol.benchmark_run_web_path(run.id)}",
    )


def _answer_run(state: ServerState, request: Request, run_id: str) -> Response:
    with state.db.read() as session:
        row = session.execute(_runs().where(BenchmarkRun.id == run_id)).first()
        if row is None:
            raise not_found("benchmark run", run_id)
        run, alg, owner = row
        return answer(run_object(session, base_url(state, request), run, alg, owner, state))


@router.post("", status_code=201, response_model=protocol.BenchmarkRunObject)
def create_benchmark_run(
    body: Annotated[protocol.BenchmarkRunCreate, json_body(protocol.BenchmarkRunCreate)],
    request: Request,
    principal: CurrentUser,
    state: State,
) -> Response:
    """Start a benchmark run (any ``benchmark_id``; ``tags`` as a JSON string, as the 2017 client sends)."""
    base = base_url(state, request)

    def create(session: Session) -> tuple[int, protocol.BenchmarkRunObject]:
        alg = resolve_algorithm(state, session, principal, body.algorithm_id)
        run = BenchmarkRun(
            id=new_id("benchmark_run"),
            user_seq=principal.user_seq,
            benchmark_id=body.benchmark_id,
            algorithm_seq=alg.seq if alg else None,
            tags=body.tags or {},
        )
        session.add(run)
        session.flush()
        return 201, run_object(session, base, run, alg, principal.user_name)

    return Idempotency.of(request, principal, body).answer(state.db, create)


@router.get("/{run_id}", response_model=protocol.BenchmarkRunObject)
def get_benchmark_run(run_id: str, request: Request, state: State) -> Response:
    return _answer_run(state, request, run_id)


@router.get("", response_model=protocol.ListPage[protocol.BenchmarkRunObject])
def list_benchmark_runs(request: Request, state: State, asked: ListQuery) -> Response:
    """Benchmark runs, newest first (filters: ``benchmark_id``, ``owner``, ``status``)."""
    base = base_url(state, request)
    query = filtered(
        _runs(),
        asked.filters,
        {"benchmark_id": BenchmarkRun.benchmark_id, "owner": User.name, "status": BenchmarkRun.status},
    )
    with state.db.read() as session:
        body = page(
            session,
            BenchmarkRun,
            query,
            asked,
            f"{protocol.API_PREFIX}/benchmark_runs",
            lambda r: run_object(session, base, *r),
            protocol.BenchmarkRunObject,
        )
    return answer(body)


@router.post("/{run_id}", response_model=protocol.BenchmarkRunObject)
def update_benchmark_run(
    run_id: str,
    body: Annotated[protocol.BenchmarkRunUpdate, json_body(protocol.BenchmarkRunUpdate)],
    request: Request,
    principal: CurrentUser,
    state: State,
) -> Response:
    """Change a run's algorithm or tags (the 2017 ``save()``)."""
    with state.db.write() as session:
        run = own_run(session, principal, run_id)
        if body.algorithm_id is not None:
            alg = resolve_algorithm(state, session, principal, body.algorithm_id)
            run.algorithm_seq = alg.seq if alg else None
        if body.tags is not None:
            run.tags = body.tags
    return _answer_run(state, request, run_id)


@router.post("/{run_id}/commit", response_model=protocol.BenchmarkRunObject)
def commit_benchmark_run(run_id: str, request: Request, principal: CurrentUser, state: State) -> Response:
    """Close a run to new evaluations and score it (committing twice is harmless)."""
    with state.db.write() as session:
        run = own_run(session, principal, run_id)
        if run.status != "committed":
            run.status, run.committed = "committed", utcnow()
    benchmarking.score_run(state.db, run_id)
    # the final score's intervals, once: a committed run's page, answer and export are whole at once
    benchmarking.compute_statistics(state.db, run_id)
    return _answer_run(state, request, run_id)
