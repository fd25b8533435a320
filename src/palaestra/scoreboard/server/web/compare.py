"""The compare page (``/compare?e=ID&e=ID…``): several evaluations' learning curves on one chart.

- :class:`CompareSettings`: what the page's query string holds besides the ids (x axis, smoothing),
  read leniently (an unknown value falls back to the default) so that a shared URL always opens;
- :func:`requested_ids`: the ``e`` values, deduplicated and cut to :data:`MAX_COMPARED`;
- :func:`chart_data`: the JSON the browser draws (``static/compare.js``), one series per evaluation
  taken from its evaluation-page curves (:mod:`palaestra.curves`, whose running mean is
  :func:`palaestra.solved_stats.trailing_mean`): its rewards and its x values on each axis (null
  where the binned fallback curves lack an axis; the browser leaves those points out).

Smoothing is drawn by the browser, so that moving the control redraws at once; the server keeps the
per-episode rewards as uploaded (binned to :data:`palaestra.curves.MAX_POINTS` points for long runs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from palaestra.episodes import AXES as EPISODE_AXES
from palaestra.scoreboard.protocol import ID_PREFIX
from palaestra.scoreboard.server.evaluations.conditions import conditions_label
from palaestra.scoreboard.server.evaluations.records import EvaluationRecord

__all__ = [
    "AXES",
    "MAX_COMPARED",
    "PALETTE",
    "SMOOTHINGS",
    "CompareSettings",
    "ComparedEvaluation",
    "chart_data",
    "requested_ids",
]

#: More lines than this on one chart are no longer readable (and the URL gets long).
MAX_COMPARED = 20
#: the x axes a compared curve can be drawn against: every axis of an evaluation's episodes
AXES = EPISODE_AXES
SMOOTHINGS = {"none": "none", "ema": "exponential moving average", "window": "window mean"}
#: TensorBoard's and Weights & Biases' default weight for the exponential moving average.
DEFAULT_EMA = 0.6
MAX_EMA = 0.999
DEFAULT_WINDOW = 10
MAX_WINDOW = 10_000
#: Tableau 10: distinguishable lines, also for the common kinds of colour blindness.
PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)  # fmt: skip


@dataclass(frozen=True)
class CompareSettings:
    """The chart's state in the query string: ``x``, ``smooth``, ``ema`` and ``window``."""

    axis: str = "episode"
    smoothing: str = "ema"
    ema: float = DEFAULT_EMA
    window: int = DEFAULT_WINDOW

    @classmethod
    def from_query(cls, axis: str, smoothing: str, ema: str, window: str) -> CompareSettings:
        """Settings from query values; a value that is unknown or out of range gets the default."""
        return cls(
            axis=axis if axis in AXES else cls.axis,
            smoothing=smoothing if smoothing in SMOOTHINGS else cls.smoothing,
            ema=_number_in(ema, float, 0.0, MAX_EMA, DEFAULT_EMA),
            window=_number_in(window, int, 1, MAX_WINDOW, DEFAULT_WINDOW),
        )

    def url(self, ids: Sequence[str]) -> str:
        """The shareable address of the compare page of ``ids`` with these settings."""
        query = [("e", i) for i in ids] + [("x", self.axis), ("smooth", self.smoothing)]
        if self.smoothing == "ema":
            query.append(("ema", f"{self.ema:g}"))
        elif self.smoothing == "window":
            query.append(("window", str(self.window)))
        return "/compare?" + urlencode(query)

    def to_json(self) -> dict[str, Any]:
        return {"axis": self.axis, "smoothing": self.smoothing, "ema": self.ema, "window": self.window}


def _number_in(text: str, kind: type[Any], low: float, high: float, default: Any) -> Any:
    try:
        value = kind(text)
    except (TypeError, ValueError):
        return default
    return (
        value if isinstance(value, int | float) and math.isfinite(value) and low <= value <= high else default
    )


def requested_ids(values: Iterable[str]) -> tuple[list[str], int]:
    """``(ids, left out)``: the distinct non-empty ids in the order given, at most :data:`MAX_COMPARED`."""
    ids = list(dict.fromkeys(v.strip() for v in values if v and v.strip()))
    return ids[:MAX_COMPARED], max(0, len(ids) - MAX_COMPARED)


@dataclass(frozen=True)
class ComparedEvaluation:
    """One evaluation on the compare page: its record, its line's colour and legend label."""

    record: EvaluationRecord
    color: str
    label: str
    has_curve: bool


def _label(ev: EvaluationRecord, with_conditions: bool = False) -> str:
    algorithm = (ev.algorithm.name or ev.algorithm.id) if ev.algorithm else "unnamed"
    conditions = f" · {conditions_label(ev.conditions)}" if with_conditions else ""
    running = " (in progress)" if ev.id.startswith(ID_PREFIX["live_evaluation"]) else ""
    return f"{algorithm} · {ev.owner or 'anonymous'} · {ev.id}{running}{conditions}"


def chart_data(
    records: Sequence[EvaluationRecord],
    curves: Sequence[dict[str, Any] | None],
    label_conditions: bool = False,
) -> tuple[list[ComparedEvaluation], dict[str, Any]]:
    """The compared evaluations (in request order) and the chart's JSON (``label_conditions``: each
    legend entry names its conditions, for evaluations of different ones drawn together on purpose).

    The threshold line is drawn when every evaluation was judged against the same env threshold;
    evaluations of different envs have no common one.
    """
    compared: list[ComparedEvaluation] = []
    series: list[dict[str, Any]] = []
    for i, (ev, data) in enumerate(zip(records, curves, strict=True)):
        item = ComparedEvaluation(
            ev, PALETTE[i % len(PALETTE)], _label(ev, label_conditions), data is not None
        )
        compared.append(item)
        if data is None:
            continue
        # each x axis once, the rewards once: the page's size is mostly these numbers
        line = {"id": ev.id, "label": item.label, "color": item.color, "reward": data["reward"]}
        series.append(line | {axis: data[axis] for axis in AXES})
    thresholds = {ev.score.reward_threshold for ev in records}
    envs = {ev.env_id for ev in records}
    threshold = next(iter(thresholds)) if len(thresholds) == 1 and len(envs) == 1 else None
    return compared, {"threshold": threshold, "series": series}
