"""The four 2017 debugging environments: one or two rounds with a known optimal policy and value.

==================================  ============================================================
``OneRoundDeterministicReward``     action 0 pays 0, action 1 pays 1; optimal: 1 (value 1)
``OneRoundNondeterministicReward``  action 0 pays 1 or 3, action 1 pays 0 or 5; optimal: 1 (2.5)
``TwoRoundDeterministicReward``     pays [[0, 3], [1, 2]][first][second]; optimal: 0 then 1 (3)
``TwoRoundNondeterministicReward``  pays one of [[[-1, 1], [0, 0, 9]], [[0, 2], [2, 3]]][first][second];
                                    optimal: 0 then 1 (3)
==================================  ============================================================

Observations: always 0 in one-round games; in two-round games 2 before the first action, then the
first action. Meant for checking that a learning algorithm finds what it should.

2017's ``OneRoundNondeterministicReward`` docstring had the two actions the wrong way round (its
code paid 0 or 5 for action 1); the code is kept. 2017's ``TwoRoundNondeterministicReward`` failed
on its second step unless ``seed()`` had been called (only ``seed()`` made its generator); here
every environment seeds itself on its first reset (:mod:`palaestra.envs.legacy.seeding`).
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium
from gymnasium import spaces

from palaestra.envs.legacy.seeding import Seeded2017

__all__ = [
    "OneRoundDeterministicRewardEnv",
    "OneRoundNondeterministicRewardEnv",
    "TwoRoundDeterministicRewardEnv",
    "TwoRoundNondeterministicRewardEnv",
]

Step = tuple[int, SupportsFloat, bool, bool, dict[str, Any]]


class _Rounds(Seeded2017, gymnasium.Env[Any, Any]):
    metadata: dict[str, Any] = {"render_modes": []}
    rounds = 1
    _first_action: int | None = None
    _started = False

    def __init__(self, render_mode: str | None = None) -> None:
        if render_mode is not None:
            raise gymnasium.error.Error(f"{type(self).__name__} does not render (as in 2017), not {render_mode!r}")
        self.render_mode = None
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Discrete(1 if self.rounds == 1 else 3)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        self._seed_2017(seed)
        self._started = True
        self._first_action = None
        return self._obs(), {}

    def step(self, action: Any) -> Step:
        if not self._started:
            raise gymnasium.error.ResetNeeded(f"{type(self).__name__}: call reset() before step()")
        if not self.action_space.contains(action):
            raise gymnasium.error.InvalidAction(f"{type(self).__name__}: {action!r} is not 0 or 1")
        action = int(action)
        if self.rounds == 2 and self._first_action is None:
            self._first_action = action
            return self._obs(), 0, False, False, {}
        return self._obs(), self._payout(self._first_action, action), True, False, {}

    def _obs(self) -> int:
        if self.rounds == 1:
            return 0
        return 2 if self._first_action is None else self._first_action

    def _payout(self, first: int | None, action: int) -> Any:
        raise NotImplementedError


class OneRoundDeterministicRewardEnv(_Rounds):
    """Action 0 pays 0, action 1 pays 1."""

    def _payout(self, first: int | None, action: int) -> Any:
        return 1 if action else 0


class OneRoundNondeterministicRewardEnv(_Rounds):
    """Action 0 pays 1 or 3 (mean 2), action 1 pays 0 or 5 (mean 2.5)."""

    def _payout(self, first: int | None, action: int) -> Any:
        assert self.random_2017 is not None
        return int(self.random_2017.choice([0, 5] if action else [1, 3]))


class TwoRoundDeterministicRewardEnv(_Rounds):
    """Two actions; the pair pays ``[[0, 3], [1, 2]][first][second]``."""

    rounds = 2
    PAYOUTS = ((0, 3), (1, 2))

    def _payout(self, first: int | None, action: int) -> Any:
        assert first is not None
        return self.PAYOUTS[first][action]


class TwoRoundNondeterministicRewardEnv(_Rounds):
    """Two actions; the pair pays one of ``[[[-1, 1], [0, 0, 9]], [[0, 2], [2, 3]]][first][second]``."""

    rounds = 2
    PAYOUTS = (((-1, 1), (0, 0, 9)), ((0, 2), (2, 3)))

    def _payout(self, first: int | None, action: int) -> Any:
        assert first is not None and self.random_2017 is not None
        return int(self.random_2017.choice(self.PAYOUTS[first][action]))
