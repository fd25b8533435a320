"""Fixtures for the ladder tests: a played 9x9 match folder (GNU Go's fixture is the suite's: tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.ladder.match import play_match, rules_of_env
from palaestra.ladder.players import parse_player


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
