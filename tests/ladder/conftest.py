"""Fixtures for the ladder tests: GNU Go, and a played 9x9 match folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.envs.board.gtp import find_binary
from palaestra.errors import DependencyNotInstalled
from palaestra.ladder.match import play_match, rules_of_env
from palaestra.ladder.players import parse_player


@pytest.fixture(scope="session")
def gnugo() -> str:
    """The GNU Go binary; the test is skipped, saying why, when it is missing."""
    try:
        return find_binary("gnugo")
    except DependencyNotInstalled as exc:
        pytest.skip(f"GNU Go is not installed (the set-up installs the Debian package gnugo): {exc}")


@pytest.fixture(scope="session")
def go_match(tmp_path_factory: pytest.TempPathFactory, gnugo: str) -> Path:
    """A 4-game 9x9 match (komi 7.5) between GNU Go at level 0 and the random player."""
    folder = tmp_path_factory.mktemp("ladder") / "gnugo-random"
    play_match(rules_of_env("Go9x9-v0", komi=7.5), parse_player("gnugo:0"), parse_player("random"), 4, folder)
    return folder


#: The small tournament's players, strongest first.
TOURNAMENT = ("gnugo:0", "mcts:50", "random")


@pytest.fixture(scope="session")
def tournament(tmp_path_factory: pytest.TempPathFactory, gnugo: str) -> list[Path]:
    """A round robin of 4-game 9x9 matches between GNU Go level 0, MCTS with 50 simulations and random."""
    from palaestra.ladder.anchors import play_anchors

    root = tmp_path_factory.mktemp("tournament")
    return play_anchors(rules_of_env("Go9x9-v0", komi=7.5), root, 4, TOURNAMENT[::-1], move_time=30)
