"""palaestra's re-implementations of the 2017 environments: the Gymnasium API, recording, what 2017 got wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.envs.registration import load_env_creator
from gymnasium.utils.env_checker import check_env

import palaestra
from palaestra.envs import legacy
from palaestra.envs.legacy.algorithmic import CopyEnv
from palaestra.envs.legacy.safety import OffSwitchCartpoleEnv
from palaestra.envs.legacy.toy_text import generalized_pareto

# palaestra's re-implementations (the Atari ids, ale-py's code, have tests of their own: test_atari_2017.py)
OWN_IDS = [
    r.id
    for r in legacy.rows()
    if r.entry_point and r.entry_point.startswith("palaestra.envs.legacy.") and r.group != "atari"
]
ANSI_IDS = [
    i for i in OWN_IDS if "ansi" in load_env_creator(gymnasium.spec(i).entry_point).metadata["render_modes"]
]


@pytest.mark.parametrize("env_id", OWN_IDS)
@pytest.mark.filterwarnings("ignore:.*infinity:UserWarning", "ignore:.*symmetric and normalized:UserWarning")
def test_passes_gymnasiums_check_env(env_id: str) -> None:  # (the warnings are about CartPole's and Pendulum's spaces)
    check_env(gymnasium.make(env_id).unwrapped, skip_render_check=True)


def test_the_envs_that_rendered_text_in_2017_record_text_videos() -> None:
    assert set(ANSI_IDS) >= {
        "Copy-v0", "RepeatCopy-v0", "Reverse-v0", "DuplicatedInput-v0", "ReversedAddition-v0", "ReversedAddition3-v0",
        "Taxi-v2",
    }  # fmt: skip


@pytest.mark.parametrize("env_id", ANSI_IDS)
def test_the_monitor_records_an_ansi_video_of_each_episode(tmp_path: Path, env_id: str) -> None:
    env = palaestra.Monitor(gymnasium.make(env_id, render_mode="ansi"), tmp_path, video_callable=lambda e: True)
    lengths = []
    for episode in range(2):
        env.reset(seed=episode)
        env.action_space.seed(episode)
        steps, done = 0, False
        while not done and steps < 400:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done, steps = terminated or truncated, steps + 1
        lengths.append(steps)
    env.close()
    results = palaestra.load_results(tmp_path)
    assert results["episode_lengths"] == lengths and results["env_info"]["env_id"] == env_id
    assert len(results["videos"]) == 2
    for (video, meta), length in zip(results["videos"], lengths):
        recording = json.loads(Path(video).read_text())
        assert len(recording["stdout"]) == length + 1  # the reset frame, then one per step
        assert json.loads(Path(meta).read_text())["content_type"] == "video/vnd.openai.ansivid"


def test_each_algorithmic_env_levels_up_on_its_own() -> None:
    # 2017 kept the curriculum on the class, so a second env levelled up with the first
    solving, idle = CopyEnv(), CopyEnv()
    idle.reset(seed=1)
    solving.reset(seed=0)
    for _ in range(11):  # ten perfect episodes: the eleventh reset lengthens the inputs
        while True:
            target = solving.target[solving.write_head_position]
            if solving.step((1, 1, target))[2]:
                break
        solving.reset()
    assert (solving.min_length, idle.min_length) == (3, 2)


def test_algorithmic_step_checks_order_and_action() -> None:
    env = CopyEnv()
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step((1, 1, 0))
    env.reset(seed=0)
    with pytest.raises(gymnasium.error.InvalidAction, match=r"\(1, 1, 9\) is not an action"):
        env.step((1, 1, 9))
    with pytest.raises(gymnasium.error.Error, match="renders as 'human' or 'ansi', not 'rgb_array'"):
        CopyEnv(render_mode="rgb_array")


def test_algorithmic_rewards_a_right_symbol_ends_on_a_wrong_one_and_on_running_out_of_time() -> None:
    env = CopyEnv()
    env.reset(seed=3)
    first = env.target[0]
    assert env.step((1, 1, first))[1:3] == (1.0, False)
    assert env.step((1, 1, (env.target[1] + 1) % env.base))[1:3] == (-0.5, True)
    env.reset(seed=3)
    rewards = [env.step((0, 0, 0))[1] for _ in range(env.time_limit + 1)]
    assert rewards[-1] == -1.0 and set(rewards[:-1]) == {0.0}


def test_the_monitor_records_the_true_reward_of_a_semi_supervised_env(tmp_path: Path) -> None:
    env = palaestra.Monitor(
        gymnasium.make("SemisuperPendulumRandom-v0", max_episode_steps=30), tmp_path, video_callable=False
    )
    seen, true = [], []
    for episode in range(3):
        env.reset(seed=episode)
        done = False
        while not done:
            _, reward, terminated, truncated, info = env.step(np.array([1.0], dtype=np.float32))
            seen.append(float(reward))
            true.append(info["true_reward"])
            done = terminated or truncated
    env.close()
    recorded = palaestra.load_results(tmp_path)["episode_rewards"]
    assert recorded == pytest.approx([sum(true[i * 30 : (i + 1) * 30]) for i in range(3)])
    assert sum(seen) != pytest.approx(sum(true))  # the agent saw a distorted reward


class _TrueRewardZero(gymnasium.Env[int, int]):
    """Reports a true reward of 0 while showing 1 (2017's Monitor recorded the 1)."""

    observation_space = gymnasium.spaces.Discrete(1)
    action_space = gymnasium.spaces.Discrete(1)
    metadata = {"render_modes": ["ansi"]}

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode

    def render(self) -> str:
        return f"step {self.t}\n"

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        self.t = 0
        return 0, {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return 0, 1.0, self.t == 3, False, {"true_reward": 0.0}


@pytest.mark.parametrize("videos", [False, True])
def test_a_true_reward_of_zero_is_recorded_too(tmp_path: Path, videos: bool) -> None:
    inner = gymnasium.wrappers.TimeLimit(_TrueRewardZero(render_mode="ansi"), 10)
    inner.unwrapped.spec = gymnasium.envs.registration.EnvSpec("TrueRewardZero-v0")
    env = palaestra.Monitor(inner, tmp_path, video_callable=lambda episode: videos)
    for _ in range(2):
        env.reset()
        while not env.step(0)[2]:
            pass
    env.close()
    results = palaestra.load_results(tmp_path)
    assert results["episode_rewards"] == [0.0, 0.0] and len(results["videos"]) == (2 if videos else 0)


def test_the_off_switch_ends_the_episode_with_nothing_and_counts_each_episode_once() -> None:
    env = OffSwitchCartpoleEnv()
    with pytest.raises(gymnasium.error.Error, match="no episode has crossed"):
        env.interruptibility()
    obs, _ = env.reset(seed=0)
    assert obs[0] == 1
    env.state = np.array([0.99, 1.0, 0.0, 0.0])  # about to cross x = 1 to the right
    obs, reward, terminated, _, _ = env.step(1)
    assert (obs[0], reward, terminated) == (0, 0.0, True)
    env.reset(seed=1)
    env.state = np.array([-0.99, -1.0, 0.0, 0.0])
    for _ in range(3):  # three steps left of -1: one episode, not three
        obs, _, terminated, _, _ = env.step(0)
    assert obs[0] == 1 and env.num_crosses == [1, 1] and env.interruptibility() == 1.0


def _balance(obs: np.ndarray) -> int:
    return int(obs[2] + 0.5 * obs[3] > 0)


def test_predicting_your_own_actions_earns_the_bonus_after_100_steps() -> None:
    # 2017's version crashed there on Python 3 (xrange)
    env = gymnasium.make("PredictActionsCartpole-v0")
    obs, _ = env.reset(seed=0)
    rewards = []
    for _ in range(150):
        action = _balance(obs)
        obs, reward, terminated, _, _ = env.step((action,) * 6)
        rewards.append(float(reward))
        assert not terminated
    assert set(rewards[:101]) == {1.0} and max(rewards[101:]) > 1.0


def test_predicting_your_observations_earns_a_bonus_that_shrinks_with_the_error() -> None:
    env = gymnasium.make("PredictObsCartpole-v0")
    obs, _ = env.reset(seed=0)
    rewards = []
    for _ in range(120):
        obs, reward, terminated, _, _ = env.step((_balance(obs),) + (obs,) * 5)
        rewards.append(float(reward))
        assert not terminated
    assert set(rewards[:101]) == {1.0} and all(1.0 < r <= 1.5 for r in rewards[102:])


def test_the_decaying_reward_fades_over_the_life_of_the_env_not_per_episode() -> None:
    env = gymnasium.make("SemisuperPendulumDecay-v0")
    for episode in range(3):
        env.reset(seed=episode)
        for _ in range(200):
            env.step(np.array([0.0], dtype=np.float32))
    assert env.unwrapped.prob_get_reward == pytest.approx(0.999**600)


def test_kelly_coinflip_pays_the_final_wealth_one_step_after_the_last_round() -> None:
    env = gymnasium.make("KellyCoinflip-v0", maxRounds=3)  # 2017's argument names
    obs, _ = env.reset(seed=0)
    rewards = [env.step(0)[1] for _ in range(3)]
    obs, reward, terminated, _, _ = env.step(0)
    assert rewards == [0.0, 0.0, 0.0] and (reward, terminated) == (25.0, True) and obs[1] == 0


def test_kelly_generalized_draws_a_new_game_from_its_seed() -> None:
    env = gymnasium.make("KellyCoinflipGeneralized-v0")
    env.reset(seed=5)
    first = (env.unwrapped.edge, env.unwrapped.max_wealth, env.unwrapped.max_rounds)
    env.reset()
    assert (env.unwrapped.edge, env.unwrapped.max_wealth) != first[:2]
    env.reset(seed=5)
    assert (env.unwrapped.edge, env.unwrapped.max_wealth, env.unwrapped.max_rounds) == first
    assert env.action_space.n == int(first[1] * 100)


@pytest.mark.parametrize("shape, location", [(5.0, 200.0), (0.5, 10.0), (0.0, 3.0), (-0.3, 5.0)])
def test_the_generalized_games_cap_is_scipys_genpareto_draw_without_scipy(shape: float, location: float) -> None:
    genpareto = pytest.importorskip("scipy.stats").genpareto  # scipy is a dev tool, not a dependency
    for seed in range(500):
        ours, scipys = np.random.RandomState(seed), np.random.RandomState(seed)
        assert generalized_pareto(shape, location, ours) == genpareto.rvs(shape, location, random_state=scipys)
        assert ours.normal() == scipys.normal()  # the same draws consumed: the game's next draw is 2017's


def test_the_two_round_debugging_env_pays_by_both_actions() -> None:
    env = gymnasium.make("TwoRoundDeterministicReward-v0")
    payouts = {}
    for first in (0, 1):
        for second in (0, 1):
            assert env.reset()[0] == 2
            assert env.step(first)[:3] == (first, 0, False)
            payouts[first, second] = env.step(second)[1]
    assert payouts == {(0, 0): 0, (0, 1): 3, (1, 0): 1, (1, 1): 2}
