"""Request bodies are limited before they are read: 413 past the route's limit (JSON routes:
``MAX_JSON_BODY_BYTES``; upload forms: the configured maximum), with or without a Content-Length,
and authentication comes before a JSON body is read at all. Memory, not time, is what is measured:
the server's RSS under 20 concurrent 200 MiB anonymous bodies."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx

from palaestra.scoreboard.server.guards.body_limits import MAX_JSON_BODY_BYTES
from tests.scoreboard.server_helpers import ScoreboardServer, error_of

MIB = 1024 * 1024
BODY_BYTES = 200 * MIB


class Stream:
    """A body of ``size`` bytes made as it is sent (never held in memory); counts what was sent."""

    def __init__(self, size: int = BODY_BYTES, chunk: int = 64 * 1024) -> None:
        self.size, self.chunk, self.sent = size, chunk, 0

    def __iter__(self) -> Iterator[bytes]:
        block = b"{" * self.chunk
        while self.sent < self.size:
            self.sent += self.chunk
            yield block


def post_stream(url: str, stream: Stream, headers: dict[str, str], declare_length: bool) -> httpx.Response:
    if declare_length:
        headers = {**headers, "Content-Length": str(stream.size)}
    return httpx.post(url, content=iter(stream), headers=headers, timeout=60)


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_20_concurrent_200_mib_anonymous_bodies_grow_the_server_by_less_than_50_mb(
    fresh_scoreboard_server: ScoreboardServer,
) -> None:
    server = fresh_scoreboard_server
    assert server.proc is not None
    pid = server.proc.pid
    routes = ["/v1/files", "/v1/evaluations", "/v1/benchmark_runs", "/v1/algorithms", "/v1/uploads/file_none"]
    before = rss_mib(pid)
    peak = before
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.wait(0.02):
            peak = max(peak, rss_mib(pid))

    watcher = threading.Thread(target=watch)
    watcher.start()
    streams = [Stream() for _ in range(20)]
    try:
        with ThreadPoolExecutor(20) as pool:
            answers = list(
                pool.map(
                    lambda i: post_stream(server.url + routes[i % len(routes)], streams[i], {}, i % 2 == 0),
                    range(20),
                )
            )
    finally:
        done.set()
        watcher.join()
    for r in answers:  # no key: 401; a declared 200 MiB: 413 at once; an unknown upload URL: 404
        assert r.status_code in (401, 404, 413), r.text
        error_of(r, r.status_code)
    assert peak - before < 50, f"the server grew from {before:.0f} to {peak:.0f} MiB"
    # the server closed each connection after answering: nobody got to send their 200 MiB
    assert max(s.sent for s in streams) < BODY_BYTES // 4


def test_an_oversize_json_body_is_413_after_reading_at_most_the_limit(
    scoreboard_server: ScoreboardServer,
) -> None:
    for declare_length in (False, True):  # chunked, then with a Content-Length
        stream = Stream()
        r = post_stream(
            f"{scoreboard_server.url}/v1/files", stream, scoreboard_server.headers(), declare_length
        )
        body = error_of(r, 413)
        assert f"({MAX_JSON_BODY_BYTES} bytes)" in body["detail"] and "/v1/files" in body["detail"]
        assert stream.sent < BODY_BYTES // 4


def test_a_body_under_the_limit_is_read_and_validated(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        padded = '{"purpose": "episode_batch"' + " " * (MAX_JSON_BODY_BYTES - 100) + "}"
        assert c.post("/v1/files", content=padded).status_code == 201
        error_of(c.post("/v1/files", content=padded + " " * 200), 413)


def test_authentication_comes_before_the_body_is_read(scoreboard_server: ScoreboardServer) -> None:
    """A client without a key learns that first, whatever it sent (the body is never parsed)."""
    for body in (b"{not json", b"[" * 100_000, b'{"purpose": "episode_batch"}'):
        r = httpx.post(f"{scoreboard_server.url}/v1/files", content=body)
        assert "API key" in error_of(r, 401)["detail"]
        r = httpx.post(
            f"{scoreboard_server.url}/v1/evaluations",
            content=body,
            headers={"Authorization": "Bearer pal_nope"},
        )
        assert "Invalid API key" in error_of(r, 401)["detail"]
