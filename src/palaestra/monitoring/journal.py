"""The episode journal: a crash-safe, append-only record of completed episodes.

While a Monitor is open, every completed (or abandoned) episode is appended as one fixed-size
binary record to ``<stats file>.journal``, a file mapped into memory with ``mmap``. A store into a
shared file mapping lands in the kernel's page cache immediately, so a process killed with SIGKILL
right after ``step()`` returned still leaves the episode on disk, and appending costs a few hundred
nanoseconds: no system call, no JSON, no rewrite of the history (the file doubles when full, so
growth is O(1) amortised). ``close()`` folds the journal into the 2017 JSON stats file and deletes
it; ``load_results`` reads a journal that a killed process left behind.

Layout (little-endian): a 64-byte header ``b"PALJRNL1"``, record count (u64), initial reset
timestamp (f64, NaN when unset), number of sub-environments (u32: 0 for a single Monitor's journal,
and in journals written before the field existed); then 32-byte records: end timestamp (f64), reward (f64), length
(i64), kind (u8: 0 training episode, 1 evaluation episode, 2 abandoned steps), truncated (u8), two
pad bytes, source (u32). The count is written after the records, so a record torn by a kill is
never counted.

``source`` is the sub-environment of a vector Monitor, which keeps one stats file, one manifest and
one journal for all of its sub-environments: one memory map for any number of them, and the episodes
that end in one vector step are appended with one copy. A vector Monitor's journal turns into a stats
document with palaestra's per-episode ``env_index`` list (see :func:`episodes_of_records`). The single
Monitor's records have source 0 (journals written before the field existed hold 0 there).
(palaestra before issue 27 gave each sub-environment its own stats file and manifest, which named
the shared journal and the source; :mod:`palaestra.monitoring.results` still reads those.)
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from typing import Any, NamedTuple

import numpy as np

from palaestra.episodes import Episodes

MAGIC = b"PALJRNL1"
HEADER_SIZE = 64
RECORD = struct.Struct("<ddqBB2xI")
RECORD_SIZE = RECORD.size
_COUNT = struct.Struct("<Q")
_INITIAL = struct.Struct("<d")
_NUM_ENVS = struct.Struct("<I")
_NUM_ENVS_OFFSET = 24
RECORD_DTYPE = np.dtype(
    [("t", "<f8"), ("r", "<f8"), ("l", "<i8"), ("kind", "u1"), ("truncated", "u1"), ("pad", "V2"), ("source", "<u4")]
)
KIND_BY_TYPE = {"t": 0, "e": 1}
TYPE_BY_KIND = {0: "t", 1: "e"}
KIND_ABANDONED = 2
INITIAL_CAPACITY = 1024
# bound once: append() runs at every episode's end, on the Monitor's hot path in short episodes
_pack_record = RECORD.pack_into
_pack_count = _COUNT.pack_into


class JournalWriter:
    """Appends records to a journal file through a shared memory mapping.

    One record at a time with :meth:`append` (the Monitor), or a batch written straight into the
    mapping (the vector Monitor): ``i = reserve(n)``, fill ``columns[field][i:i + n]``, ``commit(n)``.
    """

    def __init__(self, path: str, num_envs: int = 0) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._capacity = INITIAL_CAPACITY
        os.ftruncate(self._fd, HEADER_SIZE + self._capacity * RECORD_SIZE)
        self._map = mmap.mmap(self._fd, HEADER_SIZE + self._capacity * RECORD_SIZE)
        self._map[0:8] = MAGIC
        _INITIAL.pack_into(self._map, 16, math.nan)
        _NUM_ENVS.pack_into(self._map, _NUM_ENVS_OFFSET, num_envs)
        self.count = 0
        #: Each field of every record slot in the mapping, as a numpy array (valid until the next
        #: ``reserve``, which may remap the file: look it up again after each).
        self.columns: dict[str, np.ndarray] = {}
        self._map_columns()

    def set_initial_reset_timestamp(self, timestamp: float) -> None:
        _INITIAL.pack_into(self._map, 16, timestamp)

    def append(
        self, timestamp: float, reward: float, length: int, kind: int, truncated: bool, source: int = 0
    ) -> None:
        count = self.count
        if count == self._capacity:
            self._grow(count + 1)
        view = self._view
        _pack_record(view, HEADER_SIZE + count * RECORD_SIZE, timestamp, reward, length, kind, truncated, source)
        self.count = count + 1
        _pack_count(view, 8, count + 1)

    def reserve(self, n: int) -> int:
        """Make room for ``n`` more records; the index of the first, to fill through :attr:`columns`."""
        if self.count + n > self._capacity:
            self._grow(self.count + n)
        return self.count

    def commit(self, n: int) -> None:
        """Count the ``n`` records filled in since :meth:`reserve` (after they are written, so that a
        kill in between leaves them uncounted)."""
        self.count += n
        _COUNT.pack_into(self._map, 8, self.count)

    def append_records(self, records: np.ndarray) -> None:
        """Append an array of :data:`RECORD_DTYPE` records with one copy."""
        n = len(records)
        start = self.reserve(n)
        self._records[start : start + n] = records
        self.commit(n)

    def records(self) -> np.ndarray:
        """A copy of every record appended so far."""
        return self._records[: self.count].copy()

    def _map_columns(self) -> None:
        self._records = np.frombuffer(self._map, RECORD_DTYPE, self._capacity, HEADER_SIZE)
        self.columns = {name: self._records[name] for name in ("t", "r", "l", "kind", "truncated", "source")}
        # struct packs into a memoryview of the mapping faster than into the mmap object itself
        self._view = memoryview(self._map)

    def _unmap_columns(self) -> None:
        # numpy views and memoryviews keep the mapping exported, and an exported mmap can be neither
        # resized nor closed.
        self.columns = {}
        del self._records
        self._view.release()

    def _grow(self, needed: int) -> None:
        while self._capacity < needed:
            self._capacity *= 2
        size = HEADER_SIZE + self._capacity * RECORD_SIZE
        self._unmap_columns()
        os.ftruncate(self._fd, size)
        self._map.resize(size)
        self._map_columns()

    def close(self, delete: bool = True) -> None:
        if self._fd < 0:
            return
        self._unmap_columns()
        self._map.close()
        os.close(self._fd)
        self._fd = -1
        if delete:
            os.unlink(self.path)


class Journal(NamedTuple):
    """What a journal file holds: its header's fields and its counted records."""

    initial_reset_timestamp: float | None
    records: np.ndarray
    #: the vector Monitor's number of sub-environments; 0 for a single Monitor's journal
    num_envs: int


