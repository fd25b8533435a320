"""The 2017 toy-text environments that Gymnasium dropped, on the Gymnasium API.

* :class:`KellyCoinflipEnv` (``KellyCoinflip-v0``): bet on a biased coin (60% heads) for 300 rounds,
  starting with $25, capped at $250; the reward is the final wealth (Haghani & Dewey 2016).
* :class:`KellyCoinflipGeneralizedEnv` (``KellyCoinflipGeneralized-v0``): the same with the edge, the
  cap and the number of rounds drawn anew each game (Beta(7, 3), Pareto, N(300, 25)).
* :class:`NChainEnv` (``NChain-v0``): walk a chain of 5 states for a large reward at its end, or
  go back for a small one; actions slip 20% of the time (Strens 2000).
* :class:`RouletteEnv` (``Roulette-v0``): bet on a 37-spot wheel, or walk away.
* :class:`GuessingGameEnv` (``GuessingGame-v0``): find a number in [-1000, 1000) to within 1% from
  higher/lower hints.
* :class:`HotterColderEnv` (``HotterColder-v0``): guess close to a hidden number, rewarded by
  closeness.
* :class:`TaxiEnv` (``Taxi-v2``): Gymnasium's Taxi on the 2017 map, with the 2017 end state.

Seeded the 2017 way (:mod:`palaestra.envs.legacy.seeding`), so a seed replays 2017's episodes. Where
2017 drew from somewhere else, palaestra draws from the environment's generator and says so on the
class. The Kelly games render (``'human'`` prints, ``'ansi'`` returns the line, so the Monitor can
record it); the others, as in 2017, do not render.
"""

from __future__ import annotations

import math
import sys
from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.toy_text import taxi

from palaestra.envs.legacy.seeding import Seeded2017

__all__ = [
    "GuessingGameEnv",
    "HotterColderEnv",
    "KellyCoinflipEnv",
    "KellyCoinflipGeneralizedEnv",
    "NChainEnv",
    "RouletteEnv",
    "TaxiEnv",
]

Step = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]

#: the largest wealth cap of a generalized game: the action space counts cents in 64 bits (about one
#: game in 3000 draws a larger cap from the Pareto prior; 2017's Python ints had no limit)
_LARGEST_CAP = 9 * 10**16


class _ToyText(Seeded2017, gymnasium.Env[Any, Any]):
    metadata: dict[str, Any] = {"render_modes": []}
    _started = False

    def _check_render_mode(self, render_mode: str | None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            modes = ", ".join(repr(m) for m in self.metadata["render_modes"]) or "nothing (as in 2017)"
            raise gymnasium.error.Error(f"{type(self).__name__} renders {modes}, not {render_mode!r}")
        self.render_mode = render_mode

    def _check_action(self, action: Any) -> None:
        if not self._started:
            raise gymnasium.error.ResetNeeded(f"{type(self).__name__}: call reset() before step()")
        if not self.action_space.contains(action):
            raise gymnasium.error.InvalidAction(
                f"{type(self).__name__}: {action!r} is not an action of {self.action_space}"
            )


class KellyCoinflipEnv(_ToyText):
    """Bet ``action`` cents (at most your wealth) on a coin that comes up heads with ``edge``.

    Observation: ``(wealth as a 1-element array, rounds left)``. The episode ends when you are broke
    (reward 0) or, one step after the last round, with your wealth as the reward.
    """

    metadata: dict[str, Any] = {"render_modes": ["human", "ansi"], "render_fps": 2}  # 2017: 0.5 s a frame

    def __init__(  # 2017's argument names
        self, initialWealth: float = 25.0, edge: float = 0.6, maxWealth: float = 250.0, maxRounds: int = 300,
        render_mode: str | None = None,
    ) -> None:
        self._check_render_mode(render_mode)
        self.action_space = spaces.Discrete(int(maxWealth * 100))  # bets in cents
        self.observation_space = spaces.Tuple(
            (spaces.Box(0, maxWealth, (1,), dtype=np.float64), spaces.Discrete(maxRounds + 1))
        )
        self.edge = edge
        self.initial_wealth = initialWealth
        self.max_wealth = maxWealth
        self.max_rounds = maxRounds
        self.wealth = initialWealth
        self.rounds = maxRounds

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self._seed_2017(seed)
        self._started = True
        self.rounds = self.max_rounds
        self.wealth = self.initial_wealth
        return self._get_obs(), {}

    def step(self, action: Any) -> Step:
        self._check_action(action)
        random = self.random_2017
        assert random is not None
        bet = min(int(action) / 100.0, self.wealth)  # a bet above your wealth bets everything
        reward, done = 0.0, False
        if self.wealth < 0.000001:
            done = True
        elif self.rounds == 0:
            done, reward = True, float(self.wealth)
        else:
            self.rounds -= 1
            self._play_round(random.uniform() < self.edge, bet)
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), reward, done, False, {}

    def _play_round(self, heads: bool, bet: float) -> None:
        self.wealth = min(self.max_wealth, self.wealth + bet) if heads else self.wealth - bet

    def _get_obs(self) -> tuple[np.ndarray, int]:
        return np.array([self.wealth], dtype=np.float64), self.rounds

    def _status(self) -> str:
        return f"Current wealth:  {self.wealth} ; Rounds left:  {self.rounds}\n"

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._status()
        if self.render_mode == "human":
            sys.stdout.write(self._status())
        return None


