"""The benchmark-run scoring hook: palaestra.benchmarks' scoring, applied to uploaded evaluations.

Benchmark runs are accepted for any ``benchmark_id`` (the 2017 client checks ids locally). When an
evaluation linked to a run arrives, its TaskScores are derived once (:func:`score_evaluation`) and
stored with it; then, and when the run is committed, and :mod:`palaestra.benchmarks` knows the id,
the run's aggregate (:func:`palaestra.benchmarks.runs.aggregate_benchmark_run`: the 2017 aggregate
plus per-task scores) is recomputed from those stored TaskScores, never from the episode batches, so
the n-th upload into a run costs what the first did. Its 50,000-replicate bootstrap
(:func:`compute_statistics`) runs once per score: for an open run after the response of the first
view that asks for it (:func:`run_statistics_of`), for a committed one in its commit (so that its
page, its answer and an export of the board are whole at once); it is kept in
``benchmark_runs.statistics`` until the next upload.
Everything here is best effort: an unknown benchmark or a scoring failure leaves the score empty and
is logged, never failing the upload.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import sqlalchemy as sa

from palaestra.benchmarks import Benchmark, registry
from palaestra.benchmarks.runs import aggregate_benchmark_run, run_statistics
from palaestra.benchmarks.scoring import TaskScores
from palaestra.episodes import Episodes
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.evaluations import scorelog
from palaestra.scoreboard.server.tables.scores import BenchmarkRun, Evaluation

logger = logging.getLogger("palaestra.scoreboard.benchmarks")


def benchmark_spec_or_none(benchmark_id: str) -> Benchmark | None:
    """The registered benchmark ``benchmark_id``, or ``None``."""
    return registry.benchmarks.get(benchmark_id)


def jsonable(value: Any) -> Any:
    """Numpy arrays and scalars, dataclasses, tuples and non-finite floats, as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy array or scalar
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def score_run(db: Database, run_id: str) -> dict[str, Any] | None:
    """Recompute and store benchmark run ``run_id``'s aggregate score from its evaluations' stored
    TaskScores (no episode batch is read); returns it (or ``None``). Its bootstrap statistics are
    left to :func:`compute_statistics` (after the response, or when the run is first viewed)."""
    with db.read() as session:
        run = session.scalar(sa.select(BenchmarkRun).where(BenchmarkRun.id == run_id))
        if run is None:
            return None
        evaluations = session.execute(
            sa.select(Evaluation.id, Evaluation.env_id, Evaluation.benchmark_score)
            .where(Evaluation.benchmark_run_seq == run.seq)
            .order_by(Evaluation.seq)
        ).all()
    benchmark = benchmark_spec_or_none(run.benchmark_id)
    if benchmark is None:
        return None
    scored = [(env_id, task_scores(stored)) for _, env_id, stored in evaluations if env_id in benchmark.env_ids]
    unscored = [i for i, env_id, stored in evaluations if env_id in benchmark.env_ids and stored is None]
    if unscored:  # a scoring failure at ingest (logged then); `palaestra server rescore` retries it
        logger.warning("Benchmark run %s: evaluations %s have no TaskScores; left out", run_id, unscored)
    try:
        score = jsonable(aggregate_benchmark_run(benchmark, [(e, s) for e, s in scored if s is not None]))
    except Exception:
        logger.exception("Could not score benchmark run %s (%s)", run_id, run.benchmark_id)
        return None
    value = score.get("score")
    count = len(evaluations)
    with db.write() as session:
        session.execute(
            sa.update(BenchmarkRun)
            .where(
                BenchmarkRun.id == run_id,
                sa.or_(BenchmarkRun.score_evaluations.is_(None), BenchmarkRun.score_evaluations <= count),
            )
            .values(
                score=score,
                score_value=value if isinstance(value, int | float) else None,
                score_evaluations=count,
                statistics=None,  # of the trial scores before this one: computed again
            )
        )
        scorelog.append_run(session, run_id)  # once the run is committed: its final score
    return score


