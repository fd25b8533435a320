"""The built-in ``cem`` agent: the cross-entropy method on a linear policy (numpy only).

The policy maps the flattened observation ``x`` (with a bias term) linearly to an action:

* ``Discrete(2)``: ``action = int(theta . [x, 1] > 0)``;
* ``Discrete(n)``: ``action = argmax(W [x, 1])``;
* ``Box`` actions: ``action = clip(W [x, 1], low, high)``.

Training happens one episode at a time, so it works under :class:`palaestra.Monitor` and in
``palaestra run``. Each *generation* plays the current **mean** parameters for one episode, then
``population`` parameter vectors sampled from ``N(mean, std^2)``, one episode each. The best
``elite_frac`` of them give the next mean and std (plus a little extra noise that decays, which
keeps the search from collapsing too early).

**Exploitation.** The Monitor counts *every* training episode, including exploration, towards
"solved" (a mean of ``reward_threshold`` over 100 consecutive episodes). So once the search has
converged the agent stops exploring and plays the mean policy only. It switches when the mean policy
has, for ``patience`` generations in a row, scored at least as well as every sampled policy of its
generation, and at least ``target_return`` when one is given (``palaestra run`` passes the env's
``reward_threshold``, so that a flat start, where every policy scores the same, is not mistaken for
convergence). If the mean policy's returns then fall well below what it scored when the switch
happened, the agent resumes the search.

Everything random comes from one ``numpy.random.Generator`` seeded by ``seed``: the same seed and
the same environment seeds give the same run.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

from palaestra.errors import Error

__all__ = ["CEMAgent", "make_agent"]

logger = logging.getLogger("palaestra.agents.cem")


class LinearPolicy:
    """A linear map from flattened observations to actions of ``action_space``."""

    def __init__(self, observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        try:
            self.obs_dim = int(gym.spaces.flatdim(observation_space))
        except (NotImplementedError, ValueError, TypeError) as exc:
            raise Error(
                f"The cem agent cannot flatten observation space {observation_space}; it needs a Box, "
                "Discrete, MultiDiscrete, MultiBinary, Tuple or Dict of those."
            ) from exc
        if isinstance(action_space, gym.spaces.Discrete):
            self.n_out = 1 if action_space.n == 2 else int(action_space.n)
        elif isinstance(action_space, gym.spaces.Box):
            self.n_out = int(np.prod(action_space.shape))
        else:
            raise Error(
                f"The cem agent supports Discrete and Box action spaces, not {action_space}; "
                "write your own agent (see 'palaestra run --help', module:factory)."
            )
        self.size = self.n_out * (self.obs_dim + 1)

    def act(self, params: np.ndarray, observation: Any) -> Any:
        """The action of the policy with parameters ``params`` for ``observation``."""
        x = np.asarray(gym.spaces.flatten(self.observation_space, observation), dtype=np.float64)
        w = params.reshape(self.n_out, self.obs_dim + 1)
        y = w[:, :-1] @ x + w[:, -1]
        space = self.action_space
        if isinstance(space, gym.spaces.Discrete):
            index = int(y[0] > 0) if self.n_out == 1 else int(np.argmax(y))
            return int(space.start) + index
        assert isinstance(space, gym.spaces.Box)
        return np.clip(y.reshape(space.shape), space.low, space.high).astype(space.dtype)


class CEMAgent:
    """Cross-entropy method over the parameters of a :class:`LinearPolicy`.

    Args:
        observation_space, action_space: the environment's spaces.
        seed: seeds the agent's random generator (``None``: fresh entropy).
        population: sampled parameter vectors per generation (each plays one episode).
        elite_frac: the fraction of the best samples that defines the next distribution.
        init_std: the initial standard deviation of every parameter.
        extra_std: extra noise (a standard deviation) added to the elite's spread, decaying linearly
            over ``extra_decay`` generations down to ``extra_std_floor``, which stays: single episodes
            are noisy scores, and without it the search can collapse onto a policy that is good only
            from some starting states.
        patience: generations of converged mean-policy scores before exploiting.
        target_return: if given, the mean policy must also score at least this to count as converged.
    """

    def __init__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        seed: int | None = None,
        population: int = 20,
        elite_frac: float = 0.2,
        init_std: float = 1.0,
        extra_std: float = 1.0,
        extra_decay: int = 10,
        extra_std_floor: float = 0.5,
        patience: int = 3,
        target_return: float | None = None,
    ) -> None:
        if population < 2:
            raise Error(f"cem: population must be at least 2, not {population}")
        if not 0 < elite_frac <= 1:
            raise Error(f"cem: elite_frac must be in (0, 1], not {elite_frac}")
        self.policy = LinearPolicy(observation_space, action_space)
        self.rng = np.random.default_rng(seed)
        self.population = population
        self.n_elite = max(1, round(population * elite_frac))
        self.extra_std = extra_std
        self.extra_decay = max(1, extra_decay)
        self.extra_std_floor = extra_std_floor
        self.patience = max(1, patience)
        self.target_return = target_return
        self.mean = np.zeros(self.policy.size)
        self.std = np.full(self.policy.size, float(init_std))
        self.generation = 0
        self.exploiting = False
        #: one dict per finished generation: mean-policy return, best/mean sampled return, std
        self.history: list[dict[str, float]] = []
        self._converged_streak = 0
        self._exploit_level = 0.0
        self._exploit_returns: deque[float] = deque(maxlen=10)
        self._episode_return = 0.0
        self._start_generation()

    # -- the Agent protocol ---------------------------------------------------------------------------
    def act(self, observation: Any) -> Any:
        """The current policy's action (the mean policy, or the sample being evaluated)."""
        return self.policy.act(self._params, observation)

    def observe(self, observation: Any, reward: float, terminated: bool, truncated: bool) -> None:
        """Add up the episode's return."""
        self._episode_return += float(reward)

    def end_episode(self) -> None:
        """Score the policy that played this episode and choose the next one."""
        ret, self._episode_return = self._episode_return, 0.0
        if self.exploiting:
            self._after_exploit_episode(ret)
            return
        self._returns.append(ret)
        if len(self._returns) < len(self._candidates):
            self._params = self._candidates[len(self._returns)]
            return
        self._finish_generation()

    # -- the search ---------------------------------------------------------------------------------
    def _start_generation(self) -> None:
        noise = self.rng.standard_normal((self.population, self.policy.size))
        samples = self.mean + noise * self.std
        # The mean first: its score decides when the search has converged.
        self._candidates = [self.mean.copy(), *samples]
        self._returns: list[float] = []
        self._params = self._candidates[0]

    def _finish_generation(self) -> None:
        mean_return, sample_returns = self._returns[0], np.asarray(self._returns[1:])
        samples = np.asarray(self._candidates[1:])
        elite = samples[np.argsort(-sample_returns, kind="stable")[: self.n_elite]]
        decayed = self.extra_std * max(0.0, 1.0 - self.generation / self.extra_decay)
        extra = max(decayed, self.extra_std_floor)
        self.mean = elite.mean(axis=0)
        self.std = np.sqrt(elite.var(axis=0) + extra**2)
        self.history.append(
            {
                "mean_policy_return": mean_return,
                "best_sample_return": float(sample_returns.max()),
                "mean_sample_return": float(sample_returns.mean()),
                "std": float(self.std.mean()),
            }
        )
        logger.debug("cem generation %d: %s", self.generation, self.history[-1])
        converged = mean_return >= sample_returns.max() and (
            self.target_return is None or mean_return >= self.target_return
        )
        self._converged_streak = self._converged_streak + 1 if converged else 0
        self.generation += 1
        if self._converged_streak >= self.patience:
            # The policy that earned the streak is the one that played the generation's first episode.
            self._start_exploiting(self._candidates[0], mean_return)
        else:
            self._start_generation()

    def _start_exploiting(self, params: np.ndarray, level: float) -> None:
        logger.info(
            "cem: converged after %d generations; playing the mean policy from now on", self.generation
        )
        self.exploiting = True
        self.mean = params
        self._params = params
        self._exploit_level = level
        self._exploit_returns.clear()

    def _after_exploit_episode(self, ret: float) -> None:
        self._exploit_returns.append(ret)
        full = len(self._exploit_returns) == self._exploit_returns.maxlen
        if full and np.mean(self._exploit_returns) < self._tolerance_floor():
            logger.info("cem: the mean policy's returns fell; resuming the search")
            self.exploiting = False
            self._converged_streak = 0
            self.std = np.maximum(self.std, 0.1)
            self._start_generation()

    def _tolerance_floor(self) -> float:
        level = self._exploit_level
        return level - 0.1 * abs(level) - 1e-9


def make_agent(
    observation_space: gym.Space[Any],
    action_space: gym.Space[Any],
    seed: int | None = None,
    reward_threshold: float | None = None,
    **kwargs: Any,
) -> CEMAgent:
    """Factory for ``--agent cem`` (``palaestra.agents.cem:make_agent``).

    ``reward_threshold`` (the env's, when it has one) becomes ``target_return``; other ``kwargs`` go
    to :class:`CEMAgent`.
    """
    kwargs.setdefault("target_return", reward_threshold)
    return CEMAgent(observation_space, action_space, seed=seed, **kwargs)
