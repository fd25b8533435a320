"""The CPython layer that palaestra's two board cores share (``_boardcore_methods.h``), tested once for
both games against OpenSpiel: the module constants, what the cores refuse, and the random opponent's
draw in play_random and step_random. The rules of each game are tested in test_go_core.py and
test_hex_core.py."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from palaestra.envs.board import rules
from palaestra.envs.board.rules import GoGame, HexGame
from tests.envs.board_cores import PAIRS

GAMES = ["go", "hex"]
CORE_MODULES = {"go": "palaestra.envs.board._goboard", "hex": "palaestra.envs.board._hexboard"}
CONSTANTS = ("ENDED_AFTER_MOVE", "ENDED_AFTER_REPLY", "STEP_RESIGNED", "STEP_ILLEGAL", "STEP_ENDED")


def make_game(name: str, size: int) -> GoGame | HexGame:
    return GoGame(size) if name == "go" else HexGame(size)


def planes_per_board(game: GoGame | HexGame) -> int:
    return (4 if isinstance(game, GoGame) else 3) * game.num_cells


@pytest.mark.parametrize("name", GAMES)
def test_the_constants_are_the_rules(name: str) -> None:
    core = pytest.importorskip(CORE_MODULES[name], reason=f"the {name} board core is not built")
    for constant in CONSTANTS:
        assert getattr(core, constant) == getattr(rules, constant)


@pytest.mark.parametrize("name", GAMES)
def test_the_core_refuses_what_openspiel_refuses(name: str) -> None:
    pytest.importorskip(CORE_MODULES[name], reason=f"the {name} board core is not built")
    game = make_game(name, 5)
    pair: Any = PAIRS[name](game)
    pair.play(12)
    with pytest.raises(ValueError, match="not a legal engine action"):
        pair.core.play(0, 12)  # taken
    with pytest.raises(ValueError, match="not a legal engine action"):
        pair.core.play(0, len(pair.legal) - 1)  # resign is not the engine's
    with pytest.raises(IndexError, match="board 1 out of range"):
        pair.core.play(1, 0)
    with pytest.raises(ValueError, match=r"not a float in \[0, 1\)"):
        pair.core.play_random(0, 0, lambda: 1.0)
    pair.state.apply_action(0)  # the agent's move before the bad draw stands, and nothing else changed
    pair.compare()
    row, floats = len(pair.legal), planes_per_board(game)
    with pytest.raises(ValueError, match="planes"):
        game.board_core(2, bytearray(2 * row), np.zeros(2 * floats, np.float64))
    with pytest.raises(ValueError, match="legal"):
        game.board_core(2, bytearray(10), np.zeros(2 * floats, np.float32))


@pytest.mark.parametrize("name", GAMES)
def test_play_random_picks_as_the_random_opponent_does(name: str) -> None:
    # The reply is the int(r * n)-th of OpenSpiel's legal_actions(), as RandomOpponent.act() picks.
    pytest.importorskip(CORE_MODULES[name], reason=f"the {name} board core is not built")
    game = make_game(name, 9)
    for seed in range(10):
        pair: Any = PAIRS[name](game)
        rng, mirror = random.Random(seed), random.Random(seed)
        while True:
            legal = [a for a in pair.state.legal_actions() if a != game.num_cells] or [game.num_cells]
            action = legal[int(rng.random() * len(legal))]  # (Go: no pass, unless it is all there is)
            mirror.random()
            reply = pair.core.play_random(0, action, rng.random)
            pair.state.apply_action(action)
            if pair.state.is_terminal():
                assert reply == rules.ENDED_AFTER_MOVE
                break
            options = pair.state.legal_actions()
            expected = options[int(mirror.random() * len(options))]
            pair.state.apply_action(expected)
            if pair.state.is_terminal():
                assert reply == rules.ENDED_AFTER_REPLY - expected
                break
            assert reply == expected
            pair.compare()
        pair.compare()


@pytest.mark.parametrize("name", GAMES)
def test_step_random_refuses_bad_batches_and_keeps_what_was_played(name: str) -> None:
    pytest.importorskip(CORE_MODULES[name], reason=f"the {name} board core is not built")
    game = make_game(name, 3)
    row = game.num_cells + (2 if name == "go" else 1)  # the cells, (Go: pass,) resign
    resign = row - 1
    core: Any = game.board_core(2, bytearray(2 * row), np.zeros(2 * planes_per_board(game), np.float32))
    engine = game.to_engine  # step_random takes and gives env actions; history() is the engine's
    draws = [random.Random(0).random, random.Random(1).random]
    with pytest.raises(TypeError, match="lists of 2 items"):
        core.step_random([0], [False, False], draws, [-1, -1], False)
    with pytest.raises(TypeError, match="lists of 2 items"):
        core.step_random((0, 0), [False, False], draws, [-1, -1], False)
    replies = [-1, -1]
    with pytest.raises(ValueError, match=f"{row} is not a {'Go' if name == 'go' else 'Hex'} action"):
        core.step_random([0, row], [False, False], draws, replies, False)
    # the boards before the error played (their replies reported), the others did not
    assert replies[0] >= 0 and replies[1] == -1 and core.history(1) == []
    assert core.history(0) == [engine[0], engine[replies[0]]]
    with pytest.raises(ValueError, match=r"not a float in \[0, 1\)"):
        core.step_random([1, 0], [True, False], [draws[0], lambda: -0.5], replies, False)
    assert core.history(1) == [engine[0]] and replies[1] == -1  # the agent's move before the bad draw stands
    core.reset(1)
    # boards marked over are left alone; resign and a taken point are reported, nothing played
    assert core.step_random([resign, 0], [False, True], draws, replies, False) == [(0, rules.STEP_RESIGNED)]
    assert core.step_random([0, 0], [False, False], draws, replies, True) == [(0, rules.STEP_ILLEGAL)]
    assert core.history(0) == [engine[0], engine[replies[0]]] and core.history(1) == []  # stop_at_illegal
