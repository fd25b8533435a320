"""Migration 0004 (accounts, short runs' means) on a database that already holds evaluations, on
SQLite and PostgreSQL: nothing stored is lost, the leaderboard's ranking mean is filled in, and the
downgrade gives the 0001 schema back."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.core import migrate

_USER = "INSERT INTO users (name, created) VALUES ('old', '2024-01-01 00:00:00')"
_EVALUATION = (
    "INSERT INTO evaluations (id, user_seq, env_id, env_listed, trials, solved, mean, number_episodes, "
    "number_timesteps, videos, created) VALUES (:id, 1, 'CartPole-v1', :listed, 100, :solved, :mean, 150, "
    "3000, '[]', '2024-01-01 00:00:00')"
)


def _upgrade_a_database_with_evaluations(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        migrate.upgrade(engine, "0001")
        with engine.begin() as conn:
            conn.execute(sa.text(_USER))
            conn.execute(sa.text(_EVALUATION), {"id": "eval_a", "listed": True, "solved": False, "mean": 21.5})
            conn.execute(sa.text(_EVALUATION), {"id": "eval_b", "listed": True, "solved": False, "mean": None})
        migrate.upgrade(engine)
        assert migrate.current_revision(engine) == migrate.SCHEMA_HEAD
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                "SELECT id, mean, ranking_mean, episodes_mean, evaluation_episodes FROM evaluations ORDER BY id"
            )).all()
            assert [tuple(r) for r in rows] == [("eval_a", 21.5, 21.5, None, 0), ("eval_b", None, None, None, 0)]
            assert conn.execute(sa.text("SELECT name, password_hash FROM users")).one() == ("old", None)
            assert conn.execute(sa.text("SELECT count(*) FROM web_sessions")).scalar() == 0
        from alembic import command

        with engine.connect() as conn:
            cfg = migrate.alembic_config(url)
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0001")
            conn.commit()
        with engine.connect() as conn:
            assert "ranking_mean" not in {c["name"] for c in sa.inspect(conn).get_columns("evaluations")}
            assert not sa.inspect(conn).has_table("web_sessions")
            assert conn.execute(sa.text("SELECT count(*) FROM evaluations")).scalar() == 2
    finally:
        engine.dispose()


def test_0004_on_sqlite_keeps_the_evaluations_and_fills_the_ranking_mean(tmp_path: Path) -> None:
    _upgrade_a_database_with_evaluations(f"sqlite:///{tmp_path / 'old.sqlite3'}")


@pytest.mark.postgres
def test_0004_on_postgresql_keeps_the_evaluations_and_fills_the_ranking_mean(postgres_url: str) -> None:
    _upgrade_a_database_with_evaluations(postgres_url)
