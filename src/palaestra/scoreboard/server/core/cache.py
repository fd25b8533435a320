"""The server's one cache: what it keeps in memory between requests, on its state.

One :class:`Cache` per :class:`~.database.Database` (so per :class:`~.state.ServerState`, whose
``cache`` it is, and reachable from every session the database opens: ``session.info["cache"]``). It
dies with the state, so two servers in one process (tests, the static mirror) never share a value,
and a test's fresh database starts empty. Its keys are tuples whose first item names what is kept:

- ``"page"``: values pages compute from stored rows (``web/page_cache.py`` makes their signatures);
- ``"principal"``: an API key's principal, for :data:`..accounts.auth.AUTH_CACHE_S` seconds;
- ``"algorithm"``: the algorithm a user's id or name names (algorithms are never renamed or deleted);
- ``"recording"``: a terminal recording's last frame, the fallback text of its page;
- ``"postgres folder"``: where PostgreSQL keeps the database, for the free-space check;
- ``"reads"``: an address's anonymous reads, the last count seen and the hits held back while
  another writer held SQLite (:func:`..guards.read_limits.count_read`).

The least recently used value goes once :data:`SIZE` are kept; a value stored with ``expires`` is
gone after that moment (the caller's clock, so tests advance it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["SIZE", "Cache"]

T = TypeVar("T")

#: Values kept: the page values (a benchmark's algorithms are one each: a thousand of them is a
#: field-scale benchmark), the keys and algorithms of the users uploading at once, a few recordings.
SIZE = 16_384


class Cache:
    """A thread-safe LRU of values by key, each optionally with an expiry."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, tuple[Any, float | None]] = OrderedDict()

    def lookup(self, key: Hashable, now: float | None = None) -> tuple[bool, Any]:
        """``(True, value)`` if ``key`` holds a value (not expired at ``now``), else ``(False, None)``."""
        with self._lock:
            found = self._values.get(key)
            if found is None:
                return False, None
            value, expires = found
            if expires is not None and (now is None or now >= expires):
                del self._values[key]
                return False, None
            self._values.move_to_end(key)
            return True, value

    def store(self, key: Hashable, value: Any, expires: float | None = None) -> None:
        with self._lock:
            self._values[key] = (value, expires)
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value kept under ``key``, else ``compute()``, kept for the next time."""
        hit, value = self.lookup(key)
        if hit:
            return value
        value = compute()
        self.store(key, value)
        return value

    def discard(self, key: Hashable) -> None:
        with self._lock:
            self._values.pop(key, None)

    def discard_where(self, kind: str, drop: Callable[[Hashable, Any], bool]) -> None:
        """Drop every value of ``kind`` (its key's first item) for which ``drop(key, value)``."""
        with self._lock:
            for key in [
                k
                for k, (v, _) in self._values.items()
                if isinstance(k, tuple) and k and k[0] == kind and drop(k, v)
            ]:
                del self._values[key]
