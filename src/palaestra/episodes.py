"""A run's episodes: one type, read from every form they are stored in, written as one document.

- :class:`Episodes`: a frozen, numpy-backed table of completed episodes (length, reward, end time,
  training or evaluation, truncated, data source, sub-environment) with the run's first reset and
  its abandoned steps (episodes reset before they ended: not episodes, but their steps count);
- the one reader of each stored form: :meth:`Episodes.from_results` (what
  :func:`palaestra.load_results` returns), :meth:`Episodes.from_stats_document` (a Monitor's
  ``*.stats.json``, the vector Monitor's with ``env_index``) and :meth:`Episodes.from_batch` (an
  uploaded episode batch, as a model or as its stored JSON document);
- the one writer of the stats document: :meth:`Episodes.to_stats_document` (lists, for ``json``) and
  :meth:`Episodes.to_stats_columns` (numpy arrays, for orjson);
- the training/evaluation split (:meth:`Episodes.training`, :meth:`Episodes.evaluation`);
- the x axes every curve is drawn against (:data:`AXES`, :meth:`Episodes.axis`), read by the
  evaluation page, the compare page, the aggregate curves and ``palaestra results``;
- the window arithmetic (:func:`running_mean`, :func:`trailing_mean`).

The Monitor keeps plain lists while it records (an episode's end costs a few appends); this type is
for readers, and for writing the stats document at flush and close.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from palaestra.errors import EpisodesError

__all__ = ["AXES", "EPISODE_TYPES", "Episodes", "EpisodesError", "running_mean", "trailing_mean"]

#: ``'t'`` a training episode, ``'e'`` an evaluation episode (the 2017 ``episode_types``)
EPISODE_TYPES = ("t", "e")

#: The x axes of a learning curve and their labels: the episode's index, the timestep it started
#: at (the steps of the episodes before it), and the wall-clock seconds from the first reset to its end.
AXES = {"episode": "episode", "timestep": "timestep", "seconds": "wall-clock seconds"}

_INT = np.int64
_FLOAT = np.float64


def running_mean(x: Sequence[float] | np.ndarray, n: int) -> np.ndarray:
    """``means[i] = mean(x[i:i+n])``, for every full window."""
    if n <= 0:
        raise ValueError(f"running_mean window must be positive, not {n}")
    arr = np.asarray(x, dtype=float)
    if len(arr) < n:
        return np.empty(0)
    cumsum = np.cumsum(np.insert(arr, 0, 0.0))
    return (cumsum[n:] - cumsum[:-n]) / n


def trailing_mean(x: Sequence[float] | np.ndarray, n: int) -> np.ndarray:
    """The mean of the last ``min(i+1, n)`` values at every index (a curve with no gap at the start)."""
    arr = np.asarray(x, dtype=float)
    cumsum = np.cumsum(np.insert(arr, 0, 0.0))
    idx = np.arange(1, len(arr) + 1)
    start = np.maximum(idx - n, 0)
    return (cumsum[idx] - cumsum[start]) / (idx - start)


@dataclass(frozen=True, eq=False)
class Episodes:
    """The completed episodes of one run, in the order they ended, and what the run knows besides.

    Build one with a reader (``from_results``, ``from_stats_document``, ``from_batch``) or with
    :meth:`from_columns`; the constructor takes the arrays as they are and only checks their lengths.
    """

    lengths: np.ndarray
    rewards: np.ndarray
    #: each episode's end (Unix time)
    timestamps: np.ndarray
    #: True for an evaluation episode (type ``'e'``), False for a training one (``'t'``)
    is_evaluation: np.ndarray
    #: True for an episode that ended by truncation rather than termination
    truncated: np.ndarray
    #: the first reset of the run (``None`` where the source did not record it)
    initial_reset_timestamp: float | None
    #: each episode's data source: an index into :attr:`initial_reset_timestamps`
    data_sources: np.ndarray
    #: each data source's first reset (NaN where a source did not record it)
    initial_reset_timestamps: np.ndarray
    #: each episode's sub-environment of a vector Monitor (0 for a single Monitor's episodes)
    env_index: np.ndarray
    abandoned_steps: np.ndarray
    abandoned_timestamps: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.lengths)
        for name in ("rewards", "timestamps", "is_evaluation", "truncated", "data_sources", "env_index"):
            if len(getattr(self, name)) != n:
                raise EpisodesError(
                    f"Episodes has {len(getattr(self, name))} {name} but {n} lengths: every per-episode "
                    "column must have one entry per episode"
                )
        if len(self.abandoned_steps) != len(self.abandoned_timestamps):
            raise EpisodesError(
                f"Episodes has {len(self.abandoned_steps)} abandoned_steps but {len(self.abandoned_timestamps)} "
                "abandoned_timestamps: each abandoned episode needs its steps and its time"
            )

    # -- building -------------------------------------------------------------------------------------
    @classmethod
    def from_columns(
        cls,
        lengths: Sequence[int] | np.ndarray,
        rewards: Sequence[float] | np.ndarray,
        timestamps: Sequence[float] | np.ndarray,
        types: Sequence[str] | np.ndarray | None = None,
        truncated: Sequence[bool] | np.ndarray | None = None,
        initial_reset_timestamp: float | None = None,
        data_sources: Sequence[int] | np.ndarray | None = None,
        initial_reset_timestamps: Sequence[float | None] | np.ndarray | None = None,
        env_index: Sequence[int] | np.ndarray | None = None,
        abandoned_steps: Sequence[int] | np.ndarray | None = None,
        abandoned_timestamps: Sequence[float] | np.ndarray | None = None,
        what: str = "Episodes",
    ) -> Episodes:
        """Episodes from per-episode columns as lists or arrays; a missing column takes its default
        (every episode training, not truncated, from source 0 and sub-environment 0).

        ``what`` names the source in errors ("Stats file runs/x/....stats.json").
        """
        lengths_ = _column(lengths, _INT, what, "episode_lengths")
        n = len(lengths_)
        rewards_ = _column(rewards, _FLOAT, what, "episode_rewards")
        stamps = _column(timestamps, _FLOAT, what, "timestamps")
        for name, column in (("episode_rewards", rewards_), ("timestamps", stamps)):
            if len(column) != n:
                raise EpisodesError(
                    f"{what} is inconsistent: {len(column)} {name} but {n} episode_lengths"
                )
        steps = _column(abandoned_steps if abandoned_steps is not None else (), _INT, what, "abandoned_steps")
        if abandoned_timestamps is None and len(steps) == 0:
            abandoned_timestamps = ()
        if abandoned_timestamps is None:
            raise EpisodesError(f"{what} has abandoned_steps but no abandoned_timestamps")
        abandoned_stamps = _column(abandoned_timestamps, _FLOAT, what, "abandoned_timestamps")
        if len(abandoned_stamps) != len(steps):
            raise EpisodesError(
                f"{what} is inconsistent: {len(steps)} abandoned_steps but {len(abandoned_stamps)} abandoned_timestamps"
            )
        sources = _per_episode(data_sources, n, _INT, 0, what, "data_sources")
        if initial_reset_timestamps is None:  # one source, or sources whose first resets are unknown
            initial_reset_timestamps = [initial_reset_timestamp] if n else []
        elif n and int(sources.max()) >= len(initial_reset_timestamps):
            raise EpisodesError(
                f"{what} has data_sources up to {int(sources.max())} but only {len(initial_reset_timestamps)} "
                "initial_reset_timestamps"
            )
        initial_resets = np.array([np.nan if t is None else t for t in initial_reset_timestamps], dtype=_FLOAT)
        return cls(
            lengths=lengths_,
            rewards=rewards_,
            timestamps=stamps,
            is_evaluation=_evaluation_mask(types, n, what),
            truncated=_per_episode(truncated, n, bool, False, what, "episode_truncated"),
            initial_reset_timestamp=None if initial_reset_timestamp is None else float(initial_reset_timestamp),
            data_sources=sources,
            initial_reset_timestamps=initial_resets,
            env_index=_per_episode(env_index, n, _INT, 0, what, "env_index"),
            abandoned_steps=steps,
            abandoned_timestamps=abandoned_stamps,
        )

    @classmethod
    def from_results(cls, results: Mapping[str, Any], what: str = "The results") -> Episodes:
        """The episodes of what :func:`palaestra.load_results` returns (or any mapping with its keys:
        ``episode_lengths``, ``episode_rewards`` and ``timestamps`` are needed, the others optional)."""
        for key in ("episode_lengths", "episode_rewards", "timestamps"):
            if results.get(key) is None:
                raise EpisodesError(f"{what}: the column {key!r} is missing")
        initial = results.get("initial_reset_timestamp")
        initial_resets = results.get("initial_reset_timestamps")
        if initial is None and initial_resets:
            known = [t for t in initial_resets if t is not None]
            initial = min(known) if known else None
        return cls.from_columns(
            results["episode_lengths"],
            results["episode_rewards"],
            results["timestamps"],
            types=results.get("episode_types"),
            truncated=results.get("episode_truncated"),
            initial_reset_timestamp=initial,
            data_sources=results.get("data_sources"),
            initial_reset_timestamps=initial_resets or None,
            env_index=results.get("env_index"),
            abandoned_steps=results.get("abandoned_steps"),
            abandoned_timestamps=results.get("abandoned_timestamps"),
            what=what,
        )

    @classmethod
    def from_stats_document(cls, doc: Mapping[str, Any], what: str = "The stats document") -> Episodes:
        """The episodes of one stats document (a ``*.stats.json``, or a journal read as one).

        The 2017 Monitor appended an episode's type at its reset, so ``episode_types`` may be one
        longer than the episodes: it is cut to them. A missing ``initial_reset_timestamp`` is the
        first episode's end, as the 2017 merge took it.
        """
        for key in ("timestamps", "episode_lengths", "episode_rewards"):
            if not isinstance(doc.get(key), list | np.ndarray):
                raise EpisodesError(f"{what} has no list {key!r}")
        n = len(doc["timestamps"])
        types = doc.get("episode_types")
        if types is not None and len(types) == 0:  # 2017: an empty list means all training
            types = None
        if types is not None and len(types) > n:
            types = types[:n]
        truncated = doc.get("episode_truncated")
        if truncated is not None and len(truncated) != n:  # palaestra writes it whole; pad a short one
            truncated = ([bool(x) for x in truncated] + [False] * n)[:n]
        initial = doc.get("initial_reset_timestamp")
        if initial is None and n:
            initial = float(doc["timestamps"][0])
        return cls.from_columns(
            doc["episode_lengths"],
            doc["episode_rewards"],
            doc["timestamps"],
            types=types,
            truncated=truncated,
            initial_reset_timestamp=initial,
            env_index=doc.get("env_index"),
            abandoned_steps=doc.get("abandoned_steps"),
            abandoned_timestamps=doc.get("abandoned_timestamps"),
            what=what,
        )

    @classmethod
    def from_batch(cls, batch: Any, what: str = "The episode batch") -> Episodes:
        """The episodes of an uploaded episode batch: a
        :class:`palaestra.scoreboard.protocol.EpisodeBatch` (already validated) or its stored JSON
        document (the enriched one has ``initial_reset_timestamp``; an upload's first reset is
        otherwise the least of its sources')."""
        if isinstance(batch, Mapping):
            return cls.from_results(batch, what)
        # the model's own lists, not a dump of them (a batch holds up to a million episodes)
        return cls.from_columns(
            batch.episode_lengths,
            batch.episode_rewards,
            batch.timestamps,
            types=batch.episode_types,
            initial_reset_timestamp=batch.first_reset_timestamp,
            data_sources=batch.data_sources,
            initial_reset_timestamps=batch.initial_reset_timestamps or None,
            env_index=batch.env_index,
            what=what,
        )

    # -- the table ------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def types(self) -> np.ndarray:
        """Each episode's 2017 type, ``'t'`` or ``'e'``."""
        return np.where(self.is_evaluation, "e", "t")

    @property
    def timesteps(self) -> int:
        """The steps of these episodes (of the training ones only: ``training().timesteps``, the
        scoreboard's "Training timesteps")."""
        return int(self.lengths.sum())

    @property
    def total_steps(self) -> int:
        """Every step: the episodes' and the abandoned ones'."""
        return int(self.lengths.sum() + self.abandoned_steps.sum())

    @property
    def first_reset(self) -> float | None:
        """Where the seconds axis starts: the first reset, else the first of these episodes' ends."""
        if self.initial_reset_timestamp is not None:
            return self.initial_reset_timestamp
        return float(self.timestamps[0]) if len(self.timestamps) else None

    def training(self) -> Episodes:
        """The training episodes (type ``'t'``): the ones "solved" and the curves are judged on."""
        return self._where(~self.is_evaluation)

    def evaluation(self) -> Episodes:
        """The evaluation episodes (type ``'e'``)."""
        return self._where(self.is_evaluation)

    def _where(self, keep: np.ndarray) -> Episodes:
        """The episodes where ``keep``; the run's first reset, sources and abandoned steps stay."""
        if keep.all():
            return self
        return Episodes(
            lengths=self.lengths[keep],
            rewards=self.rewards[keep],
            timestamps=self.timestamps[keep],
            is_evaluation=self.is_evaluation[keep],
            truncated=self.truncated[keep],
            initial_reset_timestamp=self.initial_reset_timestamp,
            data_sources=self.data_sources[keep],
            initial_reset_timestamps=self.initial_reset_timestamps,
            env_index=self.env_index[keep],
            abandoned_steps=self.abandoned_steps,
            abandoned_timestamps=self.abandoned_timestamps,
        )

    def axis(self, name: str) -> np.ndarray:
        """The x values of these episodes on axis ``name`` (a key of :data:`AXES`), as floats:
        ``episode`` 0, 1, 2...; ``timestep`` the steps before each episode; ``seconds`` each
        episode's end less :attr:`first_reset`."""
        if name == "episode":
            return np.arange(len(self), dtype=_FLOAT)
        if name == "timestep":
            return np.concatenate([[0.0], np.cumsum(self.lengths[:-1], dtype=_FLOAT)]) if len(self) else np.empty(0)
        if name == "seconds":
            start = self.first_reset
            return self.timestamps - start if start is not None else np.empty(0)
        raise EpisodesError(f"Unknown x axis {name!r}: the axes are {', '.join(AXES)}")

    # -- the stats document ---------------------------------------------------------------------------
    def to_stats_columns(self, env_index: bool = False, palaestra_keys: bool = True) -> dict[str, Any]:
        """The stats document with its numeric lists as contiguous numpy arrays (what
        :func:`palaestra.monitoring.files.atomic_write_json_columns` encodes without making lists).

        The keys in the order every stats file has them: the 2017 ones, then palaestra's
        (``episode_truncated``, ``abandoned_steps``, ``abandoned_timestamps``; left out with
        ``palaestra_keys=False``, for sources that do not know them), then ``env_index`` if asked.
        """
        n = len(self)
        # all training (the usual run): one list product instead of a string per episode
        types = np.where(self.is_evaluation, "e", "t").tolist() if self.is_evaluation.any() else ["t"] * n
        columns: dict[str, Any] = {
            "initial_reset_timestamp": self.initial_reset_timestamp,
            "timestamps": self.timestamps,
            "episode_lengths": self.lengths,
            "episode_rewards": self.rewards,
            "episode_types": types,
        }
        if palaestra_keys:
            columns["episode_truncated"] = self.truncated
            columns["abandoned_steps"] = self.abandoned_steps
            columns["abandoned_timestamps"] = self.abandoned_timestamps
        if env_index:
            columns["env_index"] = self.env_index
        return columns

    def to_stats_document(self, env_index: bool = False, palaestra_keys: bool = True) -> dict[str, Any]:
        """The stats document as JSON-ready lists (what ``json.dumps`` writes into a stats file)."""
        columns = self.to_stats_columns(env_index, palaestra_keys)
        return {key: value.tolist() if isinstance(value, np.ndarray) else value for key, value in columns.items()}


def _column(values: Any, dtype: Any, what: str, name: str) -> np.ndarray:
    """One numeric column as a contiguous array of ``dtype``, or an error naming it."""
    if isinstance(values, np.ndarray) and values.dtype == dtype:
        return np.ascontiguousarray(values)
    try:
        arr = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        raise EpisodesError(f"{what} has a non-numeric value in {name!r}") from None
    if arr.ndim != 1:
        raise EpisodesError(f"{what} has {name!r} that is not a flat list")
    return arr


def _per_episode(values: Any, n: int, dtype: Any, default: Any, what: str, name: str) -> np.ndarray:
    """A per-episode column, ``default`` for every episode when the source has none."""
    if values is None:
        return np.full(n, default, dtype=dtype)
    column = _column(values, dtype, what, name)
    if len(column) != n:
        raise EpisodesError(f"{what} is inconsistent: {len(column)} {name} but {n} episode_lengths")
    return column


def _evaluation_mask(types: Any, n: int, what: str) -> np.ndarray:
    """``episode_types`` as an evaluation mask, or an error naming the first unknown type."""
    if types is None:
        return np.zeros(n, dtype=bool)
    if len(types) != n:
        raise EpisodesError(f"{what} is inconsistent: {len(types)} episode_types but {n} episode_lengths")
    codes = _one_letter_codes(types)
    if codes is not None:
        evaluation, known = codes == ord("e"), (codes == ord("e")) | (codes == ord("t"))
    else:
        arr = np.asarray(types)
        evaluation = arr == "e"
        known = evaluation | (arr == "t")
    if not known.all():
        bad = types[int(np.flatnonzero(~known)[0])]
        raise EpisodesError(
            f"{what} has an unknown episode type {bad!r}: episode_types must be 't' (training) or 'e' (evaluation)"
        )
    return np.asarray(evaluation, dtype=bool)


def _one_letter_codes(types: Any) -> np.ndarray | None:
    """A list of one-letter strings as their byte codes, or None for anything else. One join instead
    of ``np.asarray`` of the strings: about a sixth of the time at 10,000 episodes, paid by every
    flush of the Monitor (at every reset with ``write_upon_reset=True``)."""
    if not isinstance(types, list) or "" in types:
        return None
    try:
        joined = "".join(types)
    except TypeError:  # not all strings
        return None
    if len(joined) != len(types) or not joined.isascii():
        return None
    return np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
