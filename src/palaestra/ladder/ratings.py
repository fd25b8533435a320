"""Ratings: Bradley-Terry maximum likelihood over games, on the Elo scale, anchored, with bootstrap intervals.

The model: player i beats player j with probability ``1 / (1 + 10 ** ((r_j - r_i) / 400))`` (the
Elo curve; a draw counts as half a win for each side). The ratings ``r`` maximise the likelihood of
all the games, found by Newton's method (the log-likelihood is concave: a few iterations).

* **A weak prior.** A player that won (or lost) every game has no finite maximum; as BayesElo does,
  every pair of players that met gets virtual games added to its real ones: a tenth of a draw
  (:data:`VIRTUAL_DRAWS`), and one virtual win for each side weighing a tenth of a game each
  (:data:`VIRTUAL_WIN_WEIGHT`), which the bootstrap draws again with the real games (so that a pair
  that only ever had one winner still gets an interval that is not a point). Together they weigh as
  three tenths of a draw: next to nothing once real games accumulate.
* **Anchored.** Ratings are differences; the scale is fixed by an anchor, a named engine setting held
  at a fixed value (:data:`DEFAULT_ANCHORS`: the first of them that played on the ladder), so that a
  rating keeps its meaning as players come and go. A player with no chain of games to the anchor is
  rated within its own group, whose mean is held at the anchor's value, and is marked unanchored.
* **Intervals.** 95 % percentile bootstrap over games: the games are drawn again with replacement
  (:data:`BOOTSTRAP_SAMPLES` times, from a fixed seed) and rated again; the interval of a player is
  the 2.5th and 97.5th percentiles of its ratings. The anchor's interval is its value (it is fixed).

``bench/ladder_ratings.py`` times it at 10,000 games.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "BOOTSTRAP_SAMPLES",
    "DEFAULT_ANCHORS",
    "ELO",
    "RatedGame",
    "Rating",
    "rate",
]

#: Elo points per natural-log unit of odds: 400 / ln 10.
ELO = 400.0 / math.log(10.0)
#: Virtual draws added to every pair of players that met (the prior).
VIRTUAL_DRAWS = 0.1
#: The weight of each of a pair's two virtual wins (a real game weighs 1). Measured by
#: bench/ladder.py: with one draw and two wins of weight 1 a pair, 20 players 100 Elo apart came out
#: 30 % compressed at 10,000 games; at 0.1 they agree with OpenSpiel's Bradley-Terry (smoothing 0.01).
VIRTUAL_WIN_WEIGHT = 0.1
BOOTSTRAP_SAMPLES = 200
#: Anchors in order of preference, name -> fixed rating. GNU Go 3.8 at level 10 is about 1800 on
#: CGOS's 9x9 scale; the others are conventions of this ladder (their values are ladder points, not
#: measurements): the first one that played sets the scale.
DEFAULT_ANCHORS: tuple[tuple[str, float], ...] = (
    ("gnugo:10", 1800.0),
    ("gnugo:0", 1500.0),
    ("mcts:1000", 1000.0),
    ("random", 0.0),
)

#: One game: (first player, second player, the first player's points: 1 win, 0.5 draw, 0 loss).
RatedGame = tuple[str, str, float]


@dataclasses.dataclass
class Rating:
    """A player's rating on a ladder."""

    player: str
    rating: float
    low: float
    high: float
    games: int
    points: float
    anchored: bool
    is_anchor: bool = False


def _pair_tables(
    first: np.ndarray, second: np.ndarray, score: np.ndarray, weight: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """wins[i, j] (points of i against j) and games[i, j] (symmetric), with the prior's virtual draws."""
    # one bincount over the flat pair index per side
    cells = count * count
    wins = (
        np.bincount(first * count + second, score * weight, cells)
        + np.bincount(second * count + first, (1.0 - score) * weight, cells)
    ).reshape(count, count)
    games = wins + wins.T
    met = games > 0
    return wins + met * (VIRTUAL_DRAWS / 2), games + met * VIRTUAL_DRAWS


def _fit(wins: np.ndarray, games: np.ndarray, fixed: int, iterations: int = 100) -> np.ndarray:
    """Maximum-likelihood strengths (natural-log units), ``theta[fixed] = 0``, by damped Newton steps."""
    count = len(wins)
    theta = np.zeros(count)
    free = np.arange(count) != fixed
    row_wins = wins.sum(axis=1)[free]
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j]: i beats j
        gradient = row_wins - (games * p).sum(axis=1)[free]
        weight = games * p * p.T
        hessian = weight - np.diag(weight.sum(axis=1))
        step = np.linalg.solve(hessian[np.ix_(free, free)], -gradient)
        largest = np.abs(step).max(initial=0.0)
        if largest > 2.0:  # far from the optimum: keep the step within the region where it is right
            step *= 2.0 / largest
        theta[free] += step
        if largest < 1e-9:
            break
    return theta


