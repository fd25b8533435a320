"""Migration 0009_derived_evaluations on a database that already holds evaluations, on SQLite and
PostgreSQL: the curves of those whose batch is in the store are derived as ingest derives them, one
whose batch is missing keeps none (its page says so), and the downgrade gives 0008's schema back."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from palaestra.scoreboard.server.core import migrate
from palaestra.scoreboard.server.core.storage import FileStore
from palaestra.scoreboard.server.evaluations.derive import curves_of
from palaestra.scoreboard.server.evaluations.ingest import read_validated_batch
from tests.scoreboard.server_helpers import make_batch

_USER = "INSERT INTO users (name, created) VALUES ('old', '2024-01-01 00:00:00')"
_EVALUATION = (
    "INSERT INTO evaluations (id, user_seq, env_id, env_listed, trials, reward_threshold, solved, mean, "
    "number_episodes, number_timesteps, videos, created, episode_batch_key, episode_batch_sha256) VALUES "
    "(:id, 1, 'CartPole-v1', true, 100, 475.0, false, 2.0, 150, 1800, '[]', '2024-01-01 00:00:00', :key, :sha)"
)


def _curves(engine: sa.Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT id, curves FROM evaluations ORDER BY seq")).all()
    return {i: json.loads(c) if isinstance(c, str) else c for i, c in rows}


def _upgrade_and_downgrade(url: str, blobs: Path) -> None:
    store = FileStore(blobs)
    batch = json.dumps(make_batch(150)).encode()
    store.put_bytes("old/kept.json", batch)
    engine = sa.create_engine(url)
    try:
        migrate.upgrade(engine, "0008_live_runs")
        with engine.begin() as conn:
            conn.execute(sa.text(_USER))
            sha = hashlib.sha256(batch).hexdigest()
            conn.execute(sa.text(_EVALUATION), {"id": "eval_kept", "key": "old/kept.json", "sha": sha})
            conn.execute(sa.text(_EVALUATION), {"id": "eval_gone", "key": "old/gone.json", "sha": sha})
        migrate.upgrade(engine, "0009_derived_evaluations", open_store=lambda: store)
        assert migrate.current_revision(engine) == "0009_derived_evaluations"
        expected = curves_of(read_validated_batch(batch).enriched("CartPole-v1"), 100, 475.0)
        assert _curves(engine) == {"eval_kept": json.loads(json.dumps(expected)), "eval_gone": None}
        with engine.connect() as conn:
            cfg = migrate.alembic_config(url)
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0008_live_runs")
            conn.commit()
        with engine.connect() as conn:
            assert "curves" not in {c["name"] for c in sa.inspect(conn).get_columns("evaluations")}
            assert "statistics" not in {c["name"] for c in sa.inspect(conn).get_columns("benchmark_runs")}
            assert conn.execute(sa.text("SELECT count(*) FROM evaluations")).scalar() == 2
    finally:
        engine.dispose()


def test_0009_on_sqlite_derives_the_stored_evaluations_curves(tmp_path: Path) -> None:
    _upgrade_and_downgrade(f"sqlite:///{tmp_path / 'old.sqlite3'}", tmp_path / "blobs")


@pytest.mark.postgres
def test_0009_on_postgresql_derives_the_stored_evaluations_curves(postgres_url: str, tmp_path: Path) -> None:
    _upgrade_and_downgrade(postgres_url, tmp_path / "blobs")
