"""Statistics across runs: aggregate metrics with stratified bootstrap confidence intervals.

The methods of rliable (Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical
Precipice", NeurIPS 2021), written on numpy alone: rliable itself pulls in ``arch`` and the plotting
stack, and what is needed here is a few vectorised lines.

A *score table* maps each task to the scores of its runs (trials/seeds), usually normalised so that
0 is the task's floor and 1 its ceiling (:func:`normalise`; a benchmark's task scores already are).
Tasks may have different numbers of runs. The metrics, as rliable defines them:

* ``mean``: the mean over tasks of each task's mean score;
* ``median``: the median over tasks of each task's mean score;
* ``iqm``: the interquartile mean of all run scores pooled (``scipy.stats.trim_mean(·, 0.25)``);
* ``optimality_gap``: ``gamma`` minus the mean over tasks of the mean of ``min(score, gamma)``.

Confidence intervals come from the *stratified* bootstrap: each replicate resamples, with
replacement, the runs within every task (the number of runs per task stays fixed), and the
interval is the percentile interval of the metric over the replicates. Performance profiles give,
for each threshold tau, the fraction of runs scoring above tau (averaged over tasks), with the same
bootstrap bands. The probability of improvement P(X > Y) of one set of runs over another is the
mean over tasks of the Mann-Whitney statistic (ties count a half), with both sets resampled. An
aggregate *curve* (runs' learning curves on a common x grid) gets a band by resampling runs.
Every random draw comes from ``numpy.random.default_rng(seed)``: the same seed gives the same
intervals.

A bootstrap interval exists only where some task has two runs or more (:func:`has_spread`); with
one run per task every replicate is the point estimate, and the pages say "n = 1, no interval".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "METRICS",
    "Interval",
    "PerformanceProfile",
    "ScoreTable",
    "aggregate_iqm",
    "aggregate_mean",
    "aggregate_median",
    "aggregate_optimality_gap",
    "curve_interval",
    "has_spread",
    "interval_estimates",
    "normalise",
    "performance_profile",
    "probability_of_improvement",
    "stratified_bootstrap",
]

ScoreTable = Mapping[str, Sequence[float] | np.ndarray]
"""Task name -> the scores of its runs."""

ScoresLike = ScoreTable | np.ndarray | Sequence[Sequence[float]]
"""A score table, or a 2-D array shaped (runs, tasks) as rliable takes it."""

# Batched metrics take one array per task, each shaped (replicates, runs of that task).
BatchedMetric = Callable[[list[np.ndarray]], np.ndarray]

DEFAULT_REPS = 50_000
DEFAULT_PROFILE_REPS = 2_000
_CHUNK_ELEMENTS = 4_000_000  # bootstrap replicates are drawn in chunks of about this many scores


def normalise(
    raw: Sequence[float] | np.ndarray, floor: float, ceiling: float, clip: bool = False
) -> np.ndarray:
    """``(raw - floor) / (ceiling - floor)``; with ``clip``, limited to [0, 1] (the benchmarks' rule)."""
    if floor == ceiling:
        raise ValueError(f"cannot normalise with floor == ceiling ({floor})")
    scores = (np.asarray(raw, dtype=float) - floor) / (ceiling - floor)
    return np.clip(scores, 0.0, 1.0) if clip else scores


def _as_tasks(scores: ScoresLike) -> list[np.ndarray]:
    """One 1-D float array of run scores per task."""
    if isinstance(scores, Mapping):
        tasks = [np.asarray(v, dtype=float).reshape(-1) for v in scores.values()]
    else:
        table = np.asarray(scores, dtype=float)
        if table.ndim == 1:
            table = table[:, None]
        if table.ndim != 2:
            raise ValueError(f"a score array must be 2-D (runs, tasks), not of shape {table.shape}")
        tasks = [table[:, j] for j in range(table.shape[1])]
    if not tasks:
        raise ValueError("no tasks: the score table is empty")
    for i, t in enumerate(tasks):
        if len(t) == 0:
            raise ValueError(f"task {i} has no runs")
        if not np.all(np.isfinite(t)):
            raise ValueError(f"task {i} has a non-finite score: {t.tolist()}")
    return tasks


# -- batched metrics: list of (R, n_j) arrays -> (R,) ---------------------------------------------------


def _task_means(batch: list[np.ndarray]) -> np.ndarray:
    return np.stack([b.mean(axis=1) for b in batch])  # (tasks, R)


def _mean(batch: list[np.ndarray]) -> np.ndarray:
    return _task_means(batch).mean(axis=0)


def _median(batch: list[np.ndarray]) -> np.ndarray:
    return np.median(_task_means(batch), axis=0)


def _iqm(batch: list[np.ndarray]) -> np.ndarray:
    pooled = np.sort(np.concatenate(batch, axis=1), axis=1)
    n = pooled.shape[1]
    cut = int(0.25 * n)  # scipy.stats.trim_mean's lowercut
    return pooled[:, cut : n - cut].mean(axis=1)


def _optimality_gap(gamma: float) -> BatchedMetric:
    def gap(batch: list[np.ndarray]) -> np.ndarray:
        return gamma - np.stack([np.minimum(b, gamma).mean(axis=1) for b in batch]).mean(axis=0)

    return gap


METRICS: dict[str, BatchedMetric] = {
    "iqm": _iqm,
    "mean": _mean,
    "median": _median,
    "optimality_gap": _optimality_gap(1.0),
}


def _point(metric: BatchedMetric, tasks: list[np.ndarray]) -> float:
    return float(metric([t[None, :] for t in tasks])[0])


def aggregate_mean(scores: ScoresLike) -> float:
    """The mean over tasks of the mean score of each task."""
    return _point(_mean, _as_tasks(scores))


def aggregate_median(scores: ScoresLike) -> float:
    """The median over tasks of the mean score of each task."""
    return _point(_median, _as_tasks(scores))


def aggregate_iqm(scores: ScoresLike) -> float:
    """The interquartile mean of all run scores (the middle 50%, as ``scipy.stats.trim_mean(·, 0.25)``)."""
    return _point(_iqm, _as_tasks(scores))


def aggregate_optimality_gap(scores: ScoresLike, gamma: float = 1.0) -> float:
    """How far the scores fall short of ``gamma``: ``gamma - mean(min(score, gamma))`` (task-averaged)."""
    return _point(_optimality_gap(gamma), _as_tasks(scores))


# -- the stratified bootstrap ------------------------------------------------------------------------------


def stratified_bootstrap(scores: ScoresLike, reps: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``reps`` stratified bootstrap replicates: per task, an array (reps, runs) of scores resampled
    with replacement from that task's runs."""
    return _resample(_as_tasks(scores), reps, rng)


def _resample(tasks: list[np.ndarray], reps: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [t[rng.integers(0, len(t), size=(reps, len(t)))] for t in tasks]


def _bootstrap_statistics(
    tasks: list[np.ndarray],
    statistic: Callable[[list[np.ndarray]], np.ndarray],
    reps: int,
    rng: np.random.Generator,
    width: int = 1,
) -> np.ndarray:
    """``statistic`` on ``reps`` replicates, drawn in memory-bounded chunks; (reps, ...) array."""
    total_runs = sum(len(t) for t in tasks)
    chunk = max(1, _CHUNK_ELEMENTS // max(1, total_runs * width))
    parts = []
    done = 0
    while done < reps:
        size = min(chunk, reps - done)
        parts.append(statistic(_resample(tasks, size, rng)))
        done += size
    return np.concatenate(parts, axis=0)


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval, or without one (``low``/``high`` None) where none
    exists: one value, or a benchmark whose every task has a single score (``n``: the most values any
    part had, which a page shows in place of the interval). The one interval type of palaestra: the
    statistics here, the benchmark pages and the leaderboard entries all use it."""

    value: float
    low: float | None
    high: float | None
    confidence: float = 0.95
    n: int = 2

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def to_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "low": self.low, "high": self.high, "confidence": self.confidence}

    def to_json(self) -> list[float | None]:
        """``[value, low, high]``, as the pages hand it to their charts."""
        return [self.value, self.low, self.high]

    def __str__(self) -> str:
        if self.low is None or self.high is None:
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"

    def shown(self, digits: int = 3) -> str:
        """``value  [low, high]``, or ``value  n = N, no interval`` where there is none: what the pages
        show (templates/_stats.html), in text, for the command line (issue 36: one trial printed
        ``[0.099, 0.099]``)."""
        if self.low is None or self.high is None:
            return f"{self.value:.{digits}f}  n = {self.n}, no interval"
        return f"{self.value:.{digits}f}  [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")


def interval_estimates(
    scores: ScoresLike,
    metrics: Sequence[str] = ("iqm", "mean", "median", "optimality_gap"),
    reps: int = DEFAULT_REPS,
    confidence: float = 0.95,
    seed: int | None = 0,
    gamma: float = 1.0,
) -> dict[str, Interval]:
    """Each metric's point estimate with a stratified-bootstrap percentile interval.

    ``metrics`` are names from :data:`METRICS`; ``gamma`` is the optimality-gap threshold.
    """
    _check_confidence(confidence)
    if reps < 1:
        raise ValueError(f"reps must be positive, not {reps}")
    table = {**METRICS, "optimality_gap": _optimality_gap(gamma)}
    unknown = [m for m in metrics if m not in table]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {', '.join(table)}")
    tasks = _as_tasks(scores)
    chosen = [table[m] for m in metrics]

    def all_metrics(batch: list[np.ndarray]) -> np.ndarray:
        return np.stack([f(batch) for f in chosen], axis=1)  # (R, metrics)

    rng = np.random.default_rng(seed)
    replicates = _bootstrap_statistics(tasks, all_metrics, reps, rng, width=2)
    alpha = (1 - confidence) / 2
    lows, highs = np.quantile(replicates, [alpha, 1 - alpha], axis=0)
    return {
        name: Interval(_point(f, tasks), float(lo), float(hi), confidence)
        for name, f, lo, hi in zip(metrics, chosen, lows, highs, strict=True)
    }


@dataclass(frozen=True)
class PerformanceProfile:
    """Fraction of runs scoring above each threshold, with its bootstrap band."""

    taus: np.ndarray
    fraction: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        return {
            "taus": self.taus.tolist(),
            "fraction": self.fraction.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "confidence": self.confidence,
        }


def performance_profile(
    scores: ScoresLike,
    taus: Sequence[float] | np.ndarray | None = None,
    reps: int = DEFAULT_PROFILE_REPS,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> PerformanceProfile:
    """The run-score distribution: for each ``tau``, the mean over tasks of the fraction of that task's
    runs with score > tau (rliable's ``create_performance_profile``), with a stratified-bootstrap band.

    ``taus`` defaults to 101 points from 0 to the largest score (at least 1).
    """
    _check_confidence(confidence)
    tasks = _as_tasks(scores)
    if taus is None:
        top = max(1.0, max(float(t.max()) for t in tasks))
        taus = np.linspace(0.0, top, 101)
    tau = np.asarray(taus, dtype=float).reshape(-1)

    def profile(batch: list[np.ndarray]) -> np.ndarray:
        # (R, runs, 1) > (taus,) -> fraction per task (R, taus) -> mean over tasks
        return np.mean([(b[:, :, None] > tau).mean(axis=1) for b in batch], axis=0)

    point = profile([t[None, :] for t in tasks])[0]
    rng = np.random.default_rng(seed)
    replicates = _bootstrap_statistics(tasks, profile, reps, rng, width=len(tau))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(replicates, [alpha, 1 - alpha], axis=0)
    return PerformanceProfile(tau, point, low, high, confidence)


def has_spread(scores: ScoresLike) -> bool:
    """Whether a bootstrap interval exists: some task has two runs or more."""
    return max(len(t) for t in _as_tasks(scores)) >= 2


def probability_of_improvement(
    x: ScoreTable,
    y: ScoreTable,
    reps: int = DEFAULT_PROFILE_REPS,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> Interval:
    """P(X > Y): the mean over the tasks of both tables of the probability that a run of ``x``
    scores above a run of ``y`` on that task (ties count a half), with a stratified-bootstrap
    interval that resamples the runs of ``x`` and of ``y`` independently (rliable's
    ``probability_of_improvement``)."""
    _check_confidence(confidence)
    common = [task for task in x if task in y]
    if not common:
        raise ValueError(
            f"no task in common: the first set has {sorted(x)}, the second {sorted(y)}; "
            "probability of improvement compares runs of the same tasks"
        )
    xs = _as_tasks({task: x[task] for task in common})
    ys = _as_tasks({task: y[task] for task in common})

    def probability(bx: list[np.ndarray], by: list[np.ndarray]) -> np.ndarray:
        per_task = []
        for a, b in zip(bx, by, strict=True):  # (R, n) and (R, m)
            diff = a[:, :, None] - b[:, None, :]
            per_task.append(((diff > 0) + 0.5 * (diff == 0)).mean(axis=(1, 2)))
        return np.mean(per_task, axis=0)

    point = float(probability([t[None, :] for t in xs], [t[None, :] for t in ys])[0])
    rng = np.random.default_rng(seed)
    replicates = probability(_resample(xs, reps, rng), _resample(ys, reps, rng))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(replicates, [alpha, 1 - alpha])
    return Interval(point, float(low), float(high), confidence)


def curve_interval(
    curves: np.ndarray | Sequence[Sequence[float]],
    metric: str = "mean",
    reps: int = DEFAULT_PROFILE_REPS,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(value, low, high)`` at every x of runs' curves shaped (runs, points) on a common x grid:
    the ``mean`` or ``iqm`` across runs, and the percentile band of the bootstrap that resamples
    whole runs (each replicate keeps a run's curve together)."""
    _check_confidence(confidence)
    table = np.asarray(curves, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] == 0:
        raise ValueError(f"curves must be shaped (runs, points), not {table.shape}")
    if not np.all(np.isfinite(table)):
        raise ValueError("a curve has a non-finite value; interpolate the runs onto a grid they all cover")
    if metric not in ("mean", "iqm"):
        raise ValueError(f"unknown curve metric {metric!r}; known: mean, iqm")

    def across_runs(batch: np.ndarray) -> np.ndarray:  # (R, runs, points) -> (R, points)
        if metric == "mean":
            return batch.mean(axis=1)
        ordered = np.sort(batch, axis=1)
        n = ordered.shape[1]
        cut = int(0.25 * n)
        return ordered[:, cut : n - cut, :].mean(axis=1)

    value = across_runs(table[None, :, :])[0]
    rng = np.random.default_rng(seed)
    runs = table.shape[0]
    chunk = max(1, _CHUNK_ELEMENTS // table.size)
    parts = []
    for done in range(0, reps, chunk):
        picks = rng.integers(0, runs, size=(min(chunk, reps - done), runs))
        parts.append(across_runs(table[picks]))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(np.concatenate(parts, axis=0), [alpha, 1 - alpha], axis=0)
    return value, low, high
