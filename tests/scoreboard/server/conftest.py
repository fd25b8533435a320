"""Fixtures of the service tests: a server with small limits (``limited_server``), and one served from
this process (``in_process_server``)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.scoreboard.server_helpers import ScoreboardServer
from tests.server_process import InProcessServer
from tests.server_process import in_process_server as in_process_server_at


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


@pytest.fixture
def in_process_server(tmp_path: Path) -> Iterator[InProcessServer]:
    """A SQLite + file-store scoreboard of this test's own, in this process (``EmbeddedScoreboard``),
    on a :class:`~tests.server_process.FakeClock` (``.clock.advance(seconds)``)."""
    with in_process_server_at(tmp_path / "scoreboard") as server:
        yield server


@pytest.fixture
def in_process_factory(tmp_path: Path) -> Iterator[Callable[..., InProcessServer]]:
    """``start(**environ)``: an in-process scoreboard configured by ``PALAESTRA_*`` variables (such as
    ``PALAESTRA_UPLOAD_TTL_S="2"``), each on a FakeClock of its own; all stopped at the end of the test."""
    numbers = itertools.count()
    with contextlib.ExitStack() as servers:

        def start(**environ: str) -> InProcessServer:
            data_dir = tmp_path / f"in-process-{next(numbers)}"
            return servers.enter_context(in_process_server_at(data_dir, environ))

        yield start
