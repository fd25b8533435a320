"""palaestra's Go board core (``_goboard.c``) against OpenSpiel, its reference: the same legal moves,
captures, planes, game ends and scores, move by move, over thousands of random games and the rule
positions of test_go.py; and the envs with the core against the envs without it (PALAESTRA_GO_CORE=0)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import palaestra.envs  # noqa: F401  (registers the ids)
from palaestra.envs.board.go import GoEnv
from palaestra.envs.board.rules import GoGame
from tests.envs.board_cores import GoPair, assert_same

pytest.importorskip("palaestra.envs.board._goboard", reason="the Go board core is not built")


def random_games(size: int, games: int, seed: int, max_moves: int | None = None) -> Counter[str]:
    """Random games through a GoPair; passes are made rarer so that boards fill, capture and repeat."""
    game = GoGame(size, komi=0.5 if size < 5 else 7.5, max_moves=max_moves)
    rng = random.Random(seed)
    seen: Counter[str] = Counter()
    for _ in range(games):
        pair = GoPair(game)
        while not pair.state.is_terminal():
            legal = pair.state.legal_actions()
            action = legal[int(rng.random() * len(legal))]
            if action == pair.cells and len(legal) > 1 and rng.random() < 0.8:
                action = legal[int(rng.random() * (len(legal) - 1))]
            pair.play(action)
        seen[game.end_reason(pair.state)] += 1
        seen["captures"] += pair.captures
        seen["ko"] += pair.kos
    return seen


@pytest.mark.parametrize(
    ("size", "games", "max_moves"),
    [(9, 600, None), (5, 1000, None), (2, 300, None), (3, 300, 12), (13, 10, None)],
)
def test_random_games_match_openspiel_move_by_move(size: int, games: int, max_moves: int | None) -> None:
    seen = random_games(size, games, seed=size, max_moves=max_moves)
    assert seen["captures"] > 0
    if size in (9, 5):  # the rules a random game exercises: every way to end, captures, ko
        assert seen["two passes"] and seen["move limit"] and seen["superko"] and seen["ko"], seen
    if size == 2:
        assert seen["superko"], seen


def play_names(game: GoGame, names: list[str]) -> GoPair:
    """The moves (GTP names, black first) through a GoPair."""
    pair = GoPair(game)
    for name in names:
        pair.play(game.to_engine[game.string_to_action(name)])
    return pair


def test_the_rule_positions_of_test_go_match_openspiel() -> None:
    game = GoGame(9)
    # capture: black takes white's E5
    pair = play_names(game, ["D5", "E5", "F5", "pass", "E4", "pass", "E6", "A9"])
    assert pair.captures == 1 and pair.legal[game.to_engine[game.string_to_action("E5")]]
    # suicide: white may not play A1 inside black's A2 + B1
    pair = play_names(game, ["A2", "J9", "B1"])
    assert not pair.legal[game.to_engine[game.string_to_action("A1")]]
    # simple ko: white may not retake B2 at once; later black may not retake C2 at once
    pair = play_names(game, ["A2", "C3", "B3", "D2", "B1", "C1", "pass", "B2", "C2"])
    assert not pair.legal[game.to_engine[game.string_to_action("B2")]]
    for name in ("J9", "J1", "B2"):
        pair.play(game.to_engine[game.string_to_action(name)])
    assert not pair.legal[game.to_engine[game.string_to_action("C2")]]
    # positional superko on 2x2: a draw
    pair = play_names(GoGame(2, komi=0.5), ["A2", "B1", "pass", "A1", "pass", "B2", "A2"])
    assert pair.state.is_terminal() and pair.core.end_reason(0) == "superko"


# -- the envs with the core and without it ---------------------------------------------------------
def run_vector(monkeypatch: pytest.MonkeyPatch, core: bool, steps: int, **kwargs: Any) -> list[Any]:
    """What a vector Go env returns over ``steps`` steps of a seeded agent that also tries illegal
    moves and resigns now and then."""
    monkeypatch.setenv("PALAESTRA_GO_CORE", "1" if core else "0")
    envs = gymnasium.make_vec(
        "Go9x9-v0", vectorization_mode="vector_entry_point", opponent="random", **kwargs
    )
    assert (envs.unwrapped._core is not None) == core  # type: ignore[attr-defined]
    rng = np.random.default_rng(0)
    obs, info = envs.reset(seed=3)
    record: list[Any] = [obs, info]
    for _ in range(steps):
        scores = rng.random(info["action_mask"].shape) * info["action_mask"]
        actions = scores.argmax(1)
        wild = rng.random(len(actions))
        actions[wild < 0.01] = rng.integers(
            0, scores.shape[1], size=int((wild < 0.01).sum())
        )  # some illegal, some resign
        obs, reward, terminated, truncated, info = envs.step(actions)
        record.append((obs, reward, terminated, truncated, info))
    record.append(envs.render())
    envs.close()
    return record


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_envs": 8, "board_size": 9},
        {"num_envs": 5, "board_size": 5, "player_color": "white", "autoreset_mode": AutoresetMode.SAME_STEP},
        {"num_envs": 4, "board_size": 3, "max_moves": 9, "autoreset_mode": AutoresetMode.DISABLED},
    ],
)
def test_vector_env_with_the_core_plays_the_same_games(monkeypatch: pytest.MonkeyPatch, kwargs: dict) -> None:
    kwargs = {**kwargs, "render_mode": "ansi"}
    with_core = run_vector(monkeypatch, True, 400, **kwargs)
    without = run_vector(monkeypatch, False, 400, **kwargs)
    assert_same(with_core, without)
    reasons = Counter(r for step in with_core[2:-1] for r in step[4].get("reason", []) if r is not None)
    assert sum(reasons.values()) >= 4 and reasons["illegal move"] + reasons["resignation"] > 0, reasons


def test_vector_env_with_the_core_raises_on_the_first_illegal_move(monkeypatch: pytest.MonkeyPatch) -> None:
    for core in (True, False):
        monkeypatch.setenv("PALAESTRA_GO_CORE", "1" if core else "0")
        envs = gymnasium.make_vec("Go9x9-v0", num_envs=3, opponent="random", illegal_move_mode="raise")
        envs.reset(seed=0)
        envs.step(np.array([40, 40, 40]))
        with pytest.raises(Exception, match="E5 .action 40. on board 1"):
            envs.step(np.array([0, 40, 40]))
        envs.close()


@pytest.mark.parametrize("player_color", ["black", "white"])
def test_single_env_with_the_core_plays_the_same_games(
    monkeypatch: pytest.MonkeyPatch, player_color: str
) -> None:
    records = []
    for core in (True, False):
        monkeypatch.setenv("PALAESTRA_GO_CORE", "1" if core else "0")
        env = GoEnv(opponent="random", board_size=7, player_color=player_color)
        assert (env._core is not None) == core
        rng = random.Random(0)
        record: list[Any] = []
        for seed in range(40):
            obs, info = env.reset(seed=seed)
            record.append((obs, info))
            done = False
            while not done:
                legal = np.flatnonzero(info["action_mask"][:-1])
                action = int(legal[int(rng.random() * len(legal))]) if rng.random() > 0.002 else 50
                obs, reward, done, _, info = env.step(action)
                record.append((obs, reward, done, info))
            record.append(env.state.history())
        records.append(record)
    assert_same(records[0], records[1])
