"""score_log: the hash chain of scored evaluations and benchmark runs (:mod:`..archive.scorelog`)

Evaluations and runs scored before this revision get their entries from
``palaestra server log-backfill`` (it reads their blobs to hash them, which a migration cannot).

Revision ID: 0007_score_log
Revises: 0006_ladder
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0007_score_log"
down_revision = "0006_ladder"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "score_log",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("record_id", sa.String(40), nullable=False),
        sa.Column("record_sha256", sa.String(64), nullable=False),
        sa.Column("blobs", JSON, nullable=False),
        sa.Column("previous_sha256", sa.String(64), nullable=False),
        sa.Column("entry_sha256", sa.String(64), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("entry_sha256"),
    )
    op.create_index("ix_score_log_record", "score_log", ["kind", "record_id"])


def downgrade() -> None:
    op.drop_index("ix_score_log_record", table_name="score_log")
    op.drop_table("score_log")
