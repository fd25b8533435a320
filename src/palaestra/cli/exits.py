"""The exit codes of the ``palaestra`` command: one convention for every subcommand.

===  ===================================================================================
 0   success
 1   failure: one line on stderr names what went wrong and the fix (``--debug``: the traceback)
 2   usage error: a bad option or argument (the subcommand's usage, then one line)
 3   could not start: a service that cannot listen on its port, open its data folder, reach its
     database or use its schema (one line; the same code as uvicorn's start-up failure)
130  interrupted (Ctrl-C); what finished is kept
141  stdout was closed early (``palaestra envs | head``): nothing more is written, no traceback
143  terminated (SIGTERM: ``kill``, ``timeout``, Slurm, ``docker stop``); what finished is kept
===  ===================================================================================

:func:`stop_on_sigterm` makes SIGTERM stop the command the way Ctrl-C does (the Monitor is closed,
worker processes are stopped). Without it a process that renders with pygame never stops: SDL turns
SIGTERM into a window-close event that nothing reads. :func:`reraise_stop` gives a command back the
stop that a library swallowed (uvicorn shuts down gracefully on either signal, then returns).
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
    "note_stop",
    "reraise_stop",
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


_interrupted = threading.Event()


def _raise_interrupted(signum: int, frame: Any) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """Make SIGTERM raise :class:`Terminated` in the main thread, and note Ctrl-C as it raises
    ``KeyboardInterrupt`` (a no-op in other threads)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _raise_interrupted)


def note_stop(signum: int) -> None:
    """Record that ``signum`` (SIGTERM, else Ctrl-C's SIGINT) stopped the command, for
    :func:`reraise_stop`, where a library took the signal over."""
    (_terminated if signum == signal.SIGTERM else _interrupted).set()


def reraise_stop() -> None:
    """Raise :class:`Terminated` (or ``KeyboardInterrupt``) again if SIGTERM (or Ctrl-C) arrived and
    whatever ran since swallowed it, so that the command exits with 143 (or 130)."""
    if _terminated.is_set():
        raise Terminated
    if _interrupted.is_set():
        raise KeyboardInterrupt


def interrupted_code() -> int:
    """The exit code of a command that stopped early: 143 after SIGTERM, 130 after Ctrl-C."""
    return TERMINATED if _terminated.is_set() else INTERRUPTED


def interruption() -> str:
    """What stopped the command early, in a word: ``"terminated"`` (SIGTERM) or ``"interrupted"``."""
    return "terminated" if _terminated.is_set() else "interrupted"
