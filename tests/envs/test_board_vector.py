"""Go and Hex as native vector envs: every board plays exactly what the single env plays, in every
autoreset mode, with every kind of opponent; and the vector Monitor records them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import palaestra
from palaestra.envs.board.vector import GoVectorEnv, HexVectorEnv
from palaestra.errors import Error, IllegalMove

GAMES = [("Go9x9-v0", {}), ("Hex9x9-v0", {}), ("Hex5x5-v0", {"swap": True}), ("Go5x5-v0", {"player_color": "white"})]


def make_vec(env_id: str, num_envs: int, **kwargs: Any) -> Any:
    """``gym.make_vec`` of the registered ids; 5x5 boards (quick games) by overriding the size."""
    if env_id.endswith("5x5-v0"):
        kwargs["board_size"] = 5
        env_id = env_id.replace("5x5", "9x9")
    kwargs.setdefault("opponent", "random")
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def random_legal(mask: np.ndarray, rng: np.random.Generator, resign: int) -> np.ndarray:
    """A uniformly random legal action per board, never resigning (0 where nothing is legal)."""
    scores = rng.random(mask.shape) * mask
    scores[:, resign] = 0
    return scores.argmax(1)


def play(envs: Any, steps: int, seed: int = 0) -> list[dict[str, Any]]:
    """Random legal moves for ``steps`` steps; what every step gave (the first entry is the reset's)."""
    rng = np.random.default_rng(seed)
    obs, info = envs.reset(seed=seed)
    trace = [{"obs": obs, "info": info}]
    resign = envs.unwrapped.game.resign_action
    for _ in range(steps):
        actions = random_legal(info["action_mask"], rng, resign)
        obs, reward, terminated, _, info = envs.step(actions)
        trace.append({"actions": actions, "obs": obs, "reward": reward, "terminated": terminated, "info": info})
    return trace


def replayed_games(trace: list[dict[str, Any]], board: int) -> list[list[dict[str, Any]]]:
    """Board ``board``'s games (next-step autoreset): each a list of steps, the first its start."""
    games: list[list[dict[str, Any]]] = [[{"obs": trace[0]["obs"][board], "info": _row(trace[0]["info"], board)}]]
    restart = False
    for step in trace[1:]:
        row = {"obs": step["obs"][board], "info": _row(step["info"], board), "reward": step["reward"][board],
               "terminated": step["terminated"][board], "action": int(step["actions"][board])}
        if restart:
            games.append([row])
        else:
            games[-1].append(row)
        restart = bool(step["terminated"][board])
    return games


def _row(info: dict[str, Any], board: int) -> dict[str, Any]:
    return {key: value[board] for key, value in info.items() if not key.startswith("_") and info[f"_{key}"][board]}


@pytest.mark.parametrize("env_id, kwargs", GAMES, ids=[g[0] + "".join(g[1]) for g in GAMES])
def test_every_board_plays_what_the_single_env_plays_with_the_same_moves(env_id, kwargs):
    envs = make_vec(env_id, 3, **kwargs)
    trace = play(envs, 120)
    envs.close()
    finished = 0
    for board in range(3):
        for game in replayed_games(trace, board):
            replies = [step["info"].get("opponent_action") for step in game]
            queue = iter([r for r in replies if r is not None])
            single_kwargs = {**kwargs, "opponent": lambda obs, mask, q=queue: next(q)}
            if env_id.endswith("5x5-v0"):
                single_kwargs["board_size"] = 5
            env = gym.make(env_id.replace("5x5", "9x9"), **single_kwargs)
            obs, info = env.reset()
            np.testing.assert_array_equal(obs, game[0]["obs"])
            np.testing.assert_array_equal(info["action_mask"], game[0]["info"]["action_mask"])
            for step in game[1:]:
                obs, reward, terminated, _, info = env.step(step["action"])
                np.testing.assert_array_equal(obs, step["obs"])
                np.testing.assert_array_equal(info["action_mask"], step["info"]["action_mask"])
                assert (reward, terminated) == (step["reward"], step["terminated"])
                for key in ("winner", "reason", "score"):
                    assert info.get(key) == step["info"].get(key)
            finished += terminated
            env.close()
    assert finished >= 3


def test_gymnasium_picks_the_vector_entry_point_and_the_spaces_are_batched():
    envs = gym.make_vec("Go9x9-v0", num_envs=4, opponent="random")
    assert isinstance(envs, GoVectorEnv) and envs.spec.id == "Go9x9-v0"
    assert envs.observation_space.shape == (4, 3, 9, 9) and envs.single_action_space == gym.spaces.Discrete(83)
    obs, info = envs.reset(seed=1)
    assert obs.shape == (4, 3, 9, 9) and obs.dtype == np.float32 and (obs[:, 2] == 1).all()
    assert info["action_mask"].shape == (4, 83) and info["action_mask"].all()
    envs.close()


def test_the_mask_in_info_is_the_agents_own_copy():
    envs = make_vec("Hex9x9-v0", 2)
    _, info = envs.reset(seed=0)
    info["action_mask"][:] = False
    _, _, _, _, info = envs.step(np.array([0, 1]))
    assert info["action_mask"][0].sum() == 81 - 2 + 1  # two stones, resign still legal
    envs.close()


def test_seeded_vector_envs_replay_the_same_games():
    first, second = (play(make_vec("Go9x9-v0", 4), 60, seed=5) for _ in range(2))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a["obs"], b["obs"])


