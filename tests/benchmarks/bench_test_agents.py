"""Agents for the runner tests (imported by spawned worker processes via ``module:factory``)."""

from __future__ import annotations

import os
from typing import Any


class HookCountingAgent:
    """Random actions; counts observe/end_episode calls into $PALAESTRA_TEST_HOOKS_DIR/{pid}.txt."""

    def __init__(self, action_space: Any) -> None:
        self.action_space = action_space
        self.observed = 0
        self.ended = 0

    def act(self, observation: Any) -> Any:
        return self.action_space.sample()

    def observe(self, observation: Any, reward: float, terminated: bool, truncated: bool) -> None:
        assert isinstance(reward, float)
        self.observed += 1

    def end_episode(self) -> None:
        self.ended += 1
        path = os.path.join(os.environ["PALAESTRA_TEST_HOOKS_DIR"], f"{os.getpid()}-{id(self)}.txt")
        with open(path, "w") as f:
            f.write(f"{self.observed} {self.ended}")


def counting(observation_space: Any, action_space: Any) -> HookCountingAgent:
    return HookCountingAgent(action_space)


class Broken:
    def act(self, observation: Any) -> Any:
        raise RuntimeError("this agent is broken on purpose")


def broken(observation_space: Any, action_space: Any) -> Broken:
    return Broken()


def broken_on_three_actions(observation_space: Any, action_space: Any) -> Any:
    """Random on CartPole (two actions), broken on MountainCar (three)."""
    from palaestra.agents.random_agent import RandomAgent

    return Broken() if action_space.n == 3 else RandomAgent(action_space)
