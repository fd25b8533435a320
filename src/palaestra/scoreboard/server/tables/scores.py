"""The scores' tables: SQLAlchemy 2 models of what the board ranks.

Tables (created by the Alembic migrations in ``migrations/``, never by ``create_all`` in production;
the others are in :mod:`.accounts`, :mod:`.service`, :mod:`.ladders` and
:mod:`.live`, on :mod:`.base`'s ``Base``; the engine and sessions are :mod:`..core.database`):

- ``algorithms``, ``benchmark_runs``
- ``evaluations``: one upload, with what ingest derived from its episodes once (the "solved"
  statistics of spec §4.6 as columns, the page's curve series as ``curves`` JSON, a benchmark
  evaluation's TaskScores; ``graph_stats`` is only kept for rows stored before 0009) and its videos
- ``envs``: one row per env id ever uploaded, with aggregates (evaluation count, best mean) kept
  current in the same transaction that adds an evaluation (:func:`upsert_env_stats`), and derived
  again from the evaluations after a rescore (:func:`refresh_env_scores`)

Every public object has a string ``id`` (``eval_...``) and an integer ``seq`` primary key that gives
the newest-first order of list pages.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, Session, mapped_column

from palaestra.scoreboard.server.core.database import execute_at_commit
from palaestra.scoreboard.server.tables.base import Base, UTCDateTime, utcnow

__all__ = ["Algorithm", "BenchmarkRun", "EnvStats", "Evaluation", "refresh_env_scores", "upsert_env_stats"]


class Algorithm(Base):
    __tablename__ = "algorithms"
    __table_args__ = (sa.UniqueConstraint("user_seq", "name", name="uq_algorithms_user_name"),)

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # alg_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), index=True)
    name: Mapped[str] = mapped_column(sa.String(200))
    description: Mapped[str | None] = mapped_column(sa.Text, default=None)
    writeup: Mapped[str | None] = mapped_column(sa.Text, default=None)
    created: Mapped[datetime] = mapped_column(default=utcnow)


class BenchmarkRun(Base):
    __tablename__ = "benchmark_runs"

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # brun_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), index=True)
    benchmark_id: Mapped[str] = mapped_column(sa.String(200), index=True)
    algorithm_seq: Mapped[int | None] = mapped_column(sa.ForeignKey("algorithms.seq"), default=None)
    tags: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: open -> committed
    status: Mapped[str] = mapped_column(sa.String(20), default="open")
    #: ``benchmark_aggregate_score`` output, when palaestra.benchmarks knows the benchmark
    score: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    #: the aggregate score as a number, for ordering leaderboards
    score_value: Mapped[float | None] = mapped_column(sa.Float, default=None)
    #: how many evaluations ``score`` was computed from (a later, larger count wins a race)
    score_evaluations: Mapped[int | None] = mapped_column(default=None)
    #: the bootstrap intervals and performance profile of ``score``'s trial scores, computed after the
    #: upload that changed them (``benchmarking.compute_statistics``); NULL: not computed yet. Kept
    #: apart from ``score`` (which the score log hashes): derived from it, recomputable at any time.
    statistics: Mapped[dict[str, Any] | None] = mapped_column(default=None, deferred=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    committed: Mapped[datetime | None] = mapped_column(default=None)


def _nulls_last_indexes(name: str, *columns: str) -> tuple[sa.Index, sa.Index]:
    """The index ``name`` on ``columns`` as written for PostgreSQL, and without their ``NULLS LAST``
    for SQLite."""

    def column(text: str, postgresql: bool) -> Any:
        if " " not in text:
            return text
        return sa.text(text if postgresql else text.replace(" NULLS LAST", ""))

    return (
        sa.Index(name, *(column(c, True) for c in columns)).ddl_if(dialect="postgresql"),
        sa.Index(name, *(column(c, False) for c in columns)).ddl_if(dialect="sqlite"),
    )


class Evaluation(Base):
    __tablename__ = "evaluations"
    __table_args__ = (
        sa.Index("ix_evaluations_env_seq", "env_id", "seq"),
        # The leaderboard's default order (solved first, fewest episodes before solve, best mean, the mean
        # of a short run's episodes where it has no 100-episode mean: ``ranking_mean``) and the
        # "best mean" order, so that any page of an env's leaderboard is an index range scan
        # (bench/web_pages.py: p95 under 100 ms with 10,000 evaluations).
        # NULLs last, as the orders rank them: PostgreSQL's DESC is NULLS FIRST, SQLite's already
        # last (it takes no NULLS clause in an index), so each database gets its own (migration 0011)
        *_nulls_last_indexes(
            "ix_evaluations_env_leaderboard",
            "env_id",
            "solved DESC",
            "episode_t_value",
            "ranking_mean DESC NULLS LAST",
            "seq",
        ),
        *_nulls_last_indexes("ix_evaluations_env_mean", "env_id", "mean DESC NULLS LAST", "seq"),
        sa.Index("ix_evaluations_user_seq", "user_seq", "seq"),
        sa.Index("ix_evaluations_algorithm_seq", "algorithm_seq", "seq"),
        sa.Index("ix_evaluations_benchmark_run", "benchmark_run_seq"),
        sa.Index("ix_evaluations_env_conditions", "env_id", "conditions_key", "seq"),
        # an env page in algorithm order counts its rows per algorithm, then reads them, along this
        sa.Index("ix_evaluations_env_algorithm", "env_id", "algorithm_seq", "seq"),
        # an env's verified entries, ranked apart (``?verified=1``, migration 0015)
        sa.Index("ix_evaluations_env_verified", "env_id", "verified", "seq"),
        sa.Index("ux_evaluations_agent_job_id", "agent_job_id", unique=True),
    )

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # eval_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"))
    env_id: Mapped[str | None] = mapped_column(sa.String(200))
    #: the env id is in palaestra's catalogue (unknown ids are accepted and unlisted)
    env_listed: Mapped[bool] = mapped_column(default=False)
    algorithm_seq: Mapped[int | None] = mapped_column(sa.ForeignKey("algorithms.seq"), default=None)
    benchmark_run_seq: Mapped[int | None] = mapped_column(sa.ForeignKey("benchmark_runs.seq"), default=None)
    writeup: Mapped[str | None] = mapped_column(sa.Text, default=None)
    gym_version: Mapped[str | None] = mapped_column(sa.String(100), default=None)
    training_episode_batch: Mapped[str | None] = mapped_column(sa.String(40), default=None)  # file id
    training_video: Mapped[str | None] = mapped_column(sa.String(40), default=None)  # file id
    #: blob key of the enriched episode batch (uploaded keys + env_id + initial_reset_timestamp)
    episode_batch_key: Mapped[str | None] = mapped_column(sa.String(300), default=None)
    #: sha256 hex of that blob, checked whenever it is read (NULL: stored before hashes were recorded)
    episode_batch_sha256: Mapped[str | None] = mapped_column(sa.String(64), default=None)
    # -- "solved" statistics (palaestra.solved_stats.SolvedStats) and what they were scored against --
    trials: Mapped[int] = mapped_column(default=100)
    reward_threshold: Mapped[float | None] = mapped_column(sa.Float, default=None)
    solved: Mapped[bool] = mapped_column(default=False)
    episode_t_value: Mapped[int | None] = mapped_column(default=None)
    timestep_t_value: Mapped[int | None] = mapped_column(sa.BigInteger, default=None)
    mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    error: Mapped[float | None] = mapped_column(sa.Float, default=None)
    number_episodes: Mapped[int] = mapped_column(default=0)
    number_timesteps: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    seconds_to_solve: Mapped[float | None] = mapped_column(sa.Float, default=None)
    seconds_in_total: Mapped[float | None] = mapped_column(sa.Float, default=None)
    episodes_mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    evaluation_episodes: Mapped[int] = mapped_column(default=0, server_default="0")
    evaluation_mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    #: what the unsolved evaluations of a leaderboard are ordered by (``solved_stats.ranking_mean``)
    ranking_mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    #: the 2017 binned series (``solved_stats.compute_graph_stats``) of evaluations ingested before
    #: 0009_derived_evaluations; NULL since: the pages draw ``curves`` (kept for the score log's hashes)
    graph_stats: Mapped[dict[str, Any] | None] = mapped_column(default=None, deferred=True)
    #: the benchmark's per-evaluation TaskScores (``score_evaluation``), when linked to a known benchmark:
    #: what the run's aggregate is computed from (``benchmarking.score_run``)
    benchmark_score: Mapped[dict[str, Any] | None] = mapped_column(default=None, deferred=True)
    #: the page's learning-curve series (``evaluation_scoring.curves_of``), derived at ingest; ``{}``:
    #: no training episodes; NULL: not derived (its batch was missing when 0009_derived_evaluations ran)
    curves: Mapped[dict[str, Any] | None] = mapped_column(default=None, deferred=True)
    #: [{name, metadata_name, episode_id, content_type, size, key, metadata_key}, ...]
    videos: Mapped[list[Any]] = mapped_column(default=list)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    #: what ran, as uploaded (provenance_wire.Provenance), and the conditions card derived from it
    #: (server/conditions.py); ``conditions_key`` NULL: not recorded (a 2017 upload)
    provenance: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    conditions: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    conditions_key: Mapped[str | None] = mapped_column(sa.String(16), default=None)
    #: the board ran this evaluation itself (an uploaded agent, :mod:`..agents.jobs`): its episodes are
    #: the board's, not the uploader's; ``verification`` says how (seeds, artifact sha256, evaluator)
    #: and ``agent_job_id`` which job it was, once: unique, so a job is never stored twice
    verified: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    verification: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    agent_job_id: Mapped[str | None] = mapped_column(sa.String(40), default=None)


class EnvStats(Base):
    """Per-env aggregates for the home page and leaderboards, updated with every new evaluation."""

    __tablename__ = "envs"
    __table_args__ = (sa.Index("ix_envs_group", "group_id", "env_id"),)

    env_id: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    group_id: Mapped[str | None] = mapped_column(sa.String(50), default=None)
    listed: Mapped[bool] = mapped_column(default=False)
    evaluation_count: Mapped[int] = mapped_column(default=0)
    solved_count: Mapped[int] = mapped_column(default=0)
    best_mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    best_evaluation_id: Mapped[str | None] = mapped_column(sa.String(40), default=None)
    last_evaluation: Mapped[datetime | None] = mapped_column(default=None)


_UPSERTS: dict[str, Any] = {}


def _env_upsert(dialect: str) -> Any:
    """``INSERT ... ON CONFLICT DO UPDATE`` adding one evaluation to ``envs`` (built once per dialect)."""
    if dialect not in _UPSERTS:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
        table: Any = EnvStats.__table__
        stmt = insert(table).values(
            env_id=sa.bindparam("env_id"),
            group_id=sa.bindparam("group_id"),
            listed=sa.bindparam("listed"),
            evaluation_count=1,
            solved_count=sa.bindparam("solved_count"),
            best_mean=sa.bindparam("best_mean", type_=sa.Float()),
            best_evaluation_id=sa.bindparam("best_evaluation_id", type_=sa.String()),
            last_evaluation=sa.bindparam("last_evaluation", type_=UTCDateTime()),
        )
        current, new = table.c, stmt.excluded
        better = sa.and_(
            new.best_mean.is_not(None), sa.or_(current.best_mean.is_(None), new.best_mean > current.best_mean)
        )
        _UPSERTS[dialect] = stmt.on_conflict_do_update(
            index_elements=[current.env_id],
            set_={
                "group_id": new.group_id,
                "listed": new.listed,
                "evaluation_count": current.evaluation_count + 1,
                "solved_count": current.solved_count + new.solved_count,
                "best_mean": sa.case((better, new.best_mean), else_=current.best_mean),
                "best_evaluation_id": sa.case(
                    (better, new.best_evaluation_id), else_=current.best_evaluation_id
                ),
                "last_evaluation": new.last_evaluation,
            },
        )
    return _UPSERTS[dialect]


def upsert_env_stats(
    session: Session,
    env_id: str,
    group_id: str | None,
    listed: bool,
    mean: float | None,
    solved: bool,
    evaluation_id: str,
    created: datetime,
) -> None:
    """Add one evaluation to the env's aggregates, atomically (INSERT ... ON CONFLICT DO UPDATE),
    last in the transaction and with its COMMIT (:func:`execute_at_commit`): every evaluation of the
    env updates this one row."""
    execute_at_commit(
        session,
        _env_upsert(session.connection().dialect.name),
        {
            "env_id": env_id,
            "group_id": group_id,
            "listed": listed,
            "solved_count": int(solved),
            "best_mean": mean,
            "best_evaluation_id": evaluation_id if mean is not None else None,
            "last_evaluation": created,
        },
    )


def refresh_env_scores(session: Session) -> None:
    """Derive every env's solved count and best mean again from its evaluations (after a rescore
    changed their scores; the counts of evaluations and the newest one stay). The best is the first
    stored of the highest means, as the upserts keep it."""
    solved = sa.func.sum(sa.case((Evaluation.solved.is_(True), 1), else_=0))
    counts = {env_id: n for env_id, n in session.execute(sa.select(Evaluation.env_id, solved).group_by(Evaluation.env_id))}
    for env in session.scalars(sa.select(EnvStats)):
        best = session.execute(
            sa.select(Evaluation.mean, Evaluation.id)
            .where(Evaluation.env_id == env.env_id, Evaluation.mean.is_not(None))
            .order_by(Evaluation.mean.desc(), Evaluation.seq.asc())
            .limit(1)
        ).first()
        env.solved_count = int(counts.get(env.env_id) or 0)
        env.best_mean, env.best_evaluation_id = (best.mean, best.id) if best is not None else (None, None)
