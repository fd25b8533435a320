"""score_log coverage: each entry's ``version``, and record ids long enough for a ladder's name

Version 1 entries (every entry made before this revision) keep their hashes and are checked as they
always were. ``fields`` holds a version 2 entry's {field: sha256} of its document, so that verify
names what was changed. Version 2 entries (:mod:`..archive.scorelog`) hash more of what the pages show: an
evaluation's curves, provenance, conditions and its owner's and algorithm's names, and two new kinds,
a ladder match with its games and a ladder's ratings (whose ``record_id`` is the ladder's name, up to
60 characters; a ladder match's is its id). Ladder matches stored before this revision get their
entries from ``palaestra server log-backfill``.

Revision ID: 0013_score_log_coverage
Revises: 0011_nulls_last_indexes
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0013_score_log_coverage"
down_revision = "0012_ladder_trust"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("score_log") as batch:
        batch.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("fields", JSON, nullable=True))
        batch.alter_column("record_id", type_=sa.String(100), existing_type=sa.String(40), existing_nullable=False)


def downgrade() -> None:
    # entries of version 2 would be checked as version 1 and fail: they go with the column
    op.execute("DELETE FROM score_log WHERE version > 1")
    with op.batch_alter_table("score_log") as batch:
        batch.alter_column("record_id", type_=sa.String(40), existing_type=sa.String(100), existing_nullable=False)
        batch.drop_column("fields")
        batch.drop_column("version")
