"""The running episode's counters of a single Monitor, and its step in C where that is built.

:class:`palaestra.monitoring.Monitor` keeps its step's state in one object: ``override`` (``None`` in
the common case, an episode running with no video; else the method a step calls instead), ``steps``
and ``reward`` (the running episode's). Where the ``_stepcore`` extension is built, that object is
also the Monitor's ``step`` itself (see ``_stepcore.c``): the common path runs without a Python
frame, which was most of the Monitor's per-step cost (``bench/monitor_overhead.py``). Where it is
not built (no C compiler), :class:`EpisodeCounter` holds the same state and ``Monitor.step`` runs the
same logic in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CompiledStepCounter: type[Any] | None
try:
    from palaestra.monitoring._stepcore import StepCounter as CompiledStepCounter
except ImportError:  # optional, as the board cores are: the Python path below does the same
    CompiledStepCounter = None


class EpisodeCounter:
    """The state of ``Monitor.step`` where the C step is not built."""

    __slots__ = ("override", "reward", "steps")

    def __init__(self, env_step: Callable[[Any], Any], on_end: Callable[[Any, Any], None]) -> None:
        self.override: Callable[[Any], Any] | None = None
        self.reward: Any = 0.0
        self.steps = 0


def episode_counter(env_step: Callable[[Any], Any], on_end: Callable[[Any, Any], None]) -> Any:
    """The counter of a Monitor whose env steps with ``env_step``; ``on_end(terminated, truncated)``
    is called when an episode ends. A compiled one is callable as the Monitor's ``step``."""
    if CompiledStepCounter is not None:
        return CompiledStepCounter(env_step, on_end)
    return EpisodeCounter(env_step, on_end)
