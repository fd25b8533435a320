"""page indexes: per-user and per-algorithm aggregates, and the index of the by-algorithm order

- ``user_stats``, ``algorithm_stats``, ``algorithm_env_stats`` (:mod:`palaestra.scoreboard.server.evaluations.index_stats`),
  backfilled here from the evaluations already stored;
- ``ix_evaluations_env_algorithm``: ``(env_id, algorithm_seq, seq)``, along which an env page in
  algorithm order counts and reads its rows.

The backfill is SQL of its own (a migration is frozen history; the models may change after it):
an evaluation belongs to the algorithm it names, else to its benchmark run's.

Revision ID: 0010_page_indexes
Revises: 0009_derived_evaluations
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_page_indexes"
down_revision = "0009_derived_evaluations"
branch_labels = None
depends_on = None

_OF_ALGORITHM = """
    SELECT algorithm_seq, env_id, seq, solved FROM evaluations WHERE algorithm_seq IS NOT NULL
    UNION ALL
    SELECT r.algorithm_seq, e.env_id, e.seq, e.solved
    FROM evaluations e JOIN benchmark_runs r ON r.seq = e.benchmark_run_seq
    WHERE e.algorithm_seq IS NULL AND r.algorithm_seq IS NOT NULL
"""
_SOLVED = "SUM(CASE WHEN solved THEN 1 ELSE 0 END)"
BACKFILL = (
    "INSERT INTO user_stats (user_seq, evaluation_count, solved_count, last_seq) "
    f"SELECT user_seq, COUNT(*), {_SOLVED}, MAX(seq) FROM evaluations GROUP BY user_seq",
    "INSERT INTO algorithm_stats (algorithm_seq, evaluation_count, solved_count, last_seq) "
    f"SELECT algorithm_seq, COUNT(*), {_SOLVED}, MAX(seq) FROM ({_OF_ALGORITHM}) AS o GROUP BY algorithm_seq",
    "INSERT INTO algorithm_env_stats (algorithm_seq, env_id, evaluation_count) "
    f"SELECT algorithm_seq, env_id, COUNT(*) FROM ({_OF_ALGORITHM}) AS o WHERE env_id IS NOT NULL "
    "GROUP BY algorithm_seq, env_id",
)


def _counts() -> list[sa.Column[int]]:
    return [
        sa.Column("evaluation_count", sa.Integer(), nullable=False),
        sa.Column("solved_count", sa.Integer(), nullable=False),
        sa.Column("last_seq", sa.Integer(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "user_stats",
        sa.Column("user_seq", sa.Integer(), autoincrement=False, nullable=False),
        *_counts(),
        sa.ForeignKeyConstraint(["user_seq"], ["users.seq"]),
        sa.PrimaryKeyConstraint("user_seq"),
    )
    op.create_table(
        "algorithm_stats",
        sa.Column("algorithm_seq", sa.Integer(), autoincrement=False, nullable=False),
        *_counts(),
        sa.ForeignKeyConstraint(["algorithm_seq"], ["algorithms.seq"]),
        sa.PrimaryKeyConstraint("algorithm_seq"),
    )
    op.create_table(
        "algorithm_env_stats",
        sa.Column("algorithm_seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("env_id", sa.String(length=200), nullable=False),
        sa.Column("evaluation_count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["algorithm_seq"], ["algorithms.seq"]),
        sa.PrimaryKeyConstraint("algorithm_seq", "env_id"),
    )
    op.create_index("ix_evaluations_env_algorithm", "evaluations", ["env_id", "algorithm_seq", "seq"])
    for statement in BACKFILL:
        op.execute(statement)


def downgrade() -> None:
    op.drop_index("ix_evaluations_env_algorithm", table_name="evaluations")
    for table in ("algorithm_env_stats", "algorithm_stats", "user_stats"):
        op.drop_table(table)