def generalized_pareto(shape: float, location: float, random: np.random.RandomState) -> float:
    """One draw of the generalized Pareto distribution (scale 1), by inverting its CDF at a uniform draw.

    The same number from the same generator state as 2017's ``scipy.stats.genpareto.rvs(shape,
    location, random_state=random)``, whose generic sampler does exactly this (one uniform, then
    ``ppf(u) = expm1(-shape * log1p(-u)) / shape``; ``-log1p(-u)`` at shape 0), so that a core install
    needs no scipy (tests/envs/test_legacy_envs.py compares the two).
    """
    log_survival = math.log1p(-random.uniform())
    quantile = -log_survival if shape == 0 else math.expm1(-shape * log_survival) / shape
    return quantile + location


class KellyCoinflipGeneralizedEnv(KellyCoinflipEnv):
    """The Kelly coinflip game with its edge, wealth cap and length hidden and drawn for each game.

    Observation: ``(wealth, rounds elapsed, wins, losses, highest wealth seen)``. The action and
    observation spaces change with each game's cap and length, as in 2017 (``action_space.n`` is the
    cap in cents).

    2017 drew the game's parameters from ``gym.spaces``' shared generator (seeded 0 at import), so
    every process played the same sequence of games whatever its seed; palaestra draws them from the
    environment's seeded generator, before the game's coin flips.
    """

    def __init__(  # 2017's argument names
        self, initialWealth: float = 25.0, edgePriorAlpha: float = 7, edgePriorBeta: float = 3,
        maxWealthAlpha: float = 5.0, maxWealthM: float = 200.0, maxRoundsMean: float = 300.0,
        maxRoundsSD: float = 25.0, render_mode: str | None = None,
    ) -> None:
        super().__init__(initialWealth=float(initialWealth), render_mode=render_mode)
        self.edge_prior = (edgePriorAlpha, edgePriorBeta)
        self.max_wealth_prior = (maxWealthAlpha, maxWealthM)
        self.max_rounds_prior = (maxRoundsMean, maxRoundsSD)
        self._set_game(edge=0.6, max_wealth=250.0, max_rounds=300)

    def _set_game(self, edge: float, max_wealth: float, max_rounds: int) -> None:
        self.edge, self.max_wealth, self.max_rounds = edge, max_wealth, max_rounds
        self.action_space = spaces.Discrete(int(max_wealth * 100))
        counts = spaces.Discrete(max_rounds + 1)
        wealth = spaces.Box(0, max_wealth, (1,), dtype=np.float64)
        self.observation_space = spaces.Tuple((wealth, counts, counts, counts, wealth))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        random = self._seed_2017(seed)
        edge = random.beta(*self.edge_prior)
        alpha, m = self.max_wealth_prior
        max_wealth = min(round(generalized_pareto(alpha, m, random)), _LARGEST_CAP)
        max_rounds = round(random.normal(*self.max_rounds_prior))
        self._set_game(edge, max_wealth, max_rounds)
        self._started = True
        self.wealth = self.initial_wealth
        self.rounds = max_rounds
        self.max_ever_wealth = float(self.initial_wealth)
        self.wins = self.losses = self.rounds_elapsed = 0
        return self._get_obs(), {}

    def _play_round(self, heads: bool, bet: float) -> None:
        super()._play_round(heads, bet)
        self.rounds_elapsed += 1
        if heads:
            self.wins += 1
            self.max_ever_wealth = max(self.wealth, self.max_ever_wealth)
        else:
            self.losses += 1

    def _get_obs(self) -> Any:
        wealth = np.array([float(self.wealth)], dtype=np.float64)
        return wealth, self.rounds_elapsed, self.wins, self.losses, np.array([self.max_ever_wealth], dtype=np.float64)

    def _status(self) -> str:
        return (
            f"Current wealth:  {self.wealth} ; Rounds left:  {self.rounds} ; True edge:  {self.edge} ; "
            f"True max wealth:  {self.max_wealth} ; True stopping time:  {self.max_rounds} ; "
            f"Rounds left:  {self.max_rounds - self.rounds_elapsed}\n"
        )