def read_journal_records(path: str) -> Journal:
    """The header and the counted records of a journal file."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < HEADER_SIZE or raw[:8] != MAGIC:
        raise ValueError("not a palaestra episode journal (bad header)")
    (count,) = _COUNT.unpack_from(raw, 8)
    (initial,) = _INITIAL.unpack_from(raw, 16)
    (num_envs,) = _NUM_ENVS.unpack_from(raw, _NUM_ENVS_OFFSET)
    count = min(count, (len(raw) - HEADER_SIZE) // RECORD_SIZE)
    records = np.frombuffer(raw, RECORD_DTYPE, count, HEADER_SIZE)
    return Journal(None if math.isnan(initial) else initial, records, num_envs)


def episodes_of_records(initial_reset_timestamp: float | None, records: np.ndarray) -> Episodes:
    """The :class:`~palaestra.episodes.Episodes` of journal ``records``, in journal order (the
    abandoned records as abandoned steps; each record's source as its ``env_index``)."""
    is_abandoned = records["kind"] == KIND_ABANDONED
    if is_abandoned.any():
        episodes, abandoned = records[~is_abandoned], records[is_abandoned]
    else:  # the usual run: no copy of every record
        episodes, abandoned = records, records[:0]
    n = len(episodes)
    return Episodes(
        lengths=np.ascontiguousarray(episodes["l"]),
        rewards=np.ascontiguousarray(episodes["r"]),
        timestamps=np.ascontiguousarray(episodes["t"]),
        is_evaluation=episodes["kind"] == KIND_BY_TYPE["e"],
        truncated=episodes["truncated"].astype(bool),
        initial_reset_timestamp=initial_reset_timestamp,
        data_sources=np.zeros(n, np.int64),
        initial_reset_timestamps=np.array([np.nan if initial_reset_timestamp is None else initial_reset_timestamp]),
        env_index=episodes["source"].astype(np.int64),
        abandoned_steps=np.ascontiguousarray(abandoned["l"]),
        abandoned_timestamps=np.ascontiguousarray(abandoned["t"]),
    )


def split_by_source(records: np.ndarray) -> dict[int, np.ndarray]:
    """Each source's records, in journal order (one stable sort, however many sources)."""
    if not len(records):
        return {}
    order = np.argsort(records["source"], kind="stable")
    ordered = records[order]
    sources, starts = np.unique(ordered["source"], return_index=True)
    bounds = [*starts.tolist()[1:], len(ordered)]
    return {int(s): ordered[a:b] for s, a, b in zip(sources.tolist(), starts.tolist(), bounds)}


def read_journal(path: str, source: int | None = None) -> dict[str, Any]:
    """The stats document held by a journal (the same keys as a stats file): every record (with
    ``env_index`` for a vector Monitor's journal), or only those of ``source`` (a sub-environment of
    a vector Monitor of the earlier layout, one stats file per sub-environment)."""
    journal = read_journal_records(path)
    if source is not None:
        mine = journal.records[journal.records["source"] == source]
        return episodes_of_records(journal.initial_reset_timestamp, mine).to_stats_document()
    episodes = episodes_of_records(journal.initial_reset_timestamp, journal.records)
    return episodes.to_stats_document(env_index=journal.num_envs > 0)
