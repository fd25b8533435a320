"""The Monitor's step: the episodes it records, and how it fails (as Python itself does)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import palaestra
from palaestra.monitoring.results import load_results


class ScriptedEnv(gym.Env[int, int]):
    """Plays back ``script``: one ``(reward, terminated, truncated)`` per step, episodes in a row.
    ``as_list`` returns each step's result as a list, as some old wrappers do."""

    observation_space = spaces.Discrete(1)
    action_space = spaces.Discrete(2)

    def __init__(self, script: list[tuple[Any, Any, Any]], as_list: bool = False) -> None:
        self.script = list(script)
        self.as_list = as_list
        self.spec = gym.envs.registration.EnvSpec("palaestra-test/Scripted-v0", entry_point=ScriptedEnv)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        return 0, {}

    def step(self, action: int) -> Any:
        if action == 99:
            raise RuntimeError("the env broke at action 99")
        reward, terminated, truncated = self.script.pop(0)
        result = (0, reward, terminated, truncated, {})
        return list(result) if self.as_list else result


def play_script(env: gym.Env[Any, Any], episodes: int) -> None:
    for _ in range(episodes):
        env.reset()
        while True:
            _, _, terminated, truncated, _ = env.step(0)
            if terminated or truncated:
                break


def stats(directory) -> dict[str, Any]:
    return load_results(str(directory))


@pytest.mark.parametrize("as_list", [False, True], ids=["tuple results", "list results"])
def test_lengths_rewards_and_truncation_are_recorded_alike(tmp_path, as_list):
    script = [(1.0, False, False), (2, False, False), (np.float32(0.5), True, False)]  # 3 steps, terminated
    script += [(np.float64(-1.25), False, False), (0.25, np.False_, np.True_)]  # 2 steps, truncated
    script += [(True, 1, 0)]  # a bool reward and int flags: 1 step, terminated
    env = palaestra.Monitor(ScriptedEnv(script, as_list=as_list), tmp_path, video_callable=False)
    play_script(env, 3)
    assert env.get_total_steps() == 6
    env.close()
    results = stats(tmp_path)
    assert results["episode_lengths"] == [3, 2, 1]
    assert results["episode_rewards"] == pytest.approx([3.5, -1.0, 1.0])


def test_a_float32_reward_sums_as_pythons_plus_equals_does(tmp_path):
    rewards = [np.float32(0.1)] * 10
    env = palaestra.Monitor(ScriptedEnv([(r, False, False) for r in rewards[:-1]] + [(rewards[-1], True, False)]),
                            tmp_path, video_callable=False)
    play_script(env, 1)
    env.close()
    expected: Any = 0.0
    for r in rewards:
        expected += r
    assert stats(tmp_path)["episode_rewards"] == [float(expected)]


def test_an_env_that_raises_leaves_the_episode_as_it_was(tmp_path):
    env = palaestra.Monitor(ScriptedEnv([(1.0, False, False), (1.0, True, False)]), tmp_path, video_callable=False)
    env.reset()
    env.step(0)
    with pytest.raises(RuntimeError, match="action 99"):
        env.step(99)
    env.step(0)
    env.close()
    assert stats(tmp_path)["episode_lengths"] == [2]


def test_a_result_that_is_not_a_step_result_fails_naming_python_s_error(tmp_path):
    class Broken(ScriptedEnv):
        def step(self, action: int) -> Any:
            return (0, 1.0) if action == 1 else (0, 1.0, False, False, {})

    env = palaestra.Monitor(Broken([]), tmp_path, video_callable=False)
    env.reset()
    env.step(0)  # (an episode's first step runs in Python: it looks for a true reward)
    with pytest.raises(IndexError):
        env.step(1)
    env.close()


def test_a_reward_that_cannot_be_added_fails_as_in_python(tmp_path):
    env = palaestra.Monitor(ScriptedEnv([(1.0, False, False), ("one", False, False)]), tmp_path, video_callable=False)
    env.reset()
    env.step(0)
    with pytest.raises(TypeError):
        env.step(0)
    env.close()


def test_a_subclass_that_overrides_step_keeps_its_own(tmp_path):
    calls = []

    class CountingMonitor(palaestra.Monitor):
        def step(self, action):
            calls.append(action)
            return super().step(action)

    env = CountingMonitor(ScriptedEnv([(1.0, False, False), (1.0, True, False)]), tmp_path, video_callable=False)
    play_script(env, 1)
    env.close()
    assert calls == [0, 0]
    assert stats(tmp_path)["episode_lengths"] == [2]


def test_a_monitor_dropped_without_close_is_collected_and_closed(tmp_path):
    env = palaestra.Monitor(ScriptedEnv([(1.0, True, False)]), tmp_path, video_callable=False)
    play_script(env, 1)
    ref = weakref.ref(env)
    del env
    gc.collect()
    assert ref() is None
    assert stats(tmp_path)["episode_lengths"] == [1]
