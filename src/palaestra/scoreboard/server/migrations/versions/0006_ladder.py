"""board-game ladders: matches, their checked games, and each ladder's derived ratings

Revision ID: 0006_ladder
Revises: 0005_provenance
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006_ladder"
down_revision = "0005_provenance"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "ladder_matches",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("ladder", sa.String(length=60), nullable=False),
        sa.Column("game", sa.String(length=10), nullable=False),
        sa.Column("board_size", sa.Integer(), nullable=False),
        sa.Column("komi", sa.Float(), nullable=True),
        sa.Column("players", _JSON, nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_seq"], ["users.seq"]),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
        sa.UniqueConstraint("user_seq", "digest"),
    )
    op.create_index("ix_ladder_matches_user_seq", "ladder_matches", ["user_seq"])
    op.create_index("ix_ladder_matches_ladder", "ladder_matches", ["ladder"])
    op.create_table(
        "ladder_games",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("match_seq", sa.Integer(), nullable=False),
        sa.Column("ladder", sa.String(length=60), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("file_name", sa.String(length=100), nullable=False),
        sa.Column("black", sa.String(length=100), nullable=False),
        sa.Column("white", sa.String(length=100), nullable=False),
        sa.Column("winner", sa.String(length=5), nullable=True),
        sa.Column("reason", sa.String(length=20), nullable=False),
        sa.Column("result", sa.String(length=20), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("moves", _JSON, nullable=False),
        sa.Column("record", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["match_seq"], ["ladder_matches.seq"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    for column in ("match_seq", "ladder", "black", "white"):
        op.create_index(f"ix_ladder_games_{column}", "ladder_games", [column])
    op.create_table(
        "ladder_ratings",
        sa.Column("ladder", sa.String(length=60), nullable=False),
        sa.Column("player", sa.String(length=100), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("low", sa.Float(), nullable=False),
        sa.Column("high", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("points", sa.Float(), nullable=False),
        sa.Column("anchored", sa.Boolean(), nullable=False),
        sa.Column("is_anchor", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("ladder", "player"),
    )


def downgrade() -> None:
    op.drop_table("ladder_ratings")
    op.drop_table("ladder_games")
    op.drop_table("ladder_matches")
