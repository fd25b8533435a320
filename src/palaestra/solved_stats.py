"""An evaluation's "solved" statistics and its learning-curve series (spec §4.6).

- :func:`solved_stats` of an :class:`~palaestra.episodes.Episodes` (and :func:`score_from_merged`,
  2017's name, on plain arrays): when the env
  counts as solved, the best window's mean and error, episode and step counts, seconds to solve;
- the means of runs too short for a window: ``episodes_mean`` (the training episodes there are, when
  fewer than ``trials``) and ``evaluation_mean`` (the evaluation episodes, type ``'e'``), and
  :func:`ranking_mean`, what a leaderboard orders the unsolved evaluations by;
- :func:`graph_stats` (and :func:`compute_graph_stats`, the spec's name, on plain arrays): the binned
  learning-curve series the scoreboard stores;
- :func:`running_mean`, :func:`trailing_mean`: the window arithmetic they share (defined in
  :mod:`palaestra.episodes`, re-exported here).

One implementation, called by ``palaestra results``, the benchmark runner and the scoreboard server
(benchmark *scores* are another thing: :mod:`palaestra.benchmarks.scoring`).
An environment counts as solved when some window of ``trials`` (100) consecutive *training*
episodes averages at least its ``reward_threshold``; ``episode_t_value`` is the index of the first
such window, i.e. the number of episodes before the solve.

One 2017 defect is fixed: the 2017 ``error`` was ``std / (sqrt(trials) - 1)``, which is not the
standard error of anything; palaestra reports the standard error of the mean of the best window,
``std(ddof=1) / sqrt(trials)``. ``legacy=True`` gives the 2017 number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np

from palaestra.episodes import Episodes, running_mean, trailing_mean

__all__ = [
    "DEFAULT_TRIALS",
    "SolvedStats",
    "compute_graph_stats",
    "graph_stats",
    "ranking_mean",
    "running_mean",
    "score_from_merged",
    "short_mean_label",
    "solved_stats",
    "trailing_mean",
    "window_error",
]

DEFAULT_TRIALS = 100


class SolvedStats(TypedDict):
    episode_t_value: int | None
    timestep_t_value: int | None
    mean: float | None
    error: float | None
    number_episodes: int
    number_timesteps: int
    seconds_to_solve: float | None
    seconds_in_total: float | None
    #: the mean reward of the training episodes when there are fewer than ``trials`` (else None:
    #: ``mean`` is the best window's)
    episodes_mean: float | None
    #: how many evaluation episodes (type ``'e'``) there are, and their mean reward
    evaluation_episodes: int
    evaluation_mean: float | None


def ranking_mean(mean: float | None, episodes_mean: float | None) -> float | None:
    """What the unsolved evaluations of a leaderboard are ordered by, best first: the best
    ``trials``-episode mean, else (a run shorter than the window) the mean of the episodes it has.

    So a run of 20 perfect episodes ranks above a random run of 150, though neither is solved;
    a run with no training episode (evaluation episodes only) has none and comes last.
    """
    return mean if mean is not None else episodes_mean


def short_mean_label(number_episodes: int, trials: int) -> str:
    """How ``episodes_mean`` is labelled wherever it is shown: ``"mean of 20 episodes (fewer than 100)"``."""
    plural = "" if number_episodes == 1 else "s"
    return f"mean of {number_episodes} episode{plural} (fewer than {trials})"


def score_from_merged(
    episode_lengths: Sequence[int],
    episode_rewards: Sequence[float],
    episode_types: Sequence[str] | None,
    timestamps: Sequence[float],
    initial_reset_timestamp: float | None,
    trials: int = DEFAULT_TRIALS,
    reward_threshold: float | None = None,
    legacy: bool = False,
) -> SolvedStats:
    """:func:`solved_stats` on the 2017 columns (2017's signature)."""
    episodes = Episodes.from_columns(
        episode_lengths, episode_rewards, timestamps, types=episode_types,
        initial_reset_timestamp=initial_reset_timestamp,
    )
    return solved_stats(episodes, trials=trials, reward_threshold=reward_threshold, legacy=legacy)


def solved_stats(
    episodes: Episodes | Mapping[str, Any],
    trials: int = DEFAULT_TRIALS,
    reward_threshold: float | None = None,
    legacy: bool = False,
) -> SolvedStats:
    """The "solved" statistics of one evaluation's :class:`~palaestra.episodes.Episodes` (or of
    what :func:`palaestra.load_results` returns, or an episode batch's document); only training
    (``'t'``) episodes count."""
    if not isinstance(episodes, Episodes):
        episodes = Episodes.from_results(episodes)
    evaluation = episodes.evaluation()
    training = episodes.training()
    lengths, rewards, stamps = training.lengths, training.rewards, training.timestamps
    start = training.first_reset
    stats = SolvedStats(
        episode_t_value=None,
        timestep_t_value=None,
        mean=None,
        error=None,
        number_episodes=len(training),
        number_timesteps=training.timesteps,
        seconds_to_solve=None,
        seconds_in_total=None,
        episodes_mean=None,
        evaluation_episodes=len(evaluation),
        evaluation_mean=float(np.mean(evaluation.rewards)) if len(evaluation) else None,
    )
    if len(stamps) and start is not None:
        stats["seconds_in_total"] = float(stamps[-1] - start)
    if len(rewards) < trials:
        stats["episodes_mean"] = float(np.mean(rewards)) if len(rewards) else None
        return stats

    means = running_mean(rewards, trials)
    if reward_threshold is not None:
        solved = np.flatnonzero(means >= reward_threshold)
        if len(solved):
            i = int(solved[0])
            stats["episode_t_value"] = i
            stats["timestep_t_value"] = int(lengths[:i].sum())
            assert start is not None
            stats["seconds_to_solve"] = float(stamps[i] - start)
    best_idx = int(np.argmax(means))
    best = rewards[best_idx : best_idx + trials]
    stats["mean"] = float(np.mean(best))
    stats["error"] = window_error(best, trials, legacy)
    return stats


def window_error(best: np.ndarray, trials: int, legacy: bool = False) -> float:
    """The error of a window's mean: its standard error (``legacy``: the 2017 number)."""
    if trials == 1:
        return 0.0
    if legacy:
        return float(np.std(best) / (np.sqrt(trials) - 1))
    return float(np.std(best, ddof=1) / np.sqrt(trials))


def compute_graph_stats(
    episode_lengths: Sequence[int],
    episode_rewards: Sequence[float],
    timestamps: Sequence[float],
    initial_reset_timestamp: float | None,
    buckets: int,
) -> dict[str, Any] | None:
    """:func:`graph_stats` on the 2017 columns (the spec's ``compute_graph_stats``)."""
    episodes = Episodes.from_columns(
        episode_lengths, episode_rewards, timestamps, initial_reset_timestamp=initial_reset_timestamp
    )
    return graph_stats(episodes, buckets)


def graph_stats(episodes: Episodes, buckets: int) -> dict[str, Any] | None:
    """Learning-curve series of every episode binned into ``buckets``.

    Keys: ``initial_reset_timestamp`` and ``x_{timestep,episode,seconds}_y_{reward,length}`` (the
    axes of :data:`palaestra.episodes.AXES`), each ``{"x": bin centres, "y": mean per bin}`` with
    empty bins left out. ``None`` with no episodes.
    """
    if len(episodes) == 0:
        return None
    ys = {"reward": episodes.rewards, "length": episodes.lengths.astype(float)}
    out: dict[str, Any] = {"initial_reset_timestamp": episodes.first_reset}
    for xname in ("timestep", "episode", "seconds"):
        x = episodes.axis(xname)
        nbins = max(1, min(buckets, len(x)))
        bins, centres = _bins(x, nbins)
        counts = np.bincount(bins, minlength=nbins)
        keep = counts > 0
        for yname, y in ys.items():
            means = np.bincount(bins, weights=y, minlength=nbins)[keep] / counts[keep]
            out[f"x_{xname}_y_{yname}"] = {"x": centres[keep].tolist(), "y": means.tolist()}
    return out


def _bins(x: np.ndarray, nbins: int) -> tuple[np.ndarray, np.ndarray]:
    """Bin index of every ``x`` and the bin centres, exactly as ``scipy.stats.binned_statistic``
    (equal-width bins over ``[min, max]``, the last one closed; a zero range widened by 0.5 each
    side), in plain numpy: one pass for all series, instead of one scipy call per series."""
    lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, nbins + 1)
    bins = np.searchsorted(edges, x, side="right") - 1
    # scipy puts values on the last edge (to 6 significant decimals of the bin width) in the last bin
    decimal = int(-np.log10(np.diff(edges).min())) + 6
    bins[np.around(x, decimal) == np.around(edges[-1], decimal)] = nbins - 1
    return np.clip(bins, 0, nbins - 1), (edges[:-1] + edges[1:]) / 2
