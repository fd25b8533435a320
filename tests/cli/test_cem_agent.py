"""The built-in agents behind `--agent cem` / `--agent random`, and the run loop (palaestra.training)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import palaestra
from palaestra.agents import BUILTIN_AGENTS, load_agent_factory
from palaestra.agents.cem import CEMAgent, make_agent
from palaestra.errors import Error
from palaestra.training import TrainingError, run_agent


def _play(agent: Any, env: gym.Env[Any, Any], episodes: int, seed: int = 0) -> list[float]:
    returns = []
    observation, _ = env.reset(seed=seed)
    for _ in range(episodes):
        total, done = 0.0, False
        while not done:
            observation, reward, terminated, truncated, _ = env.step(agent.act(observation))
            agent.observe(observation, float(reward), terminated, truncated)
            total += float(reward)
            done = terminated or truncated
        agent.end_episode()
        returns.append(total)
        observation, _ = env.reset()
    return returns


def test_builtin_names_resolve() -> None:
    assert {"random", "cem"} <= set(BUILTIN_AGENTS)
    assert load_agent_factory("cem") is make_agent
    env = gym.make("CartPole-v1")
    agent = load_agent_factory("random")(env.observation_space, env.action_space)
    assert env.action_space.contains(agent.act(env.reset(seed=0)[0]))


@pytest.mark.parametrize(
    "env_id", ["CartPole-v1", "Acrobot-v1", "Pendulum-v1", "MountainCarContinuous-v0", "Blackjack-v1"]
)
def test_cem_acts_in_the_action_space(env_id: str) -> None:
    env = gym.make(env_id)
    agent = CEMAgent(env.observation_space, env.action_space, seed=0, population=4)
    observation, _ = env.reset(seed=0)
    for _ in range(50):
        action = agent.act(observation)
        assert env.action_space.contains(action), action
        observation, reward, terminated, truncated, _ = env.step(action)
        agent.observe(observation, float(reward), terminated, truncated)
        if terminated or truncated:
            agent.end_episode()
            observation, _ = env.reset()


def test_cem_rejects_action_spaces_it_cannot_drive() -> None:
    with pytest.raises(Error, match="Discrete and Box"):
        CEMAgent(gym.spaces.Box(-1, 1, (2,)), gym.spaces.MultiDiscrete([2, 3]))
    with pytest.raises(Error, match="population"):
        CEMAgent(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(2), population=1)


def test_cem_generation_bookkeeping_and_seeding() -> None:
    env = gym.make("CartPole-v1")
    a = CEMAgent(env.observation_space, env.action_space, seed=1, population=5)
    b = CEMAgent(env.observation_space, env.action_space, seed=1, population=5)
    returns_a, returns_b = _play(a, env, 18, seed=2), _play(b, env, 18, seed=2)
    assert returns_a == returns_b
    # 1 mean-policy episode + 5 samples per generation
    assert a.generation == 3 and len(a.history) == 3
    assert a.history[0]["mean_policy_return"] == returns_a[0]
    assert a.history[0]["best_sample_return"] == max(returns_a[1:6])


class _Bandit(gym.Env[np.ndarray, Any]):
    """One-step episodes: action 1 pays ``payout`` (settable), action 0 pays 0."""

    observation_space = gym.spaces.Box(1.0, 1.0, (1,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.payout = 1.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        return np.ones(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        return np.ones(1, dtype=np.float32), self.payout if action == 1 else 0.0, True, False, {}


def test_cem_exploits_once_converged_and_resumes_when_returns_fall() -> None:
    env = _Bandit()
    agent = CEMAgent(env.observation_space, env.action_space, seed=0, population=10, patience=3)
    _play(agent, env, 400)
    assert agent.exploiting, agent.history[-3:]
    generation = agent.generation
    assert _play(agent, env, 20) == [1.0] * 20  # the mean policy only, and no new generations
    assert agent.generation == generation
    env.payout = 0.0  # the world changes: returns fall below the level the switch was made at
    _play(agent, env, 10)
    assert not agent.exploiting


def test_run_agent_stops_when_solved_and_counts_training_episodes_only(tmp_path: Path) -> None:
    summary = run_agent(
        "CartPole-v1",
        "cem",
        tmp_path / "cem",
        episodes=1500,
        seed=3,
        video=False,
        stop_when_solved=True,
        progress=False,
    )
    assert summary.solved_at is not None and summary.best_mean is not None and summary.best_mean >= 475
    assert summary.episodes == summary.solved_at + 100
    assert summary.trials == 100 and summary.reward_threshold == 475.0
    evaluation = run_agent(
        "CartPole-v1", "random", tmp_path / "eval", episodes=3, mode="evaluation", video=False
    )
    assert evaluation.best_mean is None and evaluation.solved_at is None
    assert palaestra.load_results(tmp_path / "eval")["episode_types"] == ["e"] * 3


def test_run_agent_checks_its_budget(tmp_path: Path) -> None:
    with pytest.raises(TrainingError, match="exactly one"):
        run_agent("CartPole-v1", "random", tmp_path / "x", episodes=1, steps=1)
    with pytest.raises(TrainingError, match="at least 1"):
        run_agent("CartPole-v1", "random", tmp_path / "x", steps=0)
    assert not (tmp_path / "x").exists()


def test_run_agent_with_a_factory_and_an_interrupt(tmp_path: Path) -> None:
    class Quitter:
        def __init__(self) -> None:
            self.steps = 0

        def act(self, observation: Any) -> int:
            self.steps += 1
            if self.steps == 120:
                raise KeyboardInterrupt
            return 0

    summary = run_agent("CartPole-v1", lambda o, a: Quitter(), tmp_path / "q", episodes=100, video=False)
    assert summary.interrupted and 0 < summary.episodes < 100
    assert len(palaestra.load_results(tmp_path / "q")["episode_rewards"]) == summary.episodes
