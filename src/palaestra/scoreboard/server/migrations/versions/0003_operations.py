"""Operations: the rate limits' counters, and the index they count a user's recent files with.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_counters",
        sa.Column("bucket", sa.String(200), nullable=False),
        sa.Column("window_start", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("bucket", "window_start"),
    )
    op.create_index("ix_files_user_created", "files", ["user_seq", "created"])


def downgrade() -> None:
    op.drop_index("ix_files_user_created", table_name="files")
    op.drop_table("rate_counters")