class NChainEnv(_ToyText):
    """A chain of ``n`` states: action 0 walks forward (``large`` at the end), 1 goes back for ``small``.

    Each action slips to the other with probability ``slip``. Observation: the state, 0..n-1. The
    episode never ends by itself (the registered id stops it after 1000 steps).
    """

    def __init__(self, n: int = 5, slip: float = 0.2, small: float = 2, large: float = 10,
                 render_mode: str | None = None) -> None:
        self._check_render_mode(render_mode)
        self.n, self.slip, self.small, self.large = n, slip, small, large
        self.state = 0
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Discrete(n)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        self._seed_2017(seed)
        self._started = True
        self.state = 0
        return self.state, {}

    def step(self, action: Any) -> Step:
        self._check_action(action)
        random = self.random_2017
        assert random is not None
        backwards = bool(action)
        if random.rand() < self.slip:
            backwards = not backwards
        if backwards:
            reward, self.state = self.small, 0
        elif self.state < self.n - 1:
            reward, self.state = 0, self.state + 1
        else:
            reward = self.large
        return self.state, reward, False, False, {}


class RouletteEnv(_ToyText):
    """Bet on one of ``spots`` spots (0 pays 35, an even/odd match pays 1, else -1), or walk away.

    Action ``spots`` walks away (reward 0, the episode ends). Observation: always 0.
    """

    def __init__(self, spots: int = 37, render_mode: str | None = None) -> None:
        self._check_render_mode(render_mode)
        self.n = spots + 1
        self.action_space = spaces.Discrete(self.n)
        self.observation_space = spaces.Discrete(1)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        self._seed_2017(seed)
        self._started = True
        return 0, {}

    def step(self, action: Any) -> Step:
        self._check_action(action)
        random = self.random_2017
        assert random is not None
        action = int(action)
        if action == self.n - 1:
            return 0, 0, True, False, {}
        spin = random.randint(0, self.n - 1)
        if spin == action == 0:
            reward = self.n - 2.0
        elif spin != 0 and action != 0 and spin % 2 == action % 2:
            reward = 1.0
        else:
            reward = -1.0
        return 0, reward, False, False, {}


