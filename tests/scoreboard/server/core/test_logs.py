"""The server's log: a timestamp on every line, one access line per request with its request id, one
traceback per failure, and a database outage that does not flood the log."""

from __future__ import annotations

import logging
import re

import httpx
import pytest

from palaestra.scoreboard.server.core.logs import SHOWN_REPEATS, CollapseRepeats
from tests.scoreboard.server_helpers import create_file, error_of, wait_until

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")


def access_lines(log: str, request_id: str) -> list[str]:
    return [line for line in log.splitlines() if " palaestra.access: " in line and request_id in line]


def test_every_request_gets_one_timestamped_access_line_with_its_request_id(fresh_scoreboard_server):
    server = fresh_scoreboard_server
    with server.client() as c:
        ok = c.get("/v1/files", params={"limit": 1})
        missing = c.get("/v1/evaluations/eval_nope")
    body = error_of(missing, 404)
    assert body["request_id"] == missing.headers["request-id"]
    wait_until(lambda: access_lines(server.log_path.read_text(), missing.headers["request-id"]))
    log = server.log_path.read_text()
    [line] = access_lines(log, ok.headers["request-id"])
    assert LINE.match(line) and '127.0.0.1 "GET /v1/files?limit=1" 200 ' in line
    [line] = access_lines(log, missing.headers["request-id"])
    assert '"GET /v1/evaluations/eval_nope" 404 ' in line
    lines = [line for line in log.splitlines() if line.strip()]
    assert lines and all(LINE.match(line) for line in lines), [x for x in lines if not LINE.match(x)][:3]


@pytest.mark.slow
def test_a_database_outage_is_logged_without_traceback_and_does_not_flood(scoreboard_factory, postgres_url):
    import psycopg

    from tests.scoreboard.conftest import PG_ADMIN_URL

    server = scoreboard_factory(database_url=postgres_url)
    name = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        try:
            with httpx.Client(base_url=server.url, timeout=30) as c:
                failed = [c.get("/v1/evaluations", params={"limit": 1}) for _ in range(40)]
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    for r in failed:  # an outage is a 503 to retry (palaestra.scoreboard.server.guards.outage), not a 500
        assert error_of(r, 503)["request_id"] == r.headers["request-id"] and r.headers["Retry-After"]
    wait_until(lambda: access_lines(server.log_path.read_text(), failed[-1].headers["request-id"]))
    log = server.log_path.read_text()
    errors = [line for line in log.splitlines() if " ERROR palaestra" in line]
    # Two failures: the pooled connection that was killed, then "not accepting connections". Each is
    # logged in one line (the cause is known: no traceback), then a few repeats; the rest are counted.
    assert all("Database unavailable in GET /v1/evaluations" in line for line in errors)
    assert 1 <= len(errors) <= 2 + 2 * SHOWN_REPEATS < len(failed)
    assert "Traceback" not in log
    assert all(len(access_lines(log, r.headers["request-id"])) == 1 for r in failed)
    # and the server works again once the database is back
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.get("/v1/evaluations", params={"limit": 1}).status_code == 200


def record(
    created: float, exc: Exception | None = None, msg: str = "Unexpected error in GET / (%s)"
) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc else None
    r = logging.LogRecord("palaestra.scoreboard", logging.ERROR, __file__, 1, msg, ("req_x",), exc_info)
    r.created = created
    return r


def test_repeats_of_a_failure_lose_their_traceback_then_are_counted_and_reported_after_the_window():
    collapse = CollapseRepeats(window_s=60, shown=2)
    outage = ConnectionRefusedError("connection refused")
    first = record(0.0, outage)
    assert collapse.filter(first) and first.exc_info is not None
    repeats = [record(1.0 + i, outage) for i in range(10)]
    passed = [r for r in repeats if collapse.filter(r)]
    assert len(passed) == 2 and all(r.exc_info is None for r in passed)
    assert "ConnectionRefusedError again (traceback logged above)" in passed[0].getMessage()
    # another failure is not collapsed with it
    assert collapse.filter(record(5.0, ValueError("bad"))) and collapse.filter(record(5.0, KeyError("k")))
    later = record(100.0, outage)
    assert collapse.filter(later) and later.exc_info is not None
    assert "[and 8 more like it in the last 60 s]" in later.getMessage()
    # plain info lines (the access log) are never collapsed
    info = logging.LogRecord("palaestra.access", logging.INFO, __file__, 1, "GET /", (), None)
    assert all(collapse.filter(info) for _ in range(100))


def test_a_client_that_goes_away_mid_upload_is_an_access_line_not_a_failure(fresh_scoreboard_server):
    import socket
    from urllib.parse import urlparse

    server = fresh_scoreboard_server
    with server.client() as c:
        form = create_file(c, "episode_batch")
    path = urlparse(form["post_url"]).path
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: multipart/form-data; boundary=zzz\r\nContent-Length: 100000\r\n\r\n"
    )
    part = b'--zzz\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\n{"data_sources'
    with socket.create_connection(("127.0.0.1", server.port)) as client:
        client.sendall(head.encode() + part)
    wait_until(lambda: f'"POST {path}" ' in server.log_path.read_text())
    log = server.log_path.read_text()
    [line] = [x for x in log.splitlines() if f'"POST {path}" ' in x]
    assert f'"POST {path}" client gone ' in line
    assert "Traceback" not in log and " ERROR " not in log
