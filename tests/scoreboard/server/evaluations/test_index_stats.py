"""The per-user and per-algorithm aggregates (``index_stats``): kept right by uploads (own algorithm, a
benchmark run's, none; several users), equal to what :func:`index_stats.rebuild` and migration
0010's backfill derive from the evaluations, and read by the indexes; the env page in algorithm order
is the plain ORDER BY's, page by page, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.accounts import auth
from palaestra.scoreboard.server.core import migrate
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.evaluations import index_stats
from palaestra.scoreboard.server.tables import scores as m
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.web import index_queries, queries
from palaestra.scoreboard.server.web.views import Page
from tests.scoreboard.server.conftest import InProcessServer
from tests.scoreboard.server_helpers import make_batch, upload_evaluation

Rows = dict[str, set[tuple[Any, ...]]]


def _kept(conn: sa.Connection) -> Rows:
    """Every row of the three aggregate tables."""
    return {
        model.__tablename__: {tuple(r) for r in conn.execute(sa.select(model.__table__))}
        for model in (index_stats.UserStats, index_stats.AlgorithmStats, index_stats.AlgorithmEnvStats)
    }


def _rebuilt(db: Database) -> Rows:
    """The rows :func:`index_stats.rebuild` derives (rolled back: the kept ones stay)."""
    with db.engine.connect() as conn:
        index_stats.rebuild(conn)
        rows = _kept(conn)
        conn.rollback()
    return rows


def _seq(db: Database, model: Any, column: Any, value: str) -> int:
    with db.engine.connect() as conn:
        return int(conn.scalar(sa.select(model.seq).where(column == value)))


def test_uploads_keep_the_user_and_algorithm_rows_right(in_process_server: InProcessServer) -> None:
    state = in_process_server.state
    other_key = auth.create_user(state.db, "other")[1]
    with in_process_server.client() as c:
        run = c.post("/v1/benchmark_runs", json={"benchmark_id": "Anything-v0", "algorithm_id": "run-alg"}).json()
        upload_evaluation(c, "CartPole-v1", make_batch(5), algorithm={"id": "own-alg"})
        upload_evaluation(c, "Acrobot-v1", make_batch(5), algorithm={"id": "own-alg"})
        # names no algorithm: it belongs to its run's
        upload_evaluation(c, "CartPole-v1", make_batch(5), benchmark_run_id=run["id"], algorithm={})
        upload_evaluation(c, "CartPole-v1", make_batch(5))  # no algorithm at all
    with in_process_server.client() as c:
        c.headers["Authorization"] = f"Bearer {other_key}"
        last = upload_evaluation(c, "CartPole-v1", make_batch(5), algorithm={"id": "own-alg-2"})
    db = state.db
    tester, other = (_seq(db, User, User.name, name) for name in ("tester", "other"))
    own, by_run = (_seq(db, m.Algorithm, m.Algorithm.name, name) for name in ("own-alg", "run-alg"))
    newest = _seq(db, m.Evaluation, m.Evaluation.id, last["id"])
    with db.engine.connect() as conn:
        kept = _kept(conn)
        last_of = dict(conn.execute(sa.select(m.Evaluation.user_seq, sa.func.max(m.Evaluation.seq)).group_by(
            m.Evaluation.user_seq)).all())
    assert {(u, n) for u, n, _, _ in kept["user_stats"]} == {(tester, 4), (other, 1)}
    assert {(u, last_seq) for u, _, _, last_seq in kept["user_stats"]} == {(tester, last_of[tester]), (other, newest)}
    assert {(a, n) for a, n, _, _ in kept["algorithm_stats"]} >= {(own, 2), (by_run, 1)}
    assert {(a, e, n) for a, e, n in kept["algorithm_env_stats"] if a in (own, by_run)} == {
        (own, "CartPole-v1", 1), (own, "Acrobot-v1", 1), (by_run, "CartPole-v1", 1)
    }
    assert kept == _rebuilt(db), "what ingest kept is what the evaluations give"
    with db.read() as session:
        cards, _ = index_queries.algorithms_index(session, "evaluations", 1, "/algorithms")
        users, _ = index_queries.users_index(session, "recent", 1, "/users")
    assert [(a.name, a.n_evaluations, a.n_envs) for a in cards][:1] == [("own-alg", 2, 2)]
    assert [u.name for u in users] == ["other", "tester"], "other uploaded last"


_FIXTURE = (
    "INSERT INTO users (seq, name, created) VALUES (1, 'ann', '2024-01-01 00:00:00'), "
    "(2, 'bo', '2024-01-01 00:00:00'), (3, 'idle', '2024-01-01 00:00:00')",
    "INSERT INTO algorithms (seq, id, user_seq, name, created) VALUES (1, 'alg_a', 1, 'a', '2024-01-01 00:00:00'), "
    "(2, 'alg_r', 2, 'r', '2024-01-01 00:00:00')",
    "INSERT INTO benchmark_runs (seq, id, user_seq, benchmark_id, algorithm_seq, tags, status, created) "
    "VALUES (1, 'brun_1', 2, 'B', 2, '{}', 'open', '2024-01-01 00:00:00')",
)


def _evaluation(seq: int, user: int, env: str, algorithm: int | None, run: int | None, solved: bool) -> str:
    return (
        "INSERT INTO evaluations (seq, id, user_seq, env_id, env_listed, algorithm_seq, benchmark_run_seq, trials, "
        "solved, number_episodes, number_timesteps, videos, created) VALUES "
        f"({seq}, 'eval_{seq}', {user}, '{env}', true, {algorithm or 'NULL'}, {run or 'NULL'}, 100, "
        f"{'true' if solved else 'false'}, 150, 3000, '[]', '2024-01-01 00:00:00')"
    )


def _backfills(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        migrate.upgrade(engine, "0008_live_runs")
        with engine.begin() as conn:
            for statement in _FIXTURE:
                conn.execute(sa.text(statement))
            for seq, args in enumerate(
                [(1, "CartPole-v1", 1, None, True), (1, "Acrobot-v1", 1, None, False),
                 (2, "CartPole-v1", None, 1, True), (2, "CartPole-v1", None, None, False),
                 (2, "CartPole-v1", 1, 1, False)],  # names its own algorithm in r's run: a's
                start=1,
            ):
                conn.execute(sa.text(_evaluation(seq, *args)))
        migrate.upgrade(engine)
        with engine.connect() as conn:
            backfilled = _kept(conn)
        assert backfilled == {
            "user_stats": {(1, 2, 1, 2), (2, 3, 1, 5)},
            "algorithm_stats": {(1, 3, 1, 5), (2, 1, 1, 3)},
            "algorithm_env_stats": {(1, "CartPole-v1", 2), (1, "Acrobot-v1", 1), (2, "CartPole-v1", 1)},
        }
        db = Database(url)
        try:
            assert _rebuilt(db) == backfilled
        finally:
            db.dispose()
    finally:
        engine.dispose()


def test_0010_backfills_the_aggregates_of_stored_evaluations_on_sqlite(tmp_path: Path) -> None:
    _backfills(f"sqlite:///{tmp_path / 'old.sqlite3'}")


@pytest.mark.postgres
def test_0010_backfills_the_aggregates_of_stored_evaluations_on_postgresql(postgres_url: str) -> None:
    _backfills(postgres_url)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else f"sqlite:///{tmp_path / 'b.db'}"
    db = Database(url)
    migrate.upgrade(db.engine)
    try:
        yield db
    finally:
        db.dispose()


def test_the_algorithm_order_is_the_order_by_of_the_joined_name_on_every_page(database: Database) -> None:
    """Two algorithms of one name (their rows interleave by upload), case and punctuation in names,
    evaluations of no algorithm (last): each page as the ORDER BY over every row gives it."""
    names = ["beta", "Alpha", "beta", "_x", "alpha", "Zed"]
    now = datetime.now(timezone.utc)
    with database.write() as session:
        users = [User(name=f"u{i}") for i in range(len(names))]
        session.add_all(users)
        session.flush()
        algorithms = [m.Algorithm(id=f"alg_{i}", user_seq=u.seq, name=n) for i, (u, n) in enumerate(zip(users, names))]
        session.add_all(algorithms)
        session.flush()
        session.execute(sa.insert(m.Evaluation), [
            dict(id=f"eval_{i}", user_seq=users[0].seq, env_id="CartPole-v1", created=now, videos=[],
                 algorithm_seq=None if i % 7 == 3 else algorithms[(i * 5) % len(names)].seq)
            for i in range(130)
        ])
    where = m.Evaluation.env_id == "CartPole-v1"
    with database.read() as session:
        expected = list(session.scalars(
            sa.select(m.Evaluation.seq).where(where)
            .outerjoin(m.Algorithm, m.Algorithm.seq == m.Evaluation.algorithm_seq)
            .order_by(*queries.LEADERBOARD_SORTS["algorithm"][1])
        ))
        groups = queries._name_groups(session, where)
        got: list[int] = []
        for number in range(1, 8):
            page = Page(number=number, size=20, total=130, path="/")
            got += queries._seqs_by_algorithm_name(session, where, groups, page)
    assert got == expected
