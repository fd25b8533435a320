"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "envs",
        sa.Column("env_id", sa.String(length=200), nullable=False),
        sa.Column("group_id", sa.String(length=50), nullable=True),
        sa.Column("listed", sa.Boolean(), nullable=False),
        sa.Column("evaluation_count", sa.Integer(), nullable=False),
        sa.Column("solved_count", sa.Integer(), nullable=False),
        sa.Column("best_mean", sa.Float(), nullable=True),
        sa.Column("best_evaluation_id", sa.String(length=40), nullable=True),
        sa.Column("last_evaluation", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("env_id"),
    )
    op.create_index("ix_envs_group", "envs", ["group_id", "env_id"])

    op.create_table(
        "server_settings",
        sa.Column("key", sa.String(length=100), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "users",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "algorithms",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("writeup", sa.Text(), nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_seq"],
            ["users.seq"],
        ),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
        sa.UniqueConstraint("user_seq", "name", name="uq_algorithms_user_name"),
    )
    op.create_index("ix_algorithms_user_seq", "algorithms", ["user_seq"])

    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_seq"], ["users.seq"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key_hash"),
    )
    op.create_index("ix_api_keys_user_seq", "api_keys", ["user_seq"])

    op.create_table(
        "files",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("purpose", sa.String(length=20), nullable=False),
        sa.Column("content_type", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("storage_key", sa.String(length=300), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("max_bytes", sa.BigInteger(), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("uploaded", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ingest", JSON, nullable=True),
        sa.Column("evaluation_id", sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_seq"],
            ["users.seq"],
        ),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    op.create_index("ix_files_user_seq", "files", ["user_seq"])
    op.create_index("ix_files_evaluation_id", "files", ["evaluation_id"])

    op.create_table(
        "idempotency_keys",
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request", sa.String(length=200), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("response", JSON, nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_seq"],
            ["users.seq"],
        ),
        sa.PrimaryKeyConstraint("user_seq", "key"),
    )
    op.create_table(
        "benchmark_runs",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.String(length=200), nullable=False),
        sa.Column("algorithm_seq", sa.Integer(), nullable=True),
        sa.Column("tags", JSON, nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("score", JSON, nullable=True),
        sa.Column("score_value", sa.Float(), nullable=True),
        sa.Column("score_evaluations", sa.Integer(), nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("committed", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["algorithm_seq"],
            ["algorithms.seq"],
        ),
        sa.ForeignKeyConstraint(
            ["user_seq"],
            ["users.seq"],
        ),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    op.create_index("ix_benchmark_runs_benchmark_id", "benchmark_runs", ["benchmark_id"])
    op.create_index("ix_benchmark_runs_user_seq", "benchmark_runs", ["user_seq"])

    op.create_table(
        "evaluations",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("env_id", sa.String(length=200), nullable=True),
        sa.Column("env_listed", sa.Boolean(), nullable=False),
        sa.Column("algorithm_seq", sa.Integer(), nullable=True),
        sa.Column("benchmark_run_seq", sa.Integer(), nullable=True),
        sa.Column("writeup", sa.Text(), nullable=True),
        sa.Column("gym_version", sa.String(length=100), nullable=True),
        sa.Column("training_episode_batch", sa.String(length=40), nullable=True),
        sa.Column("training_video", sa.String(length=40), nullable=True),
        sa.Column("episode_batch_key", sa.String(length=300), nullable=True),
        sa.Column("trials", sa.Integer(), nullable=False),
        sa.Column("reward_threshold", sa.Float(), nullable=True),
        sa.Column("solved", sa.Boolean(), nullable=False),
        sa.Column("episode_t_value", sa.Integer(), nullable=True),
        sa.Column("timestep_t_value", sa.BigInteger(), nullable=True),
        sa.Column("mean", sa.Float(), nullable=True),
        sa.Column("error", sa.Float(), nullable=True),
        sa.Column("number_episodes", sa.Integer(), nullable=False),
        sa.Column("number_timesteps", sa.BigInteger(), nullable=False),
        sa.Column("seconds_to_solve", sa.Float(), nullable=True),
        sa.Column("seconds_in_total", sa.Float(), nullable=True),
        sa.Column("graph_stats", JSON, nullable=True),
        sa.Column("benchmark_score", JSON, nullable=True),
        sa.Column("videos", JSON, nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["algorithm_seq"],
            ["algorithms.seq"],
        ),
        sa.ForeignKeyConstraint(
            ["benchmark_run_seq"],
            ["benchmark_runs.seq"],
        ),
        sa.ForeignKeyConstraint(
            ["user_seq"],
            ["users.seq"],
        ),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    op.create_index("ix_evaluations_algorithm_seq", "evaluations", ["algorithm_seq", "seq"])
    op.create_index("ix_evaluations_benchmark_run", "evaluations", ["benchmark_run_seq"])
    op.create_index("ix_evaluations_env_mean", "evaluations", ["env_id", sa.text("mean DESC"), "seq"])
    op.create_index(
        "ix_evaluations_env_leaderboard",
        "evaluations",
        ["env_id", sa.text("solved DESC"), "episode_t_value", sa.text("mean DESC"), "seq"],
    )
    op.create_index("ix_evaluations_env_seq", "evaluations", ["env_id", "seq"])
    op.create_index("ix_evaluations_user_seq", "evaluations", ["user_seq", "seq"])


def downgrade() -> None:
    op.drop_index("ix_evaluations_user_seq", table_name="evaluations")
    op.drop_index("ix_evaluations_env_leaderboard", table_name="evaluations")
    op.drop_index("ix_evaluations_env_seq", table_name="evaluations")
    op.drop_index("ix_evaluations_env_mean", table_name="evaluations")
    op.drop_index("ix_evaluations_benchmark_run", table_name="evaluations")
    op.drop_index("ix_evaluations_algorithm_seq", table_name="evaluations")

    op.drop_table("evaluations")
    op.drop_index("ix_benchmark_runs_user_seq", table_name="benchmark_runs")
    op.drop_index("ix_benchmark_runs_benchmark_id", table_name="benchmark_runs")

    op.drop_table("benchmark_runs")
    op.drop_table("idempotency_keys")
    op.drop_index("ix_files_evaluation_id", table_name="files")
    op.drop_index("ix_files_user_seq", table_name="files")

    op.drop_table("files")
    op.drop_index("ix_api_keys_user_seq", table_name="api_keys")

    op.drop_table("api_keys")
    op.drop_index("ix_algorithms_user_seq", table_name="algorithms")

    op.drop_table("algorithms")
    op.drop_table("users")
    op.drop_table("server_settings")
    op.drop_index("ix_envs_group", table_name="envs")

    op.drop_table("envs")
