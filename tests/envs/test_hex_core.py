"""palaestra's Hex board core (``_hexboard.c``) against OpenSpiel, its reference: the same legal moves,
planes, game ends and winners, move by move, over thousands of random games; and the single and the
vector Hex envs with the core against the envs without it (PALAESTRA_HEX_CORE=0)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import palaestra.envs  # noqa: F401  (registers the ids)
from palaestra.envs.board import rules
from palaestra.envs.board.hex import HexEnv
from palaestra.envs.board.rules import COLOR_NAMES, HexGame
from palaestra.errors import IllegalMove
from tests.envs.board_cores import HexPair, assert_same

pytest.importorskip("palaestra.envs.board._hexboard", reason="the Hex board core is not built")


@pytest.mark.parametrize(("size", "games"), [(2, 200), (3, 500), (5, 800), (9, 400), (11, 100)])
def test_random_games_match_openspiel_move_by_move(size: int, games: int) -> None:
    game = HexGame(size)
    rng = random.Random(size)
    winners: Counter[int] = Counter()
    lengths = set()
    for _ in range(games):
        pair = HexPair(game)
        while not pair.state.is_terminal():
            legal = pair.state.legal_actions()
            pair.play(legal[int(rng.random() * len(legal))])
        winners[pair.core.winner(0)] += 1
        lengths.add(len(pair.state.history()))
    # both colours win, and games end at many lengths (short and board-filling)
    assert winners[0] and winners[1], winners
    assert len(lengths) >= min(size, 4), lengths


def test_the_edges_and_neighbours_are_openspiels() -> None:
    game = HexGame(3)
    # black down the middle column: b1 b2 b3 joins top and bottom
    pair = HexPair(game)
    for cell in (1, 0, 4, 2, 7):
        pair.play(cell)
    assert pair.core.winner(0) == 0
    # white a2 b2 c2 joins left and right
    pair = HexPair(game)
    for cell in (0, 3, 1, 4, 8, 5):
        pair.play(cell)
    assert pair.core.winner(0) == 1
    # (r, c) and (r+1, c+1) do not touch: black a1 b2 c3 is no chain
    pair = HexPair(game)
    for cell in (0, 3, 4, 5, 8):
        pair.play(cell)
    assert not pair.core.is_over(0)


def test_the_core_refuses_moves_after_the_end_and_leaves_1x1_to_openspiel() -> None:
    # a finished game takes no more moves
    pair = HexPair(HexGame(2))
    for cell in (0, 1, 2):
        pair.play(cell)
    with pytest.raises(ValueError, match="the game is over"):
        pair.core.play(0, 3)
    # OpenSpiel never ends a game on 1x1 (its one stone is no win): the env keeps OpenSpiel's path there
    assert HexGame(1).board_core(1, bytearray(2), np.zeros(3, np.float32)) is None


# -- the env with the core and without it -----------------------------------------------------------
@pytest.mark.parametrize(("player_color", "size"), [("black", 7), ("white", 7), ("black", 3), ("white", 11)])
def test_single_env_with_the_core_plays_the_same_games(
    monkeypatch: pytest.MonkeyPatch, player_color: str, size: int
) -> None:
    records = []
    for core in (True, False):
        monkeypatch.setenv("PALAESTRA_HEX_CORE", "1" if core else "0")
        env = HexEnv(opponent="random", board_size=size, player_color=player_color, render_mode="ansi")
        assert (env._core is not None) == core
        resign = env.resign_action
        rng = random.Random(0)
        wild_rate = 1 / resign  # about a third of the games end with an illegal move or resign
        record: list[Any] = []
        for seed in range(40):
            obs, info = env.reset(seed=seed)
            record.append((obs, info))
            done = False
            while not done:
                legal = np.flatnonzero(info["action_mask"][:-1])
                wild = rng.random()
                # now and then any action: a taken cell (an illegal move), an empty cell or resign
                action = int(legal[int(rng.random() * len(legal))]) if wild > wild_rate else int(wild * resign * (resign + 1))
                obs, reward, done, _, info = env.step(action)
                record.append((obs, reward, done, info))
                if rng.random() < 0.02:
                    record.append(env.render())
            record.append((env.state.history(), env.render(), env.step(0)))
        env.close()
        records.append(record)
    assert_same(records[0], records[1])
    reasons = Counter(step[3].get("reason") for step in records[0] if isinstance(step, tuple) and len(step) == 4)
    assert reasons["connection"] > 0 and reasons["illegal move"] + reasons["resignation"] > 0, reasons
    assert {step[3].get("winner") for step in records[0] if isinstance(step, tuple) and len(step) == 4} >= set(
        COLOR_NAMES
    )


def test_the_core_is_left_out_where_the_env_needs_openspiel(monkeypatch: pytest.MonkeyPatch) -> None:
    assert HexEnv(opponent="random")._core is not None
    assert HexEnv(opponent="random", swap=True)._core is None  # the swap: OpenSpiel's path
    assert HexEnv(opponent="mcts:2")._core is None
    envs = gymnasium.make_vec("Hex9x9-v0", num_envs=2, vectorization_mode="vector_entry_point", opponent="random")
    assert envs.unwrapped._core is not None  # type: ignore[attr-defined]
    envs.close()
    for kwargs in ({"swap": True}, {"opponent": "mcts:2"}, {"board_size": 1}):
        envs = gymnasium.make_vec("Hex9x9-v0", num_envs=2, vectorization_mode="vector_entry_point", **{"opponent": "random", **kwargs})
        assert envs.unwrapped._core is None, kwargs  # type: ignore[attr-defined]  (the vector's own Hex paths)
        envs.close()
    monkeypatch.setenv("PALAESTRA_HEX_CORE", "0")
    assert HexEnv(opponent="random")._core is None
    envs = gymnasium.make_vec("Hex9x9-v0", num_envs=2, vectorization_mode="vector_entry_point", opponent="random")
    assert envs.unwrapped._core is None  # type: ignore[attr-defined]
    envs.close()


def run_vector(monkeypatch: pytest.MonkeyPatch, core: bool, steps: int, **kwargs: Any) -> list[Any]:
    """What a vector Hex env returns over ``steps`` steps of a seeded agent that also tries illegal
    moves (taken cells) and resigns now and then; with autoreset disabled, the finished boards are
    reset (reset_mask) every few steps."""
    monkeypatch.setenv("PALAESTRA_HEX_CORE", "1" if core else "0")
    envs = gymnasium.make_vec("Hex9x9-v0", vectorization_mode="vector_entry_point", opponent="random", **kwargs)
    assert (envs.unwrapped._core is not None) == core  # type: ignore[attr-defined]
    disabled = envs.unwrapped.autoreset_mode is AutoresetMode.DISABLED  # type: ignore[attr-defined]
    rng = np.random.default_rng(0)
    obs, info = envs.reset(seed=3)
    record: list[Any] = [obs, info]
    for step in range(steps):
        scores = rng.random(info["action_mask"].shape) * info["action_mask"]
        actions = scores.argmax(1)
        wild = rng.random(len(actions))
        actions[wild < 0.02] = rng.integers(0, scores.shape[1], size=int((wild < 0.02).sum()))  # taken cells, resign
        obs, reward, terminated, truncated, info = envs.step(actions)
        record.append((obs, reward, terminated, truncated, info))
        if disabled and step % 7 == 6:
            finished = ~info["action_mask"].any(1)
            obs, info = envs.reset(options={"reset_mask": finished})
            record.append((obs, info))
    record.append(envs.render())
    record.append([envs.unwrapped._engine_state(b).history() for b in range(envs.num_envs)])  # type: ignore[attr-defined]
    envs.close()
    return record


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_envs": 8, "board_size": 9},
        {"num_envs": 6, "board_size": 5, "player_color": "white", "autoreset_mode": AutoresetMode.SAME_STEP},
        {"num_envs": 5, "board_size": 3, "autoreset_mode": AutoresetMode.DISABLED},
        {"num_envs": 4, "board_size": 4, "player_color": "white", "autoreset_mode": AutoresetMode.DISABLED},
        {"num_envs": 3, "board_size": 11, "player_color": "white"},
        {"num_envs": 5, "board_size": 2, "autoreset_mode": AutoresetMode.SAME_STEP},
    ],
)
def test_vector_env_with_the_core_plays_the_same_games(monkeypatch: pytest.MonkeyPatch, kwargs: dict) -> None:
    kwargs = {**kwargs, "render_mode": "ansi"}
    with_core = run_vector(monkeypatch, True, 300, **kwargs)
    without = run_vector(monkeypatch, False, 300, **kwargs)
    assert_same(with_core, without)
    steps = [step for step in with_core[2:-2] if len(step) == 5]
    reasons = Counter(r for step in steps for r in step[4].get("reason", []) if r is not None)
    assert reasons["connection"] >= 3 and reasons["illegal move"] + reasons["resignation"] > 0, reasons
    winners = {w for step in steps for w in step[4].get("winner", []) if w is not None}
    assert winners == set(COLOR_NAMES)
    assert any(step[1].any() for step in steps) and any((step[1] < 0).any() for step in steps)


@pytest.mark.parametrize("player_color", ["black", "white"])
def test_vector_env_with_the_core_raises_on_the_first_illegal_move(
    monkeypatch: pytest.MonkeyPatch, player_color: str
) -> None:
    records = []
    for core in (True, False):
        monkeypatch.setenv("PALAESTRA_HEX_CORE", "1" if core else "0")
        envs = gymnasium.make_vec(
            "Hex9x9-v0", num_envs=3, opponent="random", illegal_move_mode="raise", player_color=player_color
        )
        assert (envs.unwrapped._core is not None) == core  # type: ignore[attr-defined]
        _, info = envs.reset(seed=0)
        taken = int(np.flatnonzero(~info["action_mask"][1][:-1])[0]) if player_color == "white" else None
        if taken is None:
            envs.step(np.array([40, 40, 40]))
            taken = 40
        free = [int(np.flatnonzero(row[:-1])[0]) for row in envs.unwrapped._legal_rows]  # type: ignore[attr-defined]
        with pytest.raises(IllegalMove, match=f"{rules.HEX_COLUMNS[taken % 9]}{taken // 9 + 1} .action {taken}. on board 1"):
            envs.step(np.array([free[0], taken, free[2]]))
        # board 0 played its move (and the opponent replied), board 2 did not: the same in both
        after = envs.step(np.array([int(np.flatnonzero(row[:-1])[0]) for row in envs.unwrapped._legal_rows]))  # type: ignore[attr-defined]
        records.append((after, [envs.unwrapped._engine_state(b).history() for b in range(3)]))  # type: ignore[attr-defined]
        envs.close()
    assert_same(records[0], records[1])
    histories = records[0][1]
    assert len(histories[0]) == len(histories[2]) + 2
