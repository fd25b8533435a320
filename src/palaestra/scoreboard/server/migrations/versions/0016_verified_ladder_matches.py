"""verified ladder matches: the games the board played itself with an uploaded agent

- ``ladder_matches.verified``: the server played the match (an uploaded Go or Hex agent against the
  anchors, in the agent sandbox), so nobody uploaded its games; its ratings are the verified ones;
- ``ladder_matches.agent_job_id``: the agent job that played it (indexed: the job's page lists them).

Revision ID: 0016_verified_ladder_matches
Revises: 0015_agent_jobs
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_verified_ladder_matches"
down_revision = "0015_agent_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ALTER TABLE ADD COLUMN on both databases: no copy of the matches
    op.add_column("ladder_matches", sa.Column("verified", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("ladder_matches", sa.Column("agent_job_id", sa.String(length=40), nullable=True))
    op.create_index("ix_ladder_matches_agent_job_id", "ladder_matches", ["agent_job_id"])


def downgrade() -> None:
    op.drop_index("ix_ladder_matches_agent_job_id", table_name="ladder_matches")
    with op.batch_alter_table("ladder_matches") as batch:
        batch.drop_column("agent_job_id")
        batch.drop_column("verified")
