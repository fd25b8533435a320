"""The one way tests start a server (:mod:`tests.server_process`) passes only for its own process."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server_process import FakeClock, ServerProcess, free_port, listens_on


class _Healthy(http.server.BaseHTTPRequestHandler):
    """Answers 200 to everything, as a server of another test would."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def impostor_port() -> Iterator[int]:
    """A port on which this (test) process answers ``/v1/health`` with 200."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Healthy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_child_that_died_does_not_pass_though_another_process_answers_on_its_port(impostor_port: int) -> None:
    dead = ServerProcess(port=impostor_port, command=[sys.executable, "-c", "import sys; sys.exit(3)"])
    with pytest.raises(RuntimeError, match="exited with 3"):
        dead.start()


def test_a_live_child_that_does_not_listen_does_not_pass_though_another_process_answers(impostor_port: int) -> None:
    idle = ServerProcess(
        port=impostor_port, command=[sys.executable, "-c", "import time; time.sleep(120)"], startup_timeout_s=2
    )
    try:
        with pytest.raises(RuntimeError, match="another process answers on its port"):
            idle.start()
    finally:
        idle.stop()
    assert not idle.running


def test_a_real_server_passes_listening_itself_and_stops(tmp_path: Path) -> None:
    with ServerProcess(["--data-dir", str(tmp_path / "board")], log_path=tmp_path / "server.log") as server:
        assert server.proc is not None and listens_on(server.proc.pid, server.port)
    assert not server.running
    assert "palaestra scoreboard on" in (tmp_path / "server.log").read_text()


def test_a_fake_clock_stands_still_until_it_is_advanced() -> None:
    clock = FakeClock()
    before, moment = clock.monotonic(), clock.time()
    assert (clock.monotonic(), clock.time()) == (before, moment)
    clock.advance(90)
    assert clock.monotonic() == before + 90 and clock.time() == moment + 90
    assert clock.now().timestamp() == pytest.approx(moment + 90)
