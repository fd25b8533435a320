"""live runs: followed while they train, sealed into an evaluation when they end

- ``live_evaluations``: one followed run (owner, env, status, counters, the evaluation it became);
- ``live_sources``: each source's (manifest's) next expected episode and first reset time;
- ``live_chunks``: every chunk applied (its episodes as arrays), appended as they arrive.

Revision ID: 0008_live_runs
Revises: 0007_score_log
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0008_live_runs"
down_revision = "0007_score_log"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "live_evaluations",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("env_id", sa.String(length=200), nullable=False),
        sa.Column("gym_version", sa.String(length=200), nullable=True),
        sa.Column("algorithm_ref", sa.String(length=200), nullable=True),
        sa.Column("writeup", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("episodes", sa.Integer(), nullable=False),
        sa.Column("timesteps", sa.BigInteger(), nullable=False),
        sa.Column("recent_rewards", JSONType, nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_episode_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("seal_file_id", sa.String(length=40), nullable=True),
        sa.Column("evaluation_id", sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(["user_seq"], ["users.seq"]),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    op.create_index("ix_live_evaluations_env_status", "live_evaluations", ["env_id", "status", "seq"])
    op.create_index("ix_live_evaluations_user_seq", "live_evaluations", ["user_seq", "seq"])
    op.create_table(
        "live_sources",
        sa.Column("live_seq", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("initial_reset_timestamp", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["live_seq"], ["live_evaluations.seq"]),
        sa.PrimaryKeyConstraint("live_seq", "number"),
    )
    op.create_table(
        "live_chunks",
        sa.Column("live_seq", sa.Integer(), nullable=False),
        sa.Column("source", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("start", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("episodes", sa.Integer(), nullable=False),
        sa.Column("arrays", JSONType, nullable=False),
        sa.ForeignKeyConstraint(["live_seq"], ["live_evaluations.seq"]),
        sa.PrimaryKeyConstraint("live_seq", "source", "start"),
    )


def downgrade() -> None:
    op.drop_table("live_chunks")
    op.drop_table("live_sources")
    op.drop_index("ix_live_evaluations_user_seq", table_name="live_evaluations")
    op.drop_index("ix_live_evaluations_env_status", table_name="live_evaluations")
    op.drop_table("live_evaluations")
