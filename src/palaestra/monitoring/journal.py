"""The episode journal: a crash-safe, append-only record of completed episodes.

While a Monitor is open, every completed (or abandoned) episode is appended as one fixed-size
binary record to ``<stats file>.journal``, a file mapped into memory with ``mmap``. A store into a
shared file mapping lands in the kernel's page cache immediately, so a process killed with SIGKILL
right after ``step()`` returned still leaves the episode on disk, and appending costs a few hundred
nanoseconds: no system call, no JSON, no rewrite of the history (the file doubles when full, so
growth is O(1) amortised). ``close()`` folds the journal into the 2017 JSON stats file and deletes
it; ``load_results`` reads a journal that a killed process left behind.

Layout (little-endian): a 64-byte header ``b"PALJRNL1"``, record count (u64), initial reset
timestamp (f64, NaN when unset); then 32-byte records: end timestamp (f64), reward (f64), length
(i64), kind (u8: 0 training episode, 1 evaluation episode, 2 abandoned steps), truncated (u8).
The count is written after the record, so a record torn by a kill is never counted.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from typing import Any

import numpy as np

MAGIC = b"PALJRNL1"
HEADER_SIZE = 64
RECORD = struct.Struct("<ddqBB6x")
RECORD_SIZE = RECORD.size
_COUNT = struct.Struct("<Q")
_INITIAL = struct.Struct("<d")
RECORD_DTYPE = np.dtype(
    [("t", "<f8"), ("r", "<f8"), ("l", "<i8"), ("kind", "u1"), ("truncated", "u1"), ("pad", "V6")]
)
KIND_BY_TYPE = {"t": 0, "e": 1}
TYPE_BY_KIND = {0: "t", 1: "e"}
KIND_ABANDONED = 2
INITIAL_CAPACITY = 1024


class JournalWriter:
    """Appends records to a journal file through a shared memory mapping."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._capacity = INITIAL_CAPACITY
        os.ftruncate(self._fd, HEADER_SIZE + self._capacity * RECORD_SIZE)
        self._map = mmap.mmap(self._fd, HEADER_SIZE + self._capacity * RECORD_SIZE)
        self._map[0:8] = MAGIC
        _INITIAL.pack_into(self._map, 16, math.nan)
        self.count = 0

    def set_initial_reset_timestamp(self, timestamp: float) -> None:
        _INITIAL.pack_into(self._map, 16, timestamp)

    def append(self, timestamp: float, reward: float, length: int, kind: int, truncated: bool) -> None:
        if self.count == self._capacity:
            self._grow()
        RECORD.pack_into(self._map, HEADER_SIZE + self.count * RECORD_SIZE, timestamp, reward, length, kind, truncated)
        self.count += 1
        _COUNT.pack_into(self._map, 8, self.count)

    def _grow(self) -> None:
        self._capacity *= 2
        size = HEADER_SIZE + self._capacity * RECORD_SIZE
        os.ftruncate(self._fd, size)
        self._map.resize(size)

    def close(self, delete: bool = True) -> None:
        if self._fd < 0:
            return
        self._map.close()
        os.close(self._fd)
        self._fd = -1
        if delete:
            os.unlink(self.path)


def read_journal(path: str) -> dict[str, Any]:
    """The stats document held by a journal (the same keys as a stats file)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < HEADER_SIZE or raw[:8] != MAGIC:
        raise ValueError("not a palaestra episode journal (bad header)")
    (count,) = _COUNT.unpack_from(raw, 8)
    (initial,) = _INITIAL.unpack_from(raw, 16)
    count = min(count, (len(raw) - HEADER_SIZE) // RECORD_SIZE)
    records = np.frombuffer(raw, RECORD_DTYPE, count, HEADER_SIZE)
    episodes = records[records["kind"] != KIND_ABANDONED]
    abandoned = records[records["kind"] == KIND_ABANDONED]
    return {
        "initial_reset_timestamp": None if math.isnan(initial) else initial,
        "timestamps": episodes["t"].tolist(),
        "episode_lengths": episodes["l"].tolist(),
        "episode_rewards": episodes["r"].tolist(),
        "episode_types": [TYPE_BY_KIND[k] for k in episodes["kind"].tolist()],
        "episode_truncated": episodes["truncated"].astype(bool).tolist(),
        "abandoned_steps": abandoned["l"].tolist(),
        "abandoned_timestamps": abandoned["t"].tolist(),
    }