@pytest.mark.parametrize("env_id", ["Go9x9-v0", "Hex9x9-v0"])
def test_same_step_autoreset_returns_the_new_game_and_the_final_planes_in_info(env_id):
    envs = make_vec(env_id, 4, autoreset_mode=AutoresetMode.SAME_STEP)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    rng = np.random.default_rng(0)
    _, info = envs.reset(seed=0)
    resign = envs.unwrapped.game.resign_action
    while True:
        obs, reward, terminated, _, info = envs.step(random_legal(info["action_mask"], rng, resign))
        if terminated.any():
            break
    board = int(np.flatnonzero(terminated)[0])
    assert info["_final_obs"][board] and reward[board] in (-1.0, 0.0, 1.0)
    final = info["final_obs"][board]
    assert final.shape == (3, 9, 9) and final[:2].sum() > 2  # stones of the finished game
    assert obs[board, 2].sum() == 81 and info["action_mask"][board].all()  # the next game, empty
    assert info["winner"][board] in ("black", "white")
    envs.close()


def test_with_autoreset_disabled_a_finished_board_stays_finished_until_a_masked_reset():
    envs = make_vec("Hex9x9-v0", 2, autoreset_mode="Disabled", illegal_move_mode="lose")
    _, info = envs.reset(seed=0)
    *_, info = envs.step(np.array([0, 1]))
    legal_on_1 = int(np.flatnonzero(info["action_mask"][1, :-1])[0])
    obs, reward, terminated, _, info = envs.step(np.array([0, legal_on_1]))  # board 0: a taken cell, it loses
    assert terminated.tolist() == [True, False] and reward[0] == -1.0
    assert info["reason"][0] == "illegal move" and info["illegal_move"][0] == "a1"
    assert not info["action_mask"][0].any()
    legal_on_1 = int(np.flatnonzero(info["action_mask"][1, :-1])[0])
    again = envs.step(np.array([5, legal_on_1]))
    assert again[2].tolist() == [True, False] and again[1][0] == 0.0  # no more reward, as in 2017
    np.testing.assert_array_equal(again[0][0], obs[0])
    obs, info = envs.reset(options={"reset_mask": np.array([True, False])})
    assert obs[0, 2].sum() == 81 and obs[1, 2].sum() < 81
    envs.close()


def test_illegal_moves_raise_naming_the_board_in_raise_mode_and_bad_actions_are_refused():
    envs = make_vec("Go9x9-v0", 3, illegal_move_mode="raise")
    envs.reset(seed=0)
    envs.step(np.array([40, 41, 42]))
    with pytest.raises(IllegalMove, match=r"E5 \(action 40\) on board 0 is not a legal move"):
        envs.step(np.array([40, 0, 1]))
    with pytest.raises(IllegalMove, match=r"shape \(3,\) with values 0..82"):
        envs.step(np.array([0, 1]))
    with pytest.raises(IllegalMove, match="values 0..82"):
        envs.step(np.array([0, 1, 83]))
    envs.close()


def test_one_opponent_instance_cannot_play_several_boards():
    from palaestra.envs.board.opponents import RandomOpponent

    with pytest.raises(Error, match="cannot play 2 boards at once.*a string"):
        HexVectorEnv(num_envs=2, opponent=RandomOpponent())


def test_every_board_gets_its_own_mcts_opponent():
    envs = make_vec("Hex5x5-v0", 2, opponent="mcts:4")
    assert len({id(o) for o in envs.unwrapped.opponents}) == 2
    trace = play(envs, 30)
    assert any(step.get("terminated", np.zeros(2)).any() for step in trace)
    envs.close()


def test_render_gives_every_boards_frame():
    envs = make_vec("Go9x9-v0", 2, render_mode="ansi")
    envs.reset(seed=0)
    envs.step(np.array([40, 0]))
    frames = envs.render()
    assert len(frames) == 2 and all(isinstance(f, str) for f in frames) and frames[0] != frames[1]
    envs.close()


def test_the_vector_monitor_records_every_board_and_board_0s_games(tmp_path):
    envs = palaestra.Monitor(make_vec("Hex9x9-v0", 4, render_mode="ansi"), tmp_path)
    trace = play(envs, 120)
    envs.close()
    results = palaestra.load_results(tmp_path)
    ended = sum(int(step["terminated"].sum()) for step in trace[1:])
    assert len(results["episode_lengths"]) == ended > 4
    assert set(results["env_index"]) == {0, 1, 2, 3}
    assert results["env_info"]["env_id"] == "Hex9x9-v0"
    videos = results["videos"]
    assert videos and all("-0.video" in Path(v).name for v, _ in videos)
    assert [json.loads(Path(m).read_text())["episode_id"] for _, m in videos] == [0, 1][: len(videos)]
