"""Per-user and per-algorithm aggregates of the evaluations, kept at ingest like the per-env ones
(``envs``, :func:`~palaestra.scoreboard.server.tables.scores.upsert_env_stats`).

The users and algorithms indexes, the search box and an algorithm page read these rows instead of
grouping every evaluation per request (issue 23: 212 ms at p95 for the users index with 100,000
evaluations; one row per user or algorithm at any size now):

- ``user_stats``: a user's evaluations, solved ones and newest evaluation (its ``seq``);
- ``algorithm_stats``: the same for an algorithm, by the rule of
  :func:`~palaestra.scoreboard.server.evaluations.records.of_algorithm` (an evaluation that names no algorithm
  belongs to its benchmark run's);
- ``algorithm_env_stats``: an algorithm's evaluations of each env.

Evaluations are only ever added (none is deleted, hidden or moved to another algorithm), so each
upload adds one to each of its rows, atomically, with the COMMIT (:func:`~..tables.scores.execute_at_commit`).
:func:`rebuild` derives them all again from ``evaluations`` (an archive import; migration
``0010_page_indexes`` backfills them the same way).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, Session, mapped_column

from palaestra.scoreboard.server.evaluations.records import algorithm_of_evaluations
from palaestra.scoreboard.server.tables.scores import Base, Evaluation, execute_at_commit

__all__ = ["AlgorithmEnvStats", "AlgorithmStats", "UserStats", "add_evaluation", "rebuild"]


class _Counts:
    """The counted columns of a user's or an algorithm's row."""

    evaluation_count: Mapped[int] = mapped_column(default=0)
    solved_count: Mapped[int] = mapped_column(default=0)
    #: ``seq`` of the newest evaluation (the "latest upload" order)
    last_seq: Mapped[int] = mapped_column(default=0)


class UserStats(_Counts, Base):
    __tablename__ = "user_stats"

    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), primary_key=True, autoincrement=False)


class AlgorithmStats(_Counts, Base):
    __tablename__ = "algorithm_stats"

    algorithm_seq: Mapped[int] = mapped_column(
        sa.ForeignKey("algorithms.seq"), primary_key=True, autoincrement=False
    )


class AlgorithmEnvStats(Base):
    __tablename__ = "algorithm_env_stats"

    algorithm_seq: Mapped[int] = mapped_column(
        sa.ForeignKey("algorithms.seq"), primary_key=True, autoincrement=False
    )
    env_id: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    evaluation_count: Mapped[int] = mapped_column(default=0)


_UPSERTS: dict[tuple[str, str], Any] = {}


def _upsert(dialect: str, model: Any) -> Any:
    """``INSERT ... ON CONFLICT DO UPDATE`` adding one evaluation to a row of ``model`` (built once)."""
    if (dialect, model.__tablename__) not in _UPSERTS:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
        table: Any = model.__table__
        keys = [c for c in table.primary_key.columns]
        values: dict[str, Any] = {c.name: sa.bindparam(c.name) for c in keys} | {"evaluation_count": 1}
        counted: dict[str, Any] = {"evaluation_count": table.c.evaluation_count + 1}
        if "solved_count" in table.c:
            values |= {"solved_count": sa.bindparam("solved"), "last_seq": sa.bindparam("seq")}
            new: Any = sa.bindparam("seq")
            counted |= {
                "solved_count": table.c.solved_count + sa.bindparam("solved"),
                "last_seq": sa.case((table.c.last_seq > new, table.c.last_seq), else_=new),
            }
        stmt = insert(table).values(**values)
        _UPSERTS[dialect, model.__tablename__] = stmt.on_conflict_do_update(index_elements=keys, set_=counted)
    return _UPSERTS[dialect, model.__tablename__]


def add_evaluation(
    session: Session, seq: int, user_seq: int, algorithm_seq: int | None, env_id: str, solved: bool
) -> None:
    """Add the new evaluation ``seq`` to its user's and algorithm's rows (``algorithm_seq``: its own
    algorithm, else its run's; ``None``: it belongs to none), with the transaction's COMMIT."""
    dialect = session.connection().dialect.name
    counts = {"seq": seq, "solved": int(solved)}
    execute_at_commit(session, _upsert(dialect, UserStats), {"user_seq": user_seq, **counts})
    if algorithm_seq is None:
        return
    execute_at_commit(session, _upsert(dialect, AlgorithmStats), {"algorithm_seq": algorithm_seq, **counts})
    execute_at_commit(
        session, _upsert(dialect, AlgorithmEnvStats), {"algorithm_seq": algorithm_seq, "env_id": env_id}
    )


def _solved() -> Any:
    return sa.func.sum(sa.case((Evaluation.solved.is_(True), 1), else_=0))


def rebuild(conn: sa.Connection) -> None:
    """Derive every row again from ``evaluations`` (in the caller's transaction)."""
    for model in (UserStats, AlgorithmStats, AlgorithmEnvStats):
        conn.execute(sa.delete(model))
    per_user = sa.select(
        Evaluation.user_seq, sa.func.count(), _solved(), sa.func.max(Evaluation.seq)
    ).group_by(Evaluation.user_seq)
    conn.execute(
        sa.insert(UserStats).from_select(["user_seq", "evaluation_count", "solved_count", "last_seq"], per_user)
    )
    of = algorithm_of_evaluations()
    solved = sa.func.sum(sa.case((of.c.solved.is_(True), 1), else_=0))
    per_algorithm = sa.select(of.c.algorithm_seq, sa.func.count(), solved, sa.func.max(of.c.seq)).group_by(
        of.c.algorithm_seq
    )
    conn.execute(
        sa.insert(AlgorithmStats).from_select(
            ["algorithm_seq", "evaluation_count", "solved_count", "last_seq"], per_algorithm
        )
    )
    per_env = (
        sa.select(of.c.algorithm_seq, of.c.env_id, sa.func.count())
        .where(of.c.env_id.is_not(None))
        .group_by(of.c.algorithm_seq, of.c.env_id)
    )
    conn.execute(
        sa.insert(AlgorithmEnvStats).from_select(["algorithm_seq", "env_id", "evaluation_count"], per_env)
    )
