"""The leaderboard orders are index walks on both databases: PostgreSQL's DESC index columns put
NULLs first, the orders rank a NULL mean last, so its indexes say NULLS LAST (migration 0011)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from palaestra.scoreboard.server.core import migrate
from palaestra.scoreboard.server.tables.scores import Evaluation
from palaestra.scoreboard.server.web.queries import LEADERBOARD_SORTS

ORDERS = ["episodes", "mean", "submitted"]


def _plan(conn: sa.Connection, sort: str) -> str:
    _, order = LEADERBOARD_SORTS[sort]
    page = sa.select(Evaluation.seq).where(Evaluation.env_id == "CartPole-v1").order_by(*order).limit(25).offset(50)
    compiled = page.compile(conn, compile_kwargs={"literal_binds": True})
    return "\n".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {compiled}"))


@pytest.mark.parametrize("sort", ORDERS)
def test_a_leaderboard_page_is_an_index_walk_on_postgresql(postgres_url: str, sort: str) -> None:
    engine = sa.create_engine(postgres_url)
    try:
        migrate.upgrade(engine)
        with engine.connect() as conn:
            # a sort costs "infinitely" much: the planner sorts only when no index gives the order
            conn.exec_driver_sql("SET enable_sort = off")
            conn.exec_driver_sql("SET enable_seqscan = off")
            plan = _plan(conn, sort)
    finally:
        engine.dispose()
    assert "Sort" not in plan, plan
    assert "Index" in plan, plan


def test_the_migration_goes_back_to_the_plain_indexes_on_postgresql(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    try:
        migrate.upgrade(engine)
        defs = _index_defs(engine)
        assert "mean DESC NULLS LAST" in defs["ix_evaluations_env_mean"]
        assert "ranking_mean DESC NULLS LAST" in defs["ix_evaluations_env_leaderboard"]
        with engine.connect() as conn:
            cfg = migrate.alembic_config(engine.url.render_as_string(hide_password=False))
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0010_page_indexes")
            conn.commit()
        defs = _index_defs(engine)
        assert "NULLS LAST" not in defs["ix_evaluations_env_mean"] + defs["ix_evaluations_env_leaderboard"]
    finally:
        engine.dispose()


def _index_defs(engine: sa.Engine) -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'evaluations'")
        return {name: definition for name, definition in rows}


@pytest.mark.parametrize("sort", ORDERS)
def test_a_leaderboard_page_is_an_index_walk_on_sqlite(tmp_path: Path, sort: str) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    try:
        migrate.upgrade(engine)
        with engine.connect() as conn:
            _, order = LEADERBOARD_SORTS[sort]
            page = sa.select(Evaluation.seq).where(Evaluation.env_id == "x").order_by(*order).limit(25)
            compiled = page.compile(conn, compile_kwargs={"literal_binds": True})
            plan = " ".join(str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}"))
    finally:
        engine.dispose()
    assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan
    assert "USING" in plan and "INDEX" in plan, plan
