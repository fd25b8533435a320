"""Fixtures of the upload-client tests: an isolated configuration, a scripted server, the CLI's logging."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scoreboard.client.client_helpers import CONFIG_ENV_VARS, ScriptedServer


@pytest.fixture
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No scoreboard variables in the environment and a private config dir; returns the config file path."""
    for name in CONFIG_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    from palaestra.scoreboard.client import config_path

    path = config_path()
    assert str(path).startswith(str(tmp_path)), path
    return path


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def cli_logging() -> Iterator[None]:
    """``palaestra.cli.main`` adds a stderr handler to the ``palaestra`` logger on every call; take it off
    again, so that a later test does not log into a closed capture stream."""
    logger = logging.getLogger("palaestra")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]
