"""storage integrity: content hashes of stored episode batches, and indexes for gc

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

- ``files.sha256`` and ``evaluations.episode_batch_sha256``: the sha256 of a stored episode batch,
  recorded when it is stored and checked whenever it is read. Rows from before have NULL, meaning
  "not recorded": their batches are read unchecked, as before.
- ``ix_files_status_expires`` and ``ix_idempotency_keys_created``: what ``palaestra server gc``
  looks up (expired pending files, expired idempotency keys).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("files") as batch:
        batch.add_column(sa.Column("sha256", sa.String(length=64), nullable=True))
    with op.batch_alter_table("evaluations") as batch:
        batch.add_column(sa.Column("episode_batch_sha256", sa.String(length=64), nullable=True))
    op.create_index("ix_files_status_expires", "files", ["status", "expires"])
    op.create_index("ix_idempotency_keys_created", "idempotency_keys", ["created"])


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_created", table_name="idempotency_keys")
    op.drop_index("ix_files_status_expires", table_name="files")
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("episode_batch_sha256")
    with op.batch_alter_table("files") as batch:
        batch.drop_column("sha256")
