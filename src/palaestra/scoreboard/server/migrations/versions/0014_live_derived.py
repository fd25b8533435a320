"""live runs derived at ingest, and named

- ``live_derived``: each live run's derivation (its score so far, its curves at display resolution and
  the state they are continued from), updated in the transaction that applies a chunk, so that its
  page, its JSON and compare read one row instead of merging every chunk per request;
- ``live_evaluations.name``: the run's name (the follower gives the env id and the algorithm or the
  directory), shown on its page, the lists and compare instead of "unnamed".

Revision ID: 0014_live_derived
Revises: 0011_nulls_last_indexes
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_live_derived"
down_revision = "0013_score_log_coverage"
branch_labels = None
depends_on = None

def upgrade() -> None:
    op.add_column("live_evaluations", sa.Column("name", sa.String(length=300), nullable=True))
    op.create_table(
        "live_derived",
        sa.Column("live_seq", sa.Integer(), nullable=False),
        sa.Column("episodes", sa.Integer(), nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=False),
        sa.Column("view", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["live_seq"], ["live_evaluations.seq"]),
        sa.PrimaryKeyConstraint("live_seq"),
    )


def downgrade() -> None:
    op.drop_table("live_derived")
    with op.batch_alter_table("live_evaluations") as batch:
        batch.drop_column("name")
