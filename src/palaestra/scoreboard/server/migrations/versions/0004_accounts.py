"""accounts (passwords, sign-in sessions, invites) and the means of short and evaluation-only runs

- ``users.password_hash``: an argon2 hash (None: the user signs in with no password, keys only);
- ``web_sessions``: signed-in browsers (the sha256 of the cookie's token, its user, when it expires);
- ``invites``: one-time links with which a user sets a password (the sha256 of the link's token);
- ``evaluations.episodes_mean``, ``evaluation_episodes``, ``evaluation_mean``: the mean reward of a
  run with fewer training episodes than the solving window, and of its evaluation episodes;
- ``evaluations.ranking_mean``: what the unsolved part of a leaderboard is ordered by (the best window's
  mean, else the mean of the training episodes there are); the leaderboard index orders by it.

Evaluations stored before this revision get ``ranking_mean = mean`` (their other new columns stay
empty: the episodes are in the blob store, out of a migration's reach).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("password_hash", sa.String(length=200), nullable=True))
    op.create_table(
        "web_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_seq"], ["users.seq"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_web_sessions_user_seq", "web_sessions", ["user_seq"])
    op.create_index("ix_web_sessions_expires", "web_sessions", ["expires"])
    op.create_table(
        "invites",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_seq"], ["users.seq"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_invites_user_seq", "invites", ["user_seq"])

    with op.batch_alter_table("evaluations") as batch:
        batch.add_column(sa.Column("episodes_mean", sa.Float(), nullable=True))
        batch.add_column(sa.Column("evaluation_episodes", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("evaluation_mean", sa.Float(), nullable=True))
        batch.add_column(sa.Column("ranking_mean", sa.Float(), nullable=True))
    op.execute("UPDATE evaluations SET ranking_mean = mean")
    op.drop_index("ix_evaluations_env_leaderboard", table_name="evaluations")
    op.create_index(
        "ix_evaluations_env_leaderboard",
        "evaluations",
        ["env_id", sa.text("solved DESC"), "episode_t_value", sa.text("ranking_mean DESC"), "seq"],
    )


def downgrade() -> None:
    op.drop_index("ix_evaluations_env_leaderboard", table_name="evaluations")
    op.create_index(
        "ix_evaluations_env_leaderboard",
        "evaluations",
        ["env_id", sa.text("solved DESC"), "episode_t_value", sa.text("mean DESC"), "seq"],
    )
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("ranking_mean")
        batch.drop_column("evaluation_mean")
        batch.drop_column("evaluation_episodes")
        batch.drop_column("episodes_mean")
    op.drop_index("ix_invites_user_seq", table_name="invites")
    op.drop_table("invites")
    op.drop_index("ix_web_sessions_expires", table_name="web_sessions")
    op.drop_index("ix_web_sessions_user_seq", table_name="web_sessions")
    op.drop_table("web_sessions")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("password_hash")
