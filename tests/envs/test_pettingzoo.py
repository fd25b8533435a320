"""The two-player PettingZoo AEC versions of Go and Hex."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="the two-player envs need the pettingzoo extra")

from pettingzoo.test import api_test

from palaestra.envs.board.pettingzoo import go_env, hex_env


@pytest.mark.filterwarnings("ignore:Observation:UserWarning")
@pytest.mark.parametrize("make", [lambda: go_env(board_size=5), lambda: hex_env(board_size=5, swap=True)])
def test_pettingzoo_api(make) -> None:
    api_test(make(), num_cycles=300, verbose_progress=False)


def self_play(env, seed: int) -> tuple[dict[str, float], dict]:
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    final: dict = {}
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        totals[agent] += reward
        if terminated or truncated:
            final = info
            env.step(None)
            continue
        legal = np.flatnonzero(observation["action_mask"][: env.game.resign_action])
        env.step(int(rng.choice(legal)))
    return totals, final


def test_go_self_play_is_zero_sum_and_scored() -> None:
    env = go_env(board_size=5, komi=0.5)
    for seed in range(3):
        totals, info = self_play(env, seed)
        assert sum(totals.values()) == 0 and set(totals.values()) <= {-1.0, 0.0, 1.0}
        assert info["reason"] in ("two passes", "superko", "move limit") and "score" in info


def test_hex_self_play_has_a_winner() -> None:
    env = hex_env(board_size=5)
    totals, info = self_play(env, 1)
    assert sorted(totals.values()) == [-1.0, 1.0] and info["reason"] == "connection"


def test_illegal_move_loses_and_masks_follow_the_turn() -> None:
    env = hex_env(board_size=3)
    env.reset()
    assert env.observe("black_0")["action_mask"].sum() == 10  # 9 cells + resign
    assert not env.observe("white_0")["action_mask"].any()
    env.step(4)
    env.step(4)  # white plays black's cell
    assert env.rewards == {"black_0": 1.0, "white_0": -1.0}
    assert env.infos["white_0"]["reason"] == "illegal move"
    assert all(env.terminations.values())


def test_render_modes() -> None:
    env = go_env(board_size=5, render_mode="ansi")
    env.reset()
    env.step(12)
    text = env.render()
    assert "A B C D E" in text and "last: black C3" in text
    rgb = go_env(board_size=5, render_mode="rgb_array")
    rgb.reset()
    assert rgb.render().shape[2] == 3


def test_registered_in_pettingzoos_registry() -> None:
    """``import palaestra`` registers the AEC games with PettingZoo 1.27+ (``pettingzoo.make``)."""
    import pettingzoo

    import palaestra.envs

    if not hasattr(pettingzoo, "register"):
        pytest.skip("PettingZoo before 1.27 has no registry")
    assert {f"palaestra/{env_id}" for env_id in palaestra.envs.BOARD_GAME_IDS} <= set(pettingzoo.aec_registry)
    go = pettingzoo.make("aec", "palaestra/Go13x13-v0", komi=0.5)
    assert (go.game.board_size, go.game.komi, go.metadata["name"]) == (13, 0.5, "palaestra_go_v0")
    hex_ = pettingzoo.make("aec", "palaestra/Hex11x11-v0", swap=True)
    assert (hex_.game.board_size, hex_.game.swap) == (11, True)
    totals, final = self_play(pettingzoo.make("aec", "palaestra/Hex9x9-v0"), seed=1)
    assert sorted(totals.values()) == [-1.0, 1.0] and final["reason"] == "connection"
