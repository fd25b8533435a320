"""agent jobs: evaluations the board runs itself, and verified evaluations

- ``agent_jobs``: an uploaded agent artifact to evaluate (its blob, descriptor, seeds drawn by the
  server), its status, the lease of the worker running it, its progress and the evaluation it became;
- ``evaluations.verified``, ``.verification`` (seeds, artifact sha256, evaluator) and ``.agent_job_id``,
  unique (a unique index, which SQLite adds without copying the table): a job is stored once.

Revision ID: 0015_agent_jobs
Revises: 0011_nulls_last_indexes
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0015_agent_jobs"
down_revision = "0014_live_derived"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "agent_jobs",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("env_id", sa.String(length=200), nullable=False),
        sa.Column("algorithm_ref", sa.String(length=200), nullable=True),
        sa.Column("writeup", sa.Text(), nullable=True),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=False),
        sa.Column("artifact_key", sa.String(length=300), nullable=False),
        sa.Column("artifact_size", sa.BigInteger(), nullable=False),
        sa.Column("descriptor", JSONType, nullable=False),
        sa.Column("episodes", sa.Integer(), nullable=False),
        sa.Column("seeds", JSONType, nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("log_tail", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_id", sa.String(length=40), nullable=True),
        sa.Column("heartbeat", sa.DateTime(timezone=True), nullable=True),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("returns", JSONType, nullable=False),
        sa.Column("evaluation_id", sa.String(length=40), nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_seq"], ["users.seq"]),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    op.create_index("ix_agent_jobs_status_seq", "agent_jobs", ["status", "seq"])
    op.create_index("ix_agent_jobs_user_seq", "agent_jobs", ["user_seq", "seq"])
    # plain ALTER TABLE ADD COLUMN on both databases: no copy of the evaluations
    op.add_column("evaluations", sa.Column("verified", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("evaluations", sa.Column("verification", JSONType, nullable=True))
    op.add_column("evaluations", sa.Column("agent_job_id", sa.String(length=40), nullable=True))
    op.create_index("ix_evaluations_env_verified", "evaluations", ["env_id", "verified", "seq"])
    op.create_index("ux_evaluations_agent_job_id", "evaluations", ["agent_job_id"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_evaluations_agent_job_id", table_name="evaluations")
    op.drop_index("ix_evaluations_env_verified", table_name="evaluations")
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("agent_job_id")
        batch.drop_column("verification")
        batch.drop_column("verified")
    op.drop_index("ix_agent_jobs_user_seq", table_name="agent_jobs")
    op.drop_index("ix_agent_jobs_status_seq", table_name="agent_jobs")
    op.drop_table("agent_jobs")
