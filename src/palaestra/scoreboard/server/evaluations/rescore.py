"""Deriving stored evaluations again from their episode batches: ``palaestra server rescore`` and the
curves of migration 0009_derived_evaluations.

- :func:`derive_missing_curves`: the page's curve series of every evaluation stored without one
  (what 0009 runs; an evaluation whose batch is missing keeps NULL, and its page says so);
- :func:`rescore`: every evaluation's score columns, curves and benchmark TaskScores derived again by
  :func:`.derive.derive_evaluation` (after a change to scoring), then every benchmark
  run's aggregate from those TaskScores, and its bootstrap; then the envs' and the indexes' kept
  counts, and a new generation of derived values, so that running servers compute their kept page
  values again (web/page_cache.py).

Each batch is read once, its sha256 checked, and trusted as validated at upload
(:func:`.ingest.read_validated_batch`). The score log hashed each evaluation's scores at upload: one
that rescore changes no longer matches its entry, and the report names it, as ``palaestra server
verify`` will.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from palaestra.episodes import Episodes
from palaestra.scoreboard.protocol import EpisodeBatch
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.storage import BlobDamaged, BlobStore
from palaestra.scoreboard.server.evaluations import benchmarking, index_stats
from palaestra.scoreboard.server.evaluations.coverage import CURRENT_VERSION
from palaestra.scoreboard.server.evaluations.derive import curves_of, derive_evaluation
from palaestra.scoreboard.server.evaluations.ingest import IngestError, read_validated_batch
from palaestra.scoreboard.server.evaluations.scorelog import record_document
from palaestra.scoreboard.server.tables.base import JSONType
from palaestra.scoreboard.server.tables.scores import BenchmarkRun, Evaluation, refresh_env_scores
from palaestra.scoreboard.server.tables.service import next_derived_generation

__all__ = ["RescoreReport", "derive_missing_curves", "rescore"]

logger = logging.getLogger("palaestra.scoreboard.rescore")

#: Evaluations read per query (each one's batch is read and derived before the next page)
PAGE = 200

# the columns 0009 knows, not the model's (which later migrations may change): the migration runs this
_evaluations = sa.table(
    "evaluations",
    sa.column("seq", sa.Integer),
    sa.column("id", sa.String),
    sa.column("env_id", sa.String),
    sa.column("episode_batch_key", sa.String),
    sa.column("episode_batch_sha256", sa.String),
    sa.column("trials", sa.Integer),
    sa.column("reward_threshold", sa.Float),
    sa.column("curves", JSONType),
)


@dataclass
class RescoreReport:
    evaluations: int = 0
    #: evaluations whose score columns or TaskScores changed (the score log hashed the old ones)
    changed: list[str] = field(default_factory=list)
    #: evaluations whose batch is missing or damaged: left as they were
    unreadable: list[str] = field(default_factory=list)
    runs: int = 0

    def summary(self) -> str:
        lines = [
            f"Derived {self.evaluations - len(self.unreadable)} of {self.evaluations} evaluations again "
            f"and scored {self.runs} benchmark runs from their TaskScores"
        ]
        if self.unreadable:
            lines.append(f"{len(self.unreadable)} left as they were, their episode batch unreadable: "
                         + ", ".join(self.unreadable[:10]) + (" ..." if len(self.unreadable) > 10 else ""))
        if self.changed:
            lines.append(f"{len(self.changed)} evaluations' scores changed ({', '.join(self.changed[:10])}"
                         f"{' ...' if len(self.changed) > 10 else ''}): the score log hashed their old "
                         "scores, and `palaestra server verify` names them")
        return "\n".join(lines)


def _read_batch(store: BlobStore, evaluation_id: str, key: str, sha256: str | None) -> EpisodeBatch | None:
    try:
        return read_validated_batch(store.get_verified(key, sha256))
    except (LookupError, BlobDamaged, IngestError) as e:
        logger.warning("The episode batch of %s (%s) cannot be read: %s", evaluation_id, key, e)
        return None


def derive_missing_curves(conn: sa.Connection, store: BlobStore) -> tuple[int, int]:
    """Store the curve series of every evaluation that has a batch and none; ``(derived, missing)``."""
    derived = missing = 0
    after = 0
    while True:
        rows = conn.execute(
            sa.select(_evaluations)
            .where(_evaluations.c.seq > after, _evaluations.c.curves.is_(None))
            .where(_evaluations.c.episode_batch_key.is_not(None))
            .order_by(_evaluations.c.seq)
            .limit(PAGE)
        ).all()
        for row in rows:
            batch = _read_batch(store, row.id, row.episode_batch_key, row.episode_batch_sha256)
            if batch is None:
                missing += 1
                continue
            curves = curves_of(Episodes.from_batch(batch), row.trials, row.reward_threshold)
            conn.execute(sa.update(_evaluations).where(_evaluations.c.seq == row.seq).values(curves=curves))
            derived += 1
        if len(rows) < PAGE:
            return derived, missing
        after = rows[-1].seq


def _stored(db: Database) -> Iterator[Sequence[Any]]:
    """Every evaluation's row (every column) with its run's ``benchmark_id``, a page at a time."""
    table: Any = Evaluation.__table__
    after = 0
    while True:
        with db.read() as session:
            rows = session.execute(
                sa.select(table, BenchmarkRun.benchmark_id)
                .outerjoin(BenchmarkRun, BenchmarkRun.seq == table.c.benchmark_run_seq)
                .where(table.c.seq > after)
                .order_by(table.c.seq)
                .limit(PAGE)
            ).all()
        if rows:
            yield rows
        if len(rows) < PAGE:
            return
        after = rows[-1].seq


def rescore(db: Database, store: BlobStore) -> RescoreReport:
    """Derive every stored evaluation again, then score and bootstrap every benchmark run from its
    evaluations' TaskScores."""
    report = RescoreReport()
    for rows in _stored(db):
        for row in rows:
            report.evaluations += 1
            _rescore_one(db, store, row._mapping, report)
    with db.read() as session:
        run_ids = list(session.scalars(sa.select(BenchmarkRun.id).order_by(BenchmarkRun.seq)))
    for run_id in run_ids:
        if benchmarking.score_run(db, run_id) is not None:
            benchmarking.compute_statistics(db, run_id)
            report.runs += 1
    with db.write() as session:
        # what is kept from the scores: the envs' and the indexes' counts, and every server's pages
        refresh_env_scores(session)
        index_stats.rebuild(session.connection())
        next_derived_generation(session)
    return report


def _rescore_one(db: Database, store: BlobStore, row: Mapping[str, Any], report: RescoreReport) -> None:
    key = row["episode_batch_key"]
    batch = _read_batch(store, row["id"], key, row["episode_batch_sha256"]) if key else None
    if batch is None:
        report.unreadable.append(row["id"])
        return
    scoring = derive_evaluation(batch, row["env_id"], row["gym_version"], row["benchmark_id"])
    values = {**scoring.columns(), "benchmark_score": scoring.benchmark_score}
    curves = scoring.derived_columns()["curves"]
    # what the log's entries hash (version 2 added the curves): a change is one verify will report
    if record_document("evaluation", {**row, **values, "curves": curves}, version=CURRENT_VERSION) != record_document(
        "evaluation", row, version=CURRENT_VERSION
    ):
        report.changed.append(row["id"])
    with db.write() as session:
        session.execute(sa.update(Evaluation).where(Evaluation.seq == row["seq"]).values(**values, curves=curves))
