"""The server's clock: what every TTL, cache and rate window of the scoreboard reads.

Upload URLs' expiry, sign-in sessions and invites, the API-key cache, the signing secret's re-read,
the rate limits' windows and gc's cut-offs all ask :class:`Clock` (on ``ServerState.clock``) rather
than :mod:`time`, so that a test advances a clock instead of sleeping until something expires.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

__all__ = ["SYSTEM_CLOCK", "Clock"]


class Clock:
    """The system's clock: Unix seconds, monotonic seconds and the UTC moment."""

    def time(self) -> float:
        """Seconds since the Unix epoch (what expiry times and rate windows are written in)."""
        return time.time()

    def monotonic(self) -> float:
        """Seconds that never go back (for how long a cached answer is reused)."""
        return time.monotonic()

    def now(self) -> datetime:
        """The UTC moment of :meth:`time` (what the database's timestamps are compared with)."""
        return datetime.fromtimestamp(self.time(), timezone.utc)


SYSTEM_CLOCK = Clock()
