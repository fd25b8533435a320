"""The running episode's counters of a single Monitor.

:class:`palaestra.monitoring.Monitor` keeps its step's state in one object: ``override`` (``None`` in
the common case, an episode running with no video; else the method a step calls instead), ``steps``
and ``reward`` (the running episode's). One implementation, in Python: a C step saved ~100 ns a step
(0.23 against 0.40 of ``RecordEpisodeStatistics``' overhead, ``bench/monitor_overhead.py``), 1-2 % of
a CartPole step, for a compiler on every source install and two implementations of every change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class EpisodeCounter:
    """The state of ``Monitor.step``."""

    __slots__ = ("override", "reward", "steps")

    def __init__(self) -> None:
        self.override: Callable[[Any], Any] | None = None
        self.reward: Any = 0.0
        self.steps = 0
