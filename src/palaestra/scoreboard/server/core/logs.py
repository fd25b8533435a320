"""The server's log: one format for palaestra's and uvicorn's lines, and repeats collapsed.

Every line is ``2026-12-01T12:34:56.789Z LEVEL logger: message`` (UTC). Each request gets one line
from ``palaestra.access`` (:class:`~..guards.errors.RequestMiddleware`)::

    2026-12-01T12:34:56.789Z INFO palaestra.access: 127.0.0.1 "POST /v1/files" 201 3.1 ms req_2kQ...

and a failure one ``ERROR`` line with its traceback. The same failure again within
:data:`REPEAT_WINDOW_S` (a database outage fails every request the same way) is logged without its
traceback, at most :data:`SHOWN_REPEATS` times; the rest are counted and the count is added to the
next line of that failure after the window (``[and 412 more like it in the last 60 s]``).

- :func:`log_config`: the ``logging.config.dictConfig`` of a server process, also handed to uvicorn
  (which applies it in each ``--workers`` process);
- :class:`CollapseRepeats`: the filter that collapses repeats.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ACCESS_LOGGER",
    "REPEAT_WINDOW_S",
    "SHOWN_REPEATS",
    "CollapseRepeats",
    "UTCFormatter",
    "log_config",
]

ACCESS_LOGGER = "palaestra.access"
#: How long a failure counts as the same one again.
REPEAT_WINDOW_S = 60.0
#: Repeats of a failure logged (without traceback) in a window before the rest are only counted.
SHOWN_REPEATS = 5
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class UTCFormatter(logging.Formatter):
    """``FORMAT`` with ISO 8601 UTC timestamps to the millisecond."""

    converter = time.gmtime  # type: ignore[assignment]  # (typeshed reads it as a bound method)
    default_time_format = "%Y-%m-%dT%H:%M:%S"
    default_msec_format = "%s.%03dZ"

    def __init__(self, fmt: str = FORMAT) -> None:
        super().__init__(fmt)


@dataclass
class _Seen:
    first: float
    repeats: int = 0
    suppressed: int = 0


class CollapseRepeats(logging.Filter):
    """Let the first of a run of equal warnings/errors through whole, a few repeats without their
    traceback, and count the rest (see the module docstring)."""

    def __init__(self, window_s: float = REPEAT_WINDOW_S, shown: int = SHOWN_REPEATS) -> None:
        super().__init__()
        self.window_s = window_s
        self.shown = shown
        self._seen: dict[tuple[Any, ...], _Seen] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = _signature(record)
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or record.created - seen.first > self.window_s:
                if len(self._seen) > 1000:
                    self._seen.clear()
                self._seen[key] = _Seen(first=record.created)
                if seen is not None and seen.suppressed:
                    record.msg = (
                        f"{record.msg} [and {seen.suppressed} more like it in the last {self.window_s:.0f} s]"
                    )
                return True
            seen.repeats += 1
            if seen.repeats > self.shown:
                seen.suppressed += 1
                return False
        if record.exc_info:
            exc = record.exc_info[1]
            record.msg = f"{record.msg}: {type(exc).__name__} again (traceback logged above)"
            record.exc_info = None
            record.exc_text = None
        return True


def _signature(record: logging.LogRecord) -> tuple[Any, ...]:
    """What makes two records the same failure: the exception's type and first line, else the
    message's template (its arguments, such as a request id, differ)."""
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        first_line = (str(exc).strip().splitlines() or [""])[0][:200]
        return (record.name, type(exc).__qualname__, first_line)
    return (record.name, record.levelno, str(record.msg))


def log_config(level: str = "info") -> dict[str, Any]:
    """The logging set-up of a server process: palaestra's and uvicorn's loggers on stderr in one
    format, repeats collapsed; uvicorn's own access log is off (``palaestra.access`` replaces it)."""
    handler = {
        "class": "logging.StreamHandler",
        "formatter": "default",
        "filters": ["collapse"],
        "stream": "ext://sys.stderr",
    }
    level_name = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"collapse": {"()": CollapseRepeats}},
        # uvicorn writes use_colors into "default" and "access" when it is told to colour
        "formatters": {"default": {"()": UTCFormatter}, "access": {"()": UTCFormatter}},
        "handlers": {"default": handler},
        "loggers": {
            "palaestra": {"handlers": ["default"], "level": level_name, "propagate": False},
            "uvicorn": {"handlers": ["default"], "level": level_name, "propagate": False},
            "uvicorn.error": {"level": level_name},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }
