"""Ratings: Bradley-Terry on the Elo scale, anchored, with 95 % intervals that hold the truth 95 % of the time.

The model: player i beats player j with probability ``1 / (1 + 10 ** ((r_j - r_i) / 400))`` (the
Elo curve; a draw counts as half a win for each side). The ratings maximise the likelihood of all
the games times a weak prior, found by Newton's method (the objective is concave: a few iterations).

* **A weak prior.** A player that won (or lost) every game has no finite maximum likelihood. Every
  rating gets a normal prior around its group's mean, :data:`PRIOR_SD` wide (1,000 Elo): it weighs
  as much as a fraction of one game, the same at every ladder size, so its pull shrinks as real games
  accumulate (at 5,000 games among 20 players it moves no rating by more than a few Elo; without it
  the estimate is the plain maximum likelihood, which ``choix`` matches to 0.00 Elo). An undefeated
  player is rated finite, above everyone it beat, with a wide interval.
* **Anchored.** Ratings are differences; the scale is fixed by an anchor, a named engine setting held
  at a fixed value (:data:`DEFAULT_ANCHORS`: the first of them that played on the ladder), so that a
  rating keeps its meaning as players come and go. A player with no chain of games to the anchor is
  rated within its own group, whose mean is held at the anchor's value, and is marked unanchored.
* **Intervals.** 95 % Wald intervals from the curvature of the objective at its maximum (the
  inverse of the observed information, prior included): the interval of player i is its rating
  ± 1.96 standard errors of its difference to the anchor (or to its group's mean, unanchored). The
  anchor's interval is its value (it is fixed). ``bench/rating_calibration.py`` measures them
  against known strengths: 20 players, 5,000 games, 200 tournaments, the intervals hold the truth
  about 95 % of the time. (The former 200-sample bootstrap with BayesElo-style virtual games per pair
  pulled ratings some 9 % to the mean and held the truth only 60-67 % of the time.)

OpenSpiel's Bradley-Terry (``pyspiel.elo``) agrees with these ratings within 0.4 Elo on
``bench/ladder.py``'s field (10,000 games, 20 players 100 Elo apart), which also times them. (The
former prior's comment claimed that agreement too; its ratings were 37-39 Elo away from OpenSpiel's.)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "DEFAULT_ANCHORS",
    "ELO",
    "PRIOR_SD",
    "RatedGame",
    "Rating",
    "rate",
]

#: Elo points per natural-log unit of odds: 400 / ln 10.
ELO = 400.0 / math.log(10.0)
#: The prior's standard deviation around the group's mean, in Elo. Measured by
#: bench/rating_calibration.py (20 players 100 Elo apart, 100 tournaments): at 1,000 Elo the 95 %
#: intervals cover 96 % at 5,000 games and 97 % at 500, the estimates' slope on the truth 1.00 and
#: 1.01; at 300 Elo the prior pulls (slope 0.95 and 0.70, coverage 88 % and 58 %); without a prior
#: the undefeated players of 500-game tournaments blow the slope up to 1.6.
PRIOR_SD = 1000.0
#: Standard errors either side for a 95 % interval.
_Z95 = 1.959963984540054
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


def _pair_tables(first: np.ndarray, second: np.ndarray, score: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """wins[i, j] (points of i against j) and games[i, j] (symmetric)."""
    # one bincount over the flat pair index per side
    cells = count * count
    wins = (
        np.bincount(first * count + second, score, cells) + np.bincount(second * count + first, 1.0 - score, cells)
    ).reshape(count, count)
    return wins, wins + wins.T


def _fit(wins: np.ndarray, games: np.ndarray, fixed: int, precision: float, iterations: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """The strengths (natural-log units) that maximise the likelihood times the prior, ``theta[fixed] = 0``,
    by damped Newton steps; and the covariance of the free strengths (the inverse of the information)."""
    count = len(wins)
    theta = np.zeros(count)
    free = np.arange(count) != fixed
    row_wins = wins.sum(axis=1)
    # the prior's curvature: precision * (I - 11'/n), on deviations from the group's mean
    centring = np.eye(count) - 1.0 / count
    information = np.zeros((count - 1, count - 1))
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j]: i beats j
        gradient = (row_wins - (games * p).sum(axis=1) - precision * (theta - theta.mean()))[free]
        weight = games * p * p.T
        information = (np.diag(weight.sum(axis=1)) - weight + precision * centring)[np.ix_(free, free)]
        step = np.linalg.solve(information, gradient)
        largest = np.abs(step).max(initial=0.0)
        if largest > 2.0:  # far from the optimum: keep the step within the region where it is right
            step *= 2.0 / largest
        theta[free] += step
        if largest < 1e-9:
            break
    covariance = np.zeros((count, count))
    covariance[np.ix_(free, free)] = np.linalg.inv(information)
    return theta, covariance


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
    wins: np.ndarray, games: np.ndarray, anchor: int | None, anchor_value: float, precision: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Elo ratings of every player, each connected group fitted alone, the anchor's group anchored;
    the ratings' standard errors (Elo); and which players are in the anchor's group."""
    rating, error = np.zeros(len(wins)), np.zeros(len(wins))
    anchored = np.zeros(len(wins), dtype=bool)
    for group in _components(games):
        sub = np.ix_(group, group)
        if anchor is not None and anchor in group:
            fixed = int(np.flatnonzero(group == anchor)[0])
            theta, covariance = _fit(wins[sub], games[sub], fixed, precision)
            rating[group] = anchor_value + ELO * theta
            anchored[group] = True
        else:
            theta, covariance = _fit(wins[sub], games[sub], 0, precision)
            # the group's mean is held: the covariance of the deviations from it
            centring = np.eye(len(group)) - 1.0 / len(group)
            covariance = centring @ covariance @ centring
            rating[group] = anchor_value + ELO * (theta - theta.mean())
        error[group] = ELO * np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    return rating, error, anchored


def rate(
    games: Iterable[RatedGame], anchors: Sequence[tuple[str, float]] = DEFAULT_ANCHORS, prior_sd: float = PRIOR_SD
) -> list[Rating]:
    """The ratings of every player of ``games``, best first (see the module docstring); ``prior_sd``
    in Elo (``math.inf``: no prior, the plain maximum likelihood, infinite for an undefeated player)."""
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
    precision = (ELO / prior_sd) ** 2
    wins, pair_games = _pair_tables(first, second, score, count)
    estimate, error, anchored = _ratings(wins, pair_games, anchor, anchor_value, precision)
    low, high = estimate - _Z95 * error, estimate + _Z95 * error
    played = np.bincount(first, minlength=count) + np.bincount(second, minlength=count)
    points = np.bincount(first, score, count) + np.bincount(second, 1.0 - score, count)
    ratings = [
        Rating(name, float(estimate[i]), float(low[i]), float(high[i]), int(played[i]), float(points[i]),
               anchored=bool(anchored[i]), is_anchor=i == anchor)
        for i, name in enumerate(names)
    ]
    return sorted(ratings, key=lambda r: -r.rating)