def task_scores(stored: Mapping[str, Any] | None) -> TaskScores | None:
    """An evaluation's TaskScores as :func:`score_evaluation` stored them (JSON), with the arrays the
    aggregate reads; ``None`` for none stored."""
    if not isinstance(stored, Mapping) or "scores" not in stored:
        return None
    return TaskScores(
        rewards=[np.asarray(r, dtype=float) for r in stored.get("rewards") or []],
        lengths=[np.asarray(length, dtype=np.int64) for length in stored.get("lengths") or []],
        scores=[math.nan if s is None else float(s) for s in stored["scores"]],
        solves=[np.asarray(s, dtype=bool) for s in stored.get("solves") or []],
        timestamps=[float(t) for t in stored.get("timestamps") or []],
        elapsed_times=[float(t) for t in stored.get("elapsed_times") or []],
        initial_reset_timestamp=float(stored.get("initial_reset_timestamp") or 0.0),
    )


def compute_statistics(db: Database, run_id: str) -> dict[str, Any] | None:
    """Bootstrap run ``run_id``'s stored score (50,000 replicates: seconds for a large run) and keep
    the result with it, unless another upload changed the score meanwhile; returns it."""
    with db.read() as session:
        row = session.execute(
            sa.select(BenchmarkRun.benchmark_id, BenchmarkRun.score, BenchmarkRun.score_evaluations).where(
                BenchmarkRun.id == run_id
            )
        ).first()
    benchmark = benchmark_spec_or_none(row.benchmark_id) if row is not None else None
    if row is None or benchmark is None or not isinstance(row.score, dict) or "tasks" not in row.score:
        return None
    try:
        statistics = jsonable(run_statistics(benchmark, row.score))
    except Exception:
        logger.exception("Could not bootstrap benchmark run %s (%s)", run_id, row.benchmark_id)
        return None
    with db.write() as session:
        session.execute(
            sa.update(BenchmarkRun)
            .where(BenchmarkRun.id == run_id, BenchmarkRun.score_evaluations == row.score_evaluations)
            .values(statistics=statistics)
        )
    return statistics


def run_statistics_of(
    state: ServerState, run_id: str, score: Mapping[str, Any] | None, statistics: Mapping[str, Any] | None
) -> tuple[dict[str, Any], bool]:
    """What a view shows of run ``run_id``'s statistics: the stored score's (``num_runs``, ``reps``,
    ``seed``, ``normalisation``; a score stored before 0009_derived_evaluations also holds its
    intervals) with the kept bootstrap, and whether that bootstrap is still being computed; a view
    that finds none queues it (:func:`compute_statistics`, after the response)."""
    stored = dict(score.get("statistics") or {}) if isinstance(score, Mapping) else {}
    if statistics is not None or "iqm" in stored or not isinstance(score, Mapping) or not score.get("tasks"):
        return {**stored, **(statistics or {})}, False
    benchmark = benchmark_spec_or_none(str(score.get("benchmark_id")))
    if state.config.read_only and benchmark is not None:  # a frozen board keeps nothing: for this view
        return {**stored, **jsonable(run_statistics(benchmark, score))}, False
    bootstrap(state, run_id)
    return stored, True


def bootstrap(state: ServerState, run_id: str) -> None:
    """Queue :func:`compute_statistics` of ``run_id`` to run after the response (once at a time)."""
    state.jobs.submit(f"bootstrap:{run_id}", lambda: compute_statistics(state.db, run_id))


def score_evaluation(benchmark_id: str, env_id: str | None, episodes: Episodes) -> dict[str, Any] | None:
    """The benchmark's per-evaluation score (its :class:`~palaestra.benchmarks.scoring.TaskScores`)
    of one upload's episodes, or ``None``."""
    benchmark = benchmark_spec_or_none(benchmark_id)
    if benchmark is None or not env_id or env_id not in benchmark.env_ids:
        return None
    try:
        result = jsonable(benchmark.score_episodes(env_id, episodes))
    except Exception:
        logger.exception("Could not score an evaluation of %s for benchmark %s", env_id, benchmark_id)
        return None
    return result if isinstance(result, dict) else {"result": result}
