"""The built-in ``random`` agent: samples the action space."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

__all__ = ["RandomAgent", "make_agent"]


class RandomAgent:
    """Picks a uniformly random action; ``seed`` makes the choice reproducible."""

    def __init__(self, action_space: gym.Space[Any], seed: int | None = None) -> None:
        self.action_space = action_space
        if seed is not None:
            self.action_space.seed(seed)

    def act(self, observation: Any) -> Any:
        """Return a sample of the action space (the observation is ignored)."""
        return self.action_space.sample()


def make_agent(
    observation_space: gym.Space[Any], action_space: gym.Space[Any], seed: int | None = None
) -> RandomAgent:
    """Factory for ``--agent random`` (``palaestra.agents.random_agent:make_agent``)."""
    return RandomAgent(action_space, seed=seed)
