"""Learning-curve series for an evaluation page, from its episode batch (derived once, at ingest:
:func:`palaestra.scoreboard.server.evaluations.derive.curves_of`).

The chart shows each training episode's reward and length against three x axes (episode, timestep,
wall-clock seconds: :data:`palaestra.episodes.AXES`), the ``trials``-episode running mean
(:func:`palaestra.episodes.trailing_mean`,
the same windows "solved" is judged on) and the reward threshold. Long runs are averaged into at
most :data:`MAX_POINTS` points per series; the running mean is computed at full resolution first.
``outcomes`` counts the episodes with a positive, zero and negative reward: a board game's wins,
draws and losses (its reward is +1, 0 or -1 per game).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from palaestra.episodes import AXES, Episodes, EpisodesError, trailing_mean

MAX_POINTS = 2000


def _clean(values: np.ndarray, digits: int = 6) -> list[float | None]:
    """A JSON-ready list: rounded floats, NaN/inf as null (vectorised: a 3,000-episode run's seven
    series took 49 ms value by value, 2 ms so; bench/web_pages.py's compare pages)."""
    rounded = np.round(np.asarray(values, dtype=float), digits)
    finite = np.isfinite(rounded)
    out: list[float | None] = rounded.tolist()
    if not finite.all():
        for i in np.flatnonzero(~finite):
            out[i] = None
    return out


def _bin_mean(x: np.ndarray, size: int) -> np.ndarray:
    n = len(x)
    pad = (-n) % size
    if pad:
        counts = np.full(-(-n // size), size, dtype=float)
        counts[-1] = size - pad
        padded = np.concatenate([x, np.zeros(pad)])
        return padded.reshape(-1, size).sum(axis=1) / counts
    return x.reshape(-1, size).mean(axis=1)


def _bin_last(x: np.ndarray, size: int) -> np.ndarray:
    idx = np.minimum(np.arange(size - 1, len(x) + size - 1, size), len(x) - 1)
    return x[idx]


def from_episode_batch(
    doc: Mapping[str, Any] | Episodes, trials: int, threshold: float | None, max_points: int = MAX_POINTS
) -> dict[str, Any] | None:
    """The chart data of an evaluation's episodes (an :class:`~palaestra.episodes.Episodes`, or the
    stored, enriched episode-batch document); ``None`` without training episodes, or for a document
    whose columns do not describe one run."""
    if isinstance(doc, Episodes):
        episodes = doc
    else:
        try:
            episodes = Episodes.from_batch(doc)
        except EpisodesError:
            return None
    training = episodes.training()
    n = len(training)
    if n == 0:
        return None
    rewards, lengths = training.rewards, training.lengths.astype(float)
    series = {axis: training.axis(axis) for axis in AXES} | {"reward": rewards, "length": lengths}
    means = {"reward_mean": trailing_mean(rewards, trials), "length_mean": trailing_mean(lengths, trials)}
    size = max(1, -(-n // max_points))
    out: dict[str, Any] = {
        "trials": trials,
        "threshold": threshold,
        "episodes": n,
        "binned": size > 1,
        "bin": size,
        "outcomes": {
            "won": int(np.sum(rewards > 0)),
            "drawn": int(np.sum(rewards == 0)),
            "lost": int(np.sum(rewards < 0)),
        },
    }
    for key, values in series.items():
        out[key] = _clean(_bin_mean(values, size) if size > 1 else values)
    for key, values in means.items():
        out[key] = _clean(_bin_last(values, size) if size > 1 else values)
    return out