class _NumberGuess(_ToyText):
    """A hidden number uniform in [-1000, 1000); observations say where the last guess was."""

    range = 1000
    bounds: float = 10000
    guess_max = 200

    def __init__(self, render_mode: str | None = None) -> None:
        self._check_render_mode(render_mode)
        self.action_space = spaces.Box(-self.bounds, self.bounds, (1,), dtype=np.float64)
        # 0: no guess yet, 1: the guess was lower, 2: equal, 3: higher than the number
        self.observation_space = spaces.Discrete(4)
        self.number = 0.0
        self.guess_count = 0
        self.observation = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        random = self._seed_2017(seed)
        self._started = True
        self.number = float(random.uniform(-self.range, self.range))
        self.guess_count = 0
        self.observation = 0
        return self.observation, {}

    def _guess(self, action: Any) -> float:
        self._check_action(action)
        guess = float(np.asarray(action).reshape(-1)[0])
        if guess < self.number:
            self.observation = 1
        elif guess == self.number:
            self.observation = 2
        else:
            self.observation = 3
        self.guess_count += 1
        return guess

    def _info(self) -> dict[str, Any]:
        return {"number": self.number, "guesses": self.guess_count}


class GuessingGameEnv(_NumberGuess):
    """Guess the number to within 1% of the range (reward 1, the episode ends) in 200 guesses."""

    def step(self, action: Any) -> Step:
        guess = self._guess(action)
        found = self.number - self.range * 0.01 < guess < self.number + self.range * 0.01
        done = found or self.guess_count >= self.guess_max
        return self.observation, 1 if found else 0, done, False, self._info()


class HotterColderEnv(_NumberGuess):
    """Guess close to the number: the reward is ``((min + 2000) / (max + 2000))**2`` of guess and number."""

    bounds = 2000

    def step(self, action: Any) -> Step:
        guess = self._guess(action)
        low, high = min(guess, self.number), max(guess, self.number)
        ratio = (low + self.bounds) / (high + self.bounds)
        reward = ratio * ratio  # as numpy squared 2017's array (x ** 2 can differ in the last bit)
        return self.observation, reward, self.guess_count >= self.guess_max, False, self._info()


TAXI_MAP_2017 = (
    "+---------+",
    "|R: | : :G|",
    "| : : : : |",
    "| : : : : |",
    "| | : | : |",
    "|Y| : |B: |",
    "+---------+",
)


class TaxiEnv(taxi.TaxiEnv):
    """``Taxi-v2``: Gymnasium's Taxi (reset, step, rendering, seeding) with 2017's transitions.

    Two things changed in ``Taxi-v3``: a wall now separates the first two columns of the second row
    (2017's map, :data:`TAXI_MAP_2017`, has none), and after a successful drop-off the state puts the
    passenger at the destination (2017 kept them in the taxi, passenger index 4).
    """

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)
        self.desc = np.asarray(TAXI_MAP_2017, dtype="c")
        for state in range(self.observation_space.n):  # type: ignore[attr-defined]
            for action in range(self.action_space.n):  # type: ignore[attr-defined]
                self.P[state][action] = [self._transition_2017(state, action)]

    def _transition_2017(self, state: int, action: int) -> tuple[float, int, int, bool]:
        row, col, passenger, destination = self.decode(state)
        taxi_at = (row, col)
        reward, done = -1, False
        if action == 0:  # south
            row = min(row + 1, self.max_row)
        elif action == 1:  # north
            row = max(row - 1, 0)
        elif action == 2 and self.desc[1 + row, 2 * col + 2] == b":":  # east, unless a wall
            col = min(col + 1, self.max_col)
        elif action == 3 and self.desc[1 + row, 2 * col] == b":":  # west
            col = max(col - 1, 0)
        elif action == 4:  # pick up
            if passenger < 4 and taxi_at == self.locs[passenger]:
                passenger = 4
            else:
                reward = -10
        elif action == 5:  # drop off
            if taxi_at == self.locs[destination] and passenger == 4:
                reward, done = 20, True
            elif taxi_at in self.locs and passenger == 4:
                passenger = self.locs.index(taxi_at)
            else:
                reward = -10
        return 1.0, self.encode(row, col, passenger, destination), reward, done
