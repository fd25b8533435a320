"""Anonymous reads are rate-limited per client address, with the count shared by every server on the
database (SQLite and PostgreSQL): 429 with ``Retry-After`` above the limit, for the API and the pages
alike; a valid API key or a signed-in browser is not counted, junk credentials are, and health and
static files never are."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from palaestra.scoreboard.server.core.config import DEFAULT_ANONYMOUS_READS_PER_MINUTE, resolve_config
from palaestra.scoreboard.server.guards.read_limits import READ_WINDOW_S
from tests.scoreboard.server_helpers import error_of

LIMIT = 6


def start_of_a_window(margin_s: float = 20) -> None:
    """Wait for a fresh counting window if this one ends within ``margin_s`` (so the counts of the
    test all fall in one window)."""
    left = READ_WINDOW_S - time.time() % READ_WINDOW_S
    if left < margin_s:
        time.sleep(left + 0.1)


@pytest.mark.slow  # it waits for the next minute's window
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_anonymous_reads_are_limited_per_address_across_servers(scoreboard_factory, tmp_path, request, backend):
    database_url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    env = {"PALAESTRA_RATE_LIMIT_ANONYMOUS_READS": str(LIMIT)}
    data_dir = tmp_path / "shared"  # SQLite: one database file; PostgreSQL: one database
    a = scoreboard_factory(database_url=database_url, env=env, data_dir=data_dir)
    b = scoreboard_factory(database_url=database_url, env=env, data_dir=data_dir)
    b.create_user("reader", password="correct horse battery")
    start_of_a_window()
    with b.signed_in_client("reader", "correct horse battery") as browser:  # read /login: one read
        # LIMIT reads in all, pages and API, spread over both servers
        for server, path in [(a, "/"), (b, "/v1/envs"), (a, "/envs/CartPole-v1"), (b, "/users"),
                             (a, "/v1/evaluations")][: LIMIT - 1]:  # fmt: skip
            assert httpx.get(server.url + path).status_code in (200, 404), path
        for server, path in [(a, "/v1/envs"), (b, "/")]:
            refused = httpx.get(server.url + path)
            detail = error_of(refused, 429)["detail"]
            assert "Too many requests from 127.0.0.1" in detail and "PALAESTRA_RATE_LIMIT_ANONYMOUS_READS" in detail
            assert 1 <= int(refused.headers["Retry-After"]) <= READ_WINDOW_S
        junk = httpx.get(f"{a.url}/", headers={"Authorization": "Bearer pal_made_up"})
        assert junk.status_code == 429  # invented credentials are no way around the limit
        # not counted: a valid key, a signed-in browser, health, static files, writes
        assert httpx.get(f"{a.url}/v1/envs", headers=a.headers()).status_code == 200
        assert browser.get("/").status_code == 200 and browser.get("/v1/envs").status_code == 200
        assert httpx.get(f"{b.url}/v1/health").status_code == 200
        assert httpx.get(f"{b.url}/assets/palaestra.css").status_code == 200
        assert httpx.post(f"{a.url}/v1/files", json={"purpose": "episode_batch"}).status_code == 401
        # the next window lets the address read again
        time.sleep(READ_WINDOW_S - time.time() % READ_WINDOW_S + 0.1)
        assert httpx.get(f"{b.url}/v1/envs").status_code == 200


def test_the_default_is_far_above_a_person_browsing() -> None:
    assert resolve_config(environ={}).anonymous_reads_per_minute == DEFAULT_ANONYMOUS_READS_PER_MINUTE >= 600
    assert resolve_config(environ={"PALAESTRA_RATE_LIMIT_ANONYMOUS_READS": "0"}).anonymous_reads_per_minute == 0


def test_an_anonymous_read_never_waits_behind_another_writer_and_its_hit_still_counts(tmp_path) -> None:
    # On SQLite a read's hit is a write on the event loop: behind a long transaction (a 4 MB ladder
    # upload's store) it held every request. It is answered at once, and its hit counted later.
    from palaestra.scoreboard.server.core.database import WriterBusy
    from tests.server_process import in_process_server

    with in_process_server(tmp_path, {"PALAESTRA_RATE_LIMIT_ANONYMOUS_READS": "3"}) as server:
        holding, release = threading.Event(), threading.Event()

        def long_write() -> None:
            with server.state.db.write():
                holding.set()
                release.wait(60)

        writer = threading.Thread(target=long_write)
        writer.start()
        try:
            assert holding.wait(30)
            with pytest.raises(WriterBusy), server.state.db.write(wait=False):  # what the reads' hits meet
                pass
            answers = [httpx.get(f"{server.url}/v1/envs", timeout=120).status_code for _ in range(2)]
            assert not release.is_set() and writer.is_alive(), "the reads were answered while the write went on"
            assert answers == [200, 200]
        finally:
            release.set()
            writer.join()
        assert httpx.get(f"{server.url}/v1/envs").status_code == 200  # the third: the two held back go with it
        refused = httpx.get(f"{server.url}/v1/envs")
        assert "Too many requests from 127.0.0.1" in error_of(refused, 429)["detail"]
