"""derived evaluations: the page's curve series stored with each evaluation, a run's bootstrap apart

- ``evaluations.curves``: the curve series the pages draw (``evaluation_scoring.curves_of``), derived
  here for the evaluations stored before, from their episode batches when the migration is given the
  blob store (``palaestra server`` and ``palaestra server migrate`` give it; an evaluation whose batch
  is missing keeps NULL, and its page says its curves are not available);
  ``palaestra server rescore`` derives them (and everything else) again at any time;
- ``benchmark_runs.statistics``: a run's bootstrap intervals and profile, computed after the upload
  that changed its score (``benchmarking.compute_statistics``), kept apart from the logged ``score``.

Revision ID: 0009_derived_evaluations
Revises: 0008_live_runs
Create Date: 2026-12-02
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0009_derived_evaluations"
down_revision = "0008_live_runs"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
logger = logging.getLogger("palaestra.scoreboard.migrate")


def upgrade() -> None:
    with op.batch_alter_table("evaluations") as batch:
        batch.add_column(sa.Column("curves", JSONType, nullable=True))
    with op.batch_alter_table("benchmark_runs") as batch:
        batch.add_column(sa.Column("statistics", JSONType, nullable=True))
    stored = op.get_bind().scalar(sa.text("SELECT count(*) FROM evaluations WHERE episode_batch_key IS NOT NULL"))
    config = op.get_context().config
    open_store = config.attributes.get("open_store") if config is not None else None
    if not stored:
        return
    if open_store is None:
        logger.warning("Migrated without the blob store: `palaestra server rescore` derives the stored "
                       "evaluations' curves")
        return
    from palaestra.scoreboard.server.evaluations.rescore import derive_missing_curves

    derived, missing = derive_missing_curves(op.get_bind(), open_store())
    if derived or missing:
        logger.info("Derived the curves of %d stored evaluations (%d batches missing: no curves)", derived, missing)


def downgrade() -> None:
    with op.batch_alter_table("benchmark_runs") as batch:
        batch.drop_column("statistics")
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("curves")
