"""Graceful shutdown: on SIGTERM the server stops accepting, lets requests in flight finish for at most
``--graceful-timeout`` seconds, then exits with 143; a client holding a half-sent request cannot keep
it alive."""

from __future__ import annotations

import json
import signal
import socket
import time

import pytest

from tests.scoreboard.server_helpers import ScoreboardServer

#: How long the test waits for an exit that the server's bound says comes within a second or two:
#: generous for a loaded machine, far short of "never" (the server it replaces never exited).
EXIT_WAIT_S = 60


def request_head(server: ScoreboardServer, path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {server.api_key}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def read_status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ")[1])


@pytest.mark.slow
def test_sigterm_lets_a_request_in_flight_finish_then_exits_143(scoreboard_factory):
    server = scoreboard_factory(args=["--graceful-timeout", "30"])
    body = json.dumps({"purpose": "episode_batch"}).encode()
    assert server.proc is not None
    with socket.create_connection(("127.0.0.1", server.port)) as client:
        client.sendall(request_head(server, "/v1/files", len(body)) + body[:5])
        time.sleep(0.5)  # the server has the head and is waiting for the rest of the body
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        client.sendall(body[5:])
        assert read_status(client) == 201
    assert server.proc.wait(timeout=EXIT_WAIT_S) == 143
    assert "palaestra server: terminated" in server.log()


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_a_half_sent_request_does_not_keep_a_stopping_server_alive(scoreboard_factory, workers):
    server = scoreboard_factory(args=["--graceful-timeout", "1", "--workers", str(workers)])
    assert server.proc is not None
    half_body = socket.create_connection(("127.0.0.1", server.port))
    half_body.sendall(request_head(server, "/v1/files", 100) + b'{"purp')
    half_head = socket.create_connection(("127.0.0.1", server.port))
    half_head.sendall(b"POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
    try:
        time.sleep(0.5)
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=EXIT_WAIT_S) == 143
    finally:
        half_body.close()
        half_head.close()
    # the request that was cut off is logged once, as cut off, not as a failure with a traceback
    assert "Traceback" not in server.log()
