"""The benchmark-run scoring hook: palaestra.benchmarks' scoring, applied to uploaded evaluations.

Benchmark runs are accepted for any ``benchmark_id`` (the 2017 client checks ids locally). When an
evaluation linked to a run arrives, or the run is committed, and :mod:`palaestra.benchmarks` knows
the id, the run's score (:func:`palaestra.benchmarks.runs.score_benchmark_run`: the 2017 aggregate
plus per-task scores and interval statistics) is recomputed from every evaluation of the run and
stored. Everything here is best effort: an unknown benchmark or a scoring failure leaves the score
empty and is logged, never failing the upload.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from palaestra.benchmarks import Benchmark, registry
from palaestra.benchmarks.runs import score_benchmark_run
from palaestra.scoreboard.server.archive import scorelog
from palaestra.scoreboard.server.db import BenchmarkRun, Evaluation
from palaestra.scoreboard.server.ingest import stored_batch_document
from palaestra.scoreboard.server.state import ServerState

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


def score_run(state: ServerState, run_id: str) -> dict[str, Any] | None:
    """Recompute and store benchmark run ``run_id``'s aggregate score; returns it (or ``None``)."""
    with state.db.read() as session:
        run = session.scalar(sa.select(BenchmarkRun).where(BenchmarkRun.id == run_id))
        if run is None:
            return None
        evaluations = session.execute(
            sa.select(Evaluation.env_id, Evaluation.episode_batch_key, Evaluation.episode_batch_sha256)
            .where(Evaluation.benchmark_run_seq == run.seq)
            .order_by(Evaluation.seq)
        ).all()
    benchmark = benchmark_spec_or_none(run.benchmark_id)
    if benchmark is None:
        return None
    try:
        docs = [
            (env_id, stored_batch_document(state.store.get_verified(key, sha256), env_id))
            for env_id, key, sha256 in evaluations
            if env_id and key and env_id in benchmark.env_ids
        ]
        score = jsonable(score_benchmark_run(benchmark, docs))
    except Exception:
        logger.exception("Could not score benchmark run %s (%s)", run_id, run.benchmark_id)
        return None
    value = score.get("score") if isinstance(score, dict) else None
    count = len(evaluations)
    with state.db.write() as session:
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
            )
        )
        scorelog.append_run(session, run_id)  # once the run is committed: its final score
    return score if isinstance(score, dict) else {"score": score}


def score_evaluation(
    benchmark_id: str, env_id: str | None, batch_doc: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The benchmark's per-evaluation score (``score_evaluation``) of one upload, or ``None``."""
    benchmark = benchmark_spec_or_none(benchmark_id)
    if benchmark is None or not env_id or env_id not in benchmark.env_ids:
        return None
    try:
        result = jsonable(benchmark.score_results(env_id, batch_doc))
    except Exception:
        logger.exception("Could not score an evaluation of %s for benchmark %s", env_id, benchmark_id)
        return None
    return result if isinstance(result, dict) else {"result": result}
