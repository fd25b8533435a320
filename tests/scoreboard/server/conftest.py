"""Fixtures of the service tests: a server with small limits (``limited_server``), and one served from
this process (``in_process_server``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from palaestra.scoreboard.server import auth
from palaestra.scoreboard.server.app import create_app
from palaestra.scoreboard.server.config import resolve_config
from palaestra.scoreboard.server.embedded import EmbeddedScoreboard
from palaestra.scoreboard.server.state import ServerState, build_state
from tests.scoreboard.server_helpers import ScoreboardServer, free_port


@pytest.fixture(scope="session")
def limited_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoreboardServer]:
    """A server with small upload caps, a 2-second upload URL lifetime and 30 files an hour per user."""
    server = ScoreboardServer(
        tmp_path_factory.mktemp("scoreboard-limited"),
        env={
            "PALAESTRA_MAX_EPISODE_BATCH_BYTES": "20000",
            "PALAESTRA_MAX_VIDEO_ARCHIVE_BYTES": "200000",
            "PALAESTRA_MAX_ARCHIVE_MEMBER_BYTES": "100000",
            "PALAESTRA_MAX_ARCHIVE_EXPANDED_BYTES": "150000",
            "PALAESTRA_UPLOAD_TTL_S": "2",
            "PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR": "30",
        },
    ).start()
    yield server
    server.stop()


@dataclass
class InProcessServer:
    """The scoreboard served from a thread of the test process: its code can be watched or changed."""

    url: str
    api_key: str
    state: ServerState

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.api_key}"}, timeout=60)


@pytest.fixture
def in_process_server(tmp_path: Path) -> Iterator[InProcessServer]:
    """A SQLite + file-store scoreboard of this test's own, in this process (``EmbeddedScoreboard``)."""
    config = resolve_config(data_dir=tmp_path / "scoreboard", port=free_port(), environ={})
    state = build_state(config)
    server = EmbeddedScoreboard(config, app=create_app(state=state)).start()
    try:
        yield InProcessServer(server.url, auth.create_user(state.db, "tester")[1], state)
    finally:
        server.stop()
        state.close()
