"""An algorithm's learning curve across its evaluations of one env: mean or IQM with a 95% band.

Each evaluation contributes its ``trials``-episode running mean of the reward (the curve of its
evaluation page, :mod:`palaestra.curves`; its per-episode reward where only the binned curves are left),
interpolated onto a common grid of :data:`GRID_POINTS` x values that every run covers (episode 0 to
the shortest run's last episode, or the same in timesteps). The across-run statistic and its band
come from :func:`palaestra.benchmarks.statistics.curve_interval` (a bootstrap over whole runs); with
one run there is no band.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from palaestra.benchmarks import statistics
from palaestra.episodes import AXES as EPISODE_AXES

__all__ = ["AXES", "GRID_POINTS", "MAX_RUNS", "METRICS", "aggregate_curve"]

GRID_POINTS = 200
#: The most recent evaluations that enter one aggregate (each is read from the blob store once).
MAX_RUNS = 50
BAND_REPS = 2000
METRICS = {"mean": "mean", "iqm": "interquartile mean (IQM)"}
#: The axes of :data:`palaestra.episodes.AXES` an aggregate is drawn against: not the seconds, since
#: runs on different machines spend different wall-clock time on the same episodes.
AXES = {name: EPISODE_AXES[name] for name in ("episode", "timestep")}


def _run_curve(data: dict[str, Any], axis: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(x, y)`` of one evaluation's running-mean reward, without points missing either value."""
    ys = data["reward_mean"] if any(v is not None for v in data["reward_mean"]) else data["reward"]
    pairs = [(x, y) for x, y in zip(data[axis], ys, strict=False) if x is not None and y is not None]
    if len(pairs) < 2:
        return None
    xs, values = np.asarray(pairs, dtype=float).T
    order = np.argsort(xs, kind="stable")
    return xs[order], values[order]


def aggregate_curve(
    curves: Sequence[dict[str, Any] | None], metric: str = "mean", axis: str = "episode"
) -> dict[str, Any] | None:
    """The chart data of the aggregate (``x``, ``value``, ``low``, ``high``, ``runs``, ``band``), or
    ``None`` when fewer than one run has a curve or the runs share no stretch of x."""
    runs = [c for c in (_run_curve(d, axis) for d in curves if d is not None) if c is not None]
    if not runs:
        return None
    start = max(float(x[0]) for x, _ in runs)
    end = min(float(x[-1]) for x, _ in runs)
    if end <= start:
        return None
    grid = np.linspace(start, end, GRID_POINTS)
    table = np.stack([np.interp(grid, x, y) for x, y in runs])
    value, low, high = statistics.curve_interval(table, metric, reps=BAND_REPS, seed=0)
    band = len(runs) > 1
    return {
        "axis": axis,
        "metric": metric,
        "runs": len(runs),
        "band": band,
        "x": [round(float(v), 6) for v in grid],
        "value": [round(float(v), 6) for v in value],
        "low": [round(float(v), 6) for v in low] if band else None,
        "high": [round(float(v), 6) for v in high] if band else None,
        "final": [float(value[-1]), float(low[-1]) if band else None, float(high[-1]) if band else None],
    }
