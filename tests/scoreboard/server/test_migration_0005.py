"""Migration 0005_provenance on a database that already holds evaluations, on SQLite and PostgreSQL:
nothing stored is lost, the old evaluations' conditions read as "not recorded", and the downgrade
gives 0004's schema back."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from palaestra.scoreboard.server.core import migrate

_USER = "INSERT INTO users (name, created) VALUES ('old', '2024-01-01 00:00:00')"
_EVALUATION = (
    "INSERT INTO evaluations (id, user_seq, env_id, env_listed, trials, solved, mean, number_episodes, "
    "number_timesteps, videos, created) VALUES ('eval_old', 1, 'CartPole-v1', true, 100, false, 21.5, 150, "
    "3000, '[]', '2024-01-01 00:00:00')"
)


def _upgrade_and_downgrade(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        migrate.upgrade(engine, "0004")
        with engine.begin() as conn:
            conn.execute(sa.text(_USER))
            conn.execute(sa.text(_EVALUATION))
        migrate.upgrade(engine, "0005_provenance")
        assert migrate.current_revision(engine) == "0005_provenance"
        with engine.connect() as conn:
            row = conn.execute(
                sa.text("SELECT id, mean, provenance, conditions, conditions_key FROM evaluations")
            ).one()
            assert tuple(row) == ("eval_old", 21.5, None, None, None)  # not recorded
            indexes = {i["name"] for i in sa.inspect(conn).get_indexes("evaluations")}
            assert "ix_evaluations_env_conditions" in indexes
        with engine.connect() as conn:
            cfg = migrate.alembic_config(url)
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0004")
            conn.commit()
        with engine.connect() as conn:
            columns = {c["name"] for c in sa.inspect(conn).get_columns("evaluations")}
            assert not {"provenance", "conditions", "conditions_key"} & columns
            assert conn.execute(sa.text("SELECT id, mean FROM evaluations")).one() == ("eval_old", 21.5)
    finally:
        engine.dispose()


def test_0005_on_sqlite_keeps_the_evaluations_and_leaves_their_conditions_unrecorded(tmp_path: Path) -> None:
    _upgrade_and_downgrade(f"sqlite:///{tmp_path / 'old.sqlite3'}")


@pytest.mark.postgres
def test_0005_on_postgresql_keeps_the_evaluations_and_leaves_their_conditions_unrecorded(
    postgres_url: str,
) -> None:
    _upgrade_and_downgrade(postgres_url)