def _components(games: np.ndarray) -> list[np.ndarray]:
    """The groups of players connected by games."""
    count = len(games)
    label = -np.ones(count, dtype=int)
    groups: list[np.ndarray] = []
    for start in range(count):
        if label[start] >= 0:
            continue
        members, frontier = [start], [start]
        label[start] = len(groups)
        while frontier:
            node = frontier.pop()
            for other in np.flatnonzero((games[node] > 0) & (label < 0)):
                label[other] = len(groups)
                members.append(int(other))
                frontier.append(int(other))
        groups.append(np.array(sorted(members)))
    return groups


def _ratings(
    wins: np.ndarray, games: np.ndarray, anchor: int | None, anchor_value: float, resample: bool = False
) -> np.ndarray:
    """Elo ratings of every player: each connected group fitted alone, the anchor's group anchored.
    In a bootstrap sample (``resample``) a player without games, or cut off from the anchor, is NaN:
    that sample says nothing about its rating."""
    result = np.zeros(len(wins))
    for group in _components(games):
        sub = np.ix_(group, group)
        if resample and ((anchor is not None and anchor not in group) or len(group) == 1):
            result[group] = np.nan
        elif anchor is not None and anchor in group:
            fixed = int(np.flatnonzero(group == anchor)[0])
            theta = _fit(wins[sub], games[sub], fixed)
            result[group] = anchor_value + ELO * theta
        else:
            theta = _fit(wins[sub], games[sub], 0)
            result[group] = anchor_value + ELO * (theta - theta.mean())
    return result


def _with_virtual_games(first: np.ndarray, second: np.ndarray, score: np.ndarray, count: int) -> tuple[np.ndarray, ...]:
    """The games plus, for every pair that met, one virtual win for each side; and every game's weight."""
    low, high = np.minimum(first, second), np.maximum(first, second)
    pairs = np.unique(low * count + high)
    a, b = pairs // count, pairs % count
    ones = np.ones(len(pairs))
    weight = np.concatenate([np.ones(len(first)), np.full(2 * len(pairs), VIRTUAL_WIN_WEIGHT)])
    return (
        np.concatenate([first, a, a]), np.concatenate([second, b, b]), np.concatenate([score, ones, 0 * ones]), weight
    )


def rate(
    games: Iterable[RatedGame],
    anchors: Sequence[tuple[str, float]] = DEFAULT_ANCHORS,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> list[Rating]:
    """The ratings of every player of ``games``, best first (see the module docstring)."""
    game_list = list(games)
    names = sorted({name for a, b, _ in game_list for name in (a, b)})
    if not names:
        return []
    count = len(names)
    index = {name: i for i, name in enumerate(names)}
    first = np.array([index[a] for a, _, _ in game_list], dtype=int)
    second = np.array([index[b] for _, b, _ in game_list], dtype=int)
    score = np.array([s for _, _, s in game_list], dtype=float)
    anchor, anchor_value = next(((index[n], v) for n, v in anchors if n in index), (None, 0.0))
    pool_first, pool_second, pool_score, pool_weight = _with_virtual_games(first, second, score, count)
    estimate = _ratings(*_pair_tables(pool_first, pool_second, pool_score, pool_weight, count), anchor, anchor_value)
    rng = np.random.default_rng(seed)
    draws = np.empty((samples, count))
    for sample in range(samples):
        pick = rng.integers(0, len(pool_first), len(pool_first))
        tables = _pair_tables(pool_first[pick], pool_second[pick], pool_score[pick], pool_weight[pick], count)
        draws[sample] = _ratings(*tables, anchor, anchor_value, True)
    with warnings.catch_warnings():  # a player absent from every sample: its interval is its estimate
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanpercentile(draws, [2.5, 97.5], axis=0) if samples else (estimate, estimate)
    low, high = np.where(np.isnan(low), estimate, low), np.where(np.isnan(high), estimate, high)
    played = np.bincount(first, minlength=count) + np.bincount(second, minlength=count)
    points = np.bincount(first, score, count) + np.bincount(second, 1.0 - score, count)
    anchored_group: Any = next((g for g in _components(_pair_tables(first, second, score, np.ones(len(score)), count)[1]) if anchor in g), [])
    ratings = [
        Rating(
            name, float(estimate[i]), float(low[i]), float(high[i]), int(played[i]), float(points[i]),
            anchored=i in anchored_group, is_anchor=i == anchor,
        )
        for i, name in enumerate(names)
    ]
    return sorted(ratings, key=lambda r: -r.rating)
