"""A database outage is a 503 with ``Retry-After`` on every route (the API and the pages), never a
500, and ``palaestra upload`` rides it out within its retry budget.

The outages are real: a PostgreSQL database that stops taking connections (its sessions ended, as a
restart or failover ends them), and a SQLite database locked by another program for longer than the
busy timeout."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server import api
from palaestra.scoreboard.server.core.outages import database_unavailable
from palaestra.scoreboard.server.web import account_routes, benchmark_routes, downloads, routes
from tests.scoreboard.client.client_helpers import record_cartpole
from tests.scoreboard.conftest import PG_ADMIN_URL
from tests.scoreboard.server_helpers import ScoreboardServer, form_token, upload_evaluation, video_archive

#: Routes that never touch the database (the API's own description): they answer as usual.
NO_DATABASE = {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}


@contextlib.contextmanager
def postgres_outage(database_url: str) -> Iterator[None]:
    """The database refuses new connections and its open ones are ended, until the block ends."""
    import psycopg

    name = sa.make_url(database_url).database
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        conn.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
    try:
        yield
    finally:
        end_postgres_outage(database_url)


def end_postgres_outage(database_url: str) -> None:
    import psycopg

    name = sa.make_url(database_url).database
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')


def every_route(ids: dict[str, str]) -> list[tuple[str, str]]:
    """``(method, path)`` of every route of the API and the pages, path parameters filled from ``ids``."""
    found = []
    for router in (*api.ROUTERS, routes.router, downloads.router, benchmark_routes.router, account_routes.router):
        prefix = "/v1" if router in api.ROUTERS else ""
        for route in router.routes:
            path = prefix + route.path  # type: ignore[attr-defined]
            for name, value in ids.items():
                path = path.replace("{" + name + "}", value).replace("{" + name + ":path}", value)
            assert "{" not in path, f"no value for a parameter of {path}"
            found += [(method, path) for method in sorted(route.methods - {"HEAD"})]  # type: ignore[attr-defined]
    return found


def assert_unavailable(r: httpx.Response, what: str) -> None:
    assert r.status_code == 503, f"{what}: {r.status_code} {r.text[:300]}"
    assert int(r.headers["Retry-After"]) >= 1, what


#: Answers that need no database, as the sweep's requests get them (a form without its CSRF token):
#: the same with the database down. Every read needs it (the anonymous-read limit counts it there, or
#: looks its key up).
WITHOUT_DATABASE = {
    ("POST", "/login"): 403, ("POST", "/logout"): 403, ("POST", "/invite/t"): 403,
    ("POST", "/settings/profile/keys"): 403, ("POST", "/settings/profile/keys/key_x/revoke"): 403,
}  # fmt: skip


def test_a_postgresql_outage_is_503_with_retry_after_on_every_route(
    scoreboard_factory: Any, postgres_url: str
) -> None:
    server: ScoreboardServer = scoreboard_factory(database_url=postgres_url)
    server.create_user("walker", password="correct horse battery")
    # a key first used in the outage: the server cannot have it cached, so must look it up
    sweeper = server.create_user("sweeper")
    with server.client() as c:
        ev = upload_evaluation(c, videos=video_archive(1))
    ids = {
        "evaluation_id": ev["id"], "env_id": "CartPole-v1", "name": "tester", "algorithm_id": "alg_x",
        "run_id": "brun_x", "benchmark_id": "ClassicControl2-v1", "file_id": "file_x", "id": "x",
        "video_name": "v", "token": "t", "key_id": "key_x", "match_id": "lmatch_x", "game_id": "lgame_x",
        "ladder": "go9", "seq": "1", "index": "0", "live_id": "live_x",
        "job_id": "ajob_x",
    }  # fmt: skip
    with server.signed_in_client("walker", "correct horse battery") as browser, httpx.Client(
        base_url=server.url, timeout=60
    ) as signing_in:
        login_token = form_token(signing_in.get("/login").text)
        with postgres_outage(postgres_url):
            checked = _sweep(server, sweeper, every_route(ids))
            # the requests of the sweep that an answer without the database stopped, made whole
            for method, path, kwargs in [
                ("POST", "/v1/files", {"json": {"purpose": "episode_batch"}}),
                ("POST", "/v1/evaluations", {"json": {"env": "CartPole-v1", "training_episode_batch": "file_x"}}),
                ("POST", "/v1/benchmark_runs", {"json": {"benchmark_id": "ClassicControl2-v1"}}),
                ("GET", "/search?q=Cart", {}),
                ("GET", f"/compare?e={ev['id']}", {}),
            ]:
                r = httpx.request(method, server.url + path, headers=server.headers(sweeper), timeout=60, **kwargs)
                assert_unavailable(r, f"{method} {path}")
            # a signed-in browser: its session is in the database
            for path in ("/", "/settings/profile", "/login"):
                assert_unavailable(browser.get(path, headers={"Accept": "text/html"}), f"signed in: GET {path}")
            form = {"name": "walker", "password": "correct horse battery", "csrf_token": login_token}
            assert_unavailable(signing_in.post("/login", data=form), "POST /login")
    assert checked > 40
    log = server.log_path.read_text()
    outage_lines = [line for line in log.splitlines() if "Database unavailable in " in line]
    assert outage_lines and "is not currently accepting connections" in log  # one line (repeats collapsed)
    assert "Traceback" not in log, log[-3000:]
    assert httpx.get(f"{server.url}/evaluations/{ev['id']}", timeout=60).status_code == 200  # back


def _sweep(server: ScoreboardServer, key: str, requests: list[tuple[str, str]]) -> int:
    """Send each request as an API client and as a browser; every answer is a 503 with Retry-After
    (JSON, or the error page for a browser's page), or the one it gets without the database."""
    checked = 0
    for method, path in requests:
        if path in NO_DATABASE:
            continue
        for accept in ("application/json", "text/html"):
            r = httpx.request(method, server.url + path, headers={**server.headers(key), "Accept": accept}, timeout=60)
            what = f"{method} {path} ({accept})"
            assert r.status_code != 500, what
            if (method, path) in WITHOUT_DATABASE:
                assert r.status_code == WITHOUT_DATABASE[method, path], f"{what}: {r.status_code} {r.text[:300]}"
                continue
            assert_unavailable(r, what)
            if accept == "text/html" and not path.startswith("/v1"):
                assert r.headers["content-type"].startswith("text/html")
                assert "Temporarily unavailable" in r.text
            elif path == "/v1/health":
                assert "the database failed its probe" in r.json()["detail"]
            elif path.startswith("/v1"):
                assert "database is unavailable" in r.json()["detail"], what
            checked += 1
    return checked


def test_the_upload_client_rides_out_an_outage_within_its_retry_budget(
    scoreboard_factory: Any, postgres_url: str, tmp_path: Path
) -> None:
    server: ScoreboardServer = scoreboard_factory(database_url=postgres_url)
    run = record_cartpole(tmp_path / "run", episodes=3)
    env = {**server.env, "PALAESTRA_SERVER": server.url, "PALAESTRA_API_KEY": server.api_key}
    with postgres_outage(postgres_url):
        upload = subprocess.Popen(
            [sys.executable, "-m", "palaestra", "upload", str(run), "--retry-budget", "60"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while "Database unavailable" not in server.log_path.read_text():  # the client met the outage
            assert upload.poll() is None and time.monotonic() < deadline, upload.communicate()
            time.sleep(0.1)
        time.sleep(2)
    out, err = upload.communicate(timeout=120)
    assert upload.returncode == 0, err
    evaluation_id = out.strip().splitlines()[-1]
    r = httpx.get(f"{server.url}/v1/evaluations/{evaluation_id}", headers=server.headers(), timeout=30)
    assert r.status_code == 200 and r.json()["env"] == "CartPole-v1"


def test_a_sqlite_database_locked_past_the_busy_timeout_is_503(scoreboard_factory: Any) -> None:
    server: ScoreboardServer = scoreboard_factory(env={"PALAESTRA_SQLITE_BUSY_TIMEOUT_S": "1"})
    database = server.data_dir / "scoreboard.sqlite3"
    other = sqlite3.connect(database, timeout=5, isolation_level=None)  # another program, say a backup
    try:
        other.execute("BEGIN EXCLUSIVE")
        with server.client() as c:
            r = c.post("/v1/files", json={"purpose": "episode_batch"})
        assert_unavailable(r, "POST /v1/files")
        assert "database is unavailable" in r.json()["detail"]
        other.execute("ROLLBACK")
    finally:
        other.close()
    with server.client() as c:
        assert c.post("/v1/files", json={"purpose": "episode_batch"}).status_code == 201
    assert "Database unavailable in POST /v1/files" in server.log_path.read_text()


def test_faults_that_are_not_outages_are_not_taken_for_one() -> None:
    locked = sqlite3.connect(":memory:")
    try:
        locked.execute("SELECT * FROM no_such_table")
    except sqlite3.OperationalError as e:
        assert not database_unavailable(sa.exc.OperationalError("SELECT", {}, e))  # a bug: a 500
    assert database_unavailable(sa.exc.TimeoutError("QueuePool limit of size 10 overflow 40 reached"))
    with pytest.raises(sqlite3.OperationalError) as caught:
        sqlite3.connect("/nonexistent-folder/db.sqlite3").execute("SELECT 1")
    assert database_unavailable(sa.exc.OperationalError("SELECT 1", {}, caught.value))
