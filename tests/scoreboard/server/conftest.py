"""Fixtures of the service tests: a server with small limits (``limited_server``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scoreboard.server_helpers import ScoreboardServer


@pytest.fixture(scope="session")
def limited_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoreboardServer]:
    """A server with small upload caps, a 2-second upload URL lifetime and 30 requests a minute per key."""
    server = ScoreboardServer(
        tmp_path_factory.mktemp("scoreboard-limited"),
        env={
            "PALAESTRA_MAX_EPISODE_BATCH_BYTES": "20000",
            "PALAESTRA_MAX_VIDEO_ARCHIVE_BYTES": "200000",
            "PALAESTRA_MAX_ARCHIVE_MEMBER_BYTES": "100000",
            "PALAESTRA_MAX_ARCHIVE_EXPANDED_BYTES": "150000",
            "PALAESTRA_UPLOAD_TTL_S": "2",
            "PALAESTRA_RATE_LIMIT_PER_MINUTE": "30",
        },
    ).start()
    yield server
    server.stop()
