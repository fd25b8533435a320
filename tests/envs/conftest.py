"""Fixtures for the board-game tests: GNU Go, Pachi, the fake GTP engine, scripted opponents."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from palaestra.envs.board.gtp import find_binary
from palaestra.envs.board.rules import BoardGame
from palaestra.errors import DependencyNotInstalled

FAKE_ENGINE = Path(__file__).with_name("fake_gtp_engine.py")


@pytest.fixture(scope="session")
def gnugo() -> str:
    """The GNU Go binary (PATH or /usr/games); the test is skipped, saying why, when it is missing."""
    try:
        return find_binary("gnugo")
    except DependencyNotInstalled as exc:
        pytest.skip(f"GNU Go is not installed (the set-up installs the Debian package gnugo): {exc}")


@pytest.fixture(scope="session")
def pachi_binary() -> str:
    """The Pachi binary that the set-up builds (scripts/build-pachi.sh); skipped, saying why, when missing."""
    try:
        return find_binary("pachi")
    except DependencyNotInstalled as exc:
        pytest.skip(f"Pachi is not built here (the set-up builds it where a C compiler exists): {exc}")


@pytest.fixture
def fake_engine(tmp_path: Path) -> Callable[[str], list[str]]:
    """``fake_engine(mode)`` -> the command line of the fake GTP engine, logging to tmp_path/gtp.log."""

    def command(mode: str) -> list[str]:
        return [sys.executable, str(FAKE_ENGINE), mode, str(tmp_path / "gtp.log")]

    return command


def _scripted(game: BoardGame, moves: list[str]) -> Callable[..., int]:
    """An opponent policy that plays ``moves`` (strings like 'C3', 'pass') in order."""
    queue: Iterator[str] = iter(moves)

    def policy(observation: object, mask: object) -> int:
        return game.string_to_action(next(queue))

    return policy


@pytest.fixture
def scripted() -> Callable[[BoardGame, list[str]], Callable[..., int]]:
    """``scripted(game, ['C3', 'pass', ...])``: an opponent policy playing those moves in order."""
    return _scripted


@pytest.fixture
def alive() -> Callable[[int], bool]:
    """``alive(pid)``: whether that process still runs."""
    return _process_alive


def _process_alive(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - not Linux
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
