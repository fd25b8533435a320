"""nulls-last leaderboard indexes on PostgreSQL

The leaderboard orders rank a NULL mean last (``mean DESC NULLS LAST``, ``ranking_mean DESC NULLS
LAST``). An index column ``DESC`` is ``NULLS FIRST`` on PostgreSQL, so its planner could not walk
``ix_evaluations_env_mean`` and ``ix_evaluations_env_leaderboard`` in those orders and sorted the
env's rows instead: a deep page at 100,000 evaluations of one env took 60 to 90 ms. Both are made
again ``NULLS LAST`` there. SQLite puts NULLs last in a descending index already (and takes no
NULLS clause in one): nothing changes on it.

Revision ID: 0011_nulls_last_indexes
Revises: 0010_page_indexes
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0011_nulls_last_indexes"
down_revision = "0010_page_indexes"
branch_labels = None
depends_on = None

_LEADERBOARD = "env_id, solved DESC, episode_t_value, ranking_mean DESC{nulls}, seq"
_MEAN = "env_id, mean DESC{nulls}, seq"


def _recreate(nulls: str) -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    for name, columns in (("ix_evaluations_env_leaderboard", _LEADERBOARD), ("ix_evaluations_env_mean", _MEAN)):
        op.execute(f"DROP INDEX IF EXISTS {name}")
        op.execute(f"CREATE INDEX {name} ON evaluations ({columns.format(nulls=nulls)})")


def upgrade() -> None:
    _recreate(" NULLS LAST")


def downgrade() -> None:
    _recreate("")
