"""provenance and conditions of evaluations

- ``evaluations.provenance``: what ran, as uploaded (validated by ``provenance_wire.Provenance``);
- ``evaluations.conditions``: the protocol card derived from it at ingest (``server/conditions.py``);
- ``evaluations.conditions_key``: the card's digest, by which evaluations are grouped; NULL means
  "not recorded" (every evaluation stored before this revision, and every 2017 upload).

Revision ID: 0005_provenance
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005_provenance"
down_revision = "0004"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("evaluations") as batch:
        batch.add_column(sa.Column("provenance", _JSON, nullable=True))
        batch.add_column(sa.Column("conditions", _JSON, nullable=True))
        batch.add_column(sa.Column("conditions_key", sa.String(length=16), nullable=True))
    op.create_index("ix_evaluations_env_conditions", "evaluations", ["env_id", "conditions_key", "seq"])


def downgrade() -> None:
    op.drop_index("ix_evaluations_env_conditions", table_name="evaluations")
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("conditions_key")
        batch.drop_column("conditions")
        batch.drop_column("provenance")
