"""The Monitors of this process that are open (single and vector), closed at interpreter exit: the
2017 ``monitor_closer``. The upload client asks it before uploading a directory (is a Monitor still
writing it?), so it imports nothing of the recording side."""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from typing import Protocol

__all__ = ["OpenMonitor", "open_monitors"]

logger = logging.getLogger("palaestra")


class OpenMonitor(Protocol):
    """What the registry knows of a Monitor (a :class:`Monitor` or a ``VectorMonitor``)."""

    directory: str

    def close(self) -> None: ...


class _MonitorRegistry:
    """Process-wide registry of open monitors (the 2017 ``monitor_closer``), closed at exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_id = -1
        self._monitors: weakref.WeakValueDictionary[int, OpenMonitor] = weakref.WeakValueDictionary()
        atexit.register(self.close_all)

    def register(self, monitor: OpenMonitor) -> int:
        with self._lock:
            self._next_id += 1
            self._monitors[self._next_id] = monitor
            return self._next_id

    def unregister(self, monitor_id: int) -> None:
        with self._lock:
            self._monitors.pop(monitor_id, None)

    def open_monitors(self) -> list[OpenMonitor]:
        with self._lock:
            return list(self._monitors.values())

    def close_all(self) -> None:
        for monitor in self.open_monitors():
            try:
                monitor.close()
            except Exception:  # at exit, one broken monitor must not keep the others from closing
                logger.exception("Could not close monitor on %s", monitor.directory)


_registry = _MonitorRegistry()


def open_monitors() -> list[OpenMonitor]:
    """The Monitors (single and vector) of this process that have not been closed yet."""
    return _registry.open_monitors()
