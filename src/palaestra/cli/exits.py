"""The exit codes of the ``palaestra`` command: one convention for every subcommand.

===  ===================================================================================
 0   success
 1   failure: one line on stderr names what went wrong and the fix (``--debug``: the traceback)
 2   usage error: a bad option or argument (the subcommand's usage, then one line)
 3   could not start: a service that cannot listen on its port, open its data folder or reach
     its database (one line; the same code as uvicorn's start-up failure)
130  interrupted (Ctrl-C); what finished is kept
141  stdout was closed early (``palaestra envs | head``): nothing more is written, no traceback
143  terminated (SIGTERM: ``kill``, ``timeout``, Slurm, ``docker stop``); what finished is kept
===  ===================================================================================

:func:`stop_on_sigterm` makes SIGTERM stop the command the way Ctrl-C does (the Monitor is closed,
worker processes are stopped). Without it a process that renders with pygame never stops: SDL turns
SIGTERM into a window-close event that nothing reads.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

__all__ = [
    "BROKEN_PIPE",
    "COULD_NOT_START",
    "FAILURE",
    "INTERRUPTED",
    "OK",
    "TERMINATED",
    "USAGE",
    "Terminated",
    "interrupted_code",
    "interruption",
    "stop_on_sigterm",
]

OK = 0
FAILURE = 1
USAGE = 2
COULD_NOT_START = 3
INTERRUPTED = 130
BROKEN_PIPE = 141
TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so that every path that cleans up after Ctrl-C runs."""


_terminated = threading.Event()


def _raise_terminated(signum: int, frame: Any) -> None:
    _terminated.set()
    raise Terminated


def stop_on_sigterm() -> None:
    """Make SIGTERM raise :class:`Terminated` in the main thread (a no-op in other threads)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


def interrupted_code() -> int:
    """The exit code of a command that stopped early: 143 after SIGTERM, 130 after Ctrl-C."""
    return TERMINATED if _terminated.is_set() else INTERRUPTED


def interruption() -> str:
    """What stopped the command early, in a word: ``"terminated"`` (SIGTERM) or ``"interrupted"``."""
    return "terminated" if _terminated.is_set() else "interrupted"
