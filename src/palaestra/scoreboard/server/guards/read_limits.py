"""Anonymous reads are rate-limited per client address, shared by every process on the database.

A GET or HEAD, of the API or of a page, that carries neither a valid API key nor a signed-in session
counts one hit for its client address (``read:ADDRESS`` in ``rate_counters``, the table of the other
limits in :mod:`..accounts.rate_limits`: two servers on one database share the count). Above
``anonymous_reads_per_minute`` (``PALAESTRA_RATE_LIMIT_ANONYMOUS_READS``; 0: no limit) the answer is
429 with ``Retry-After``, the seconds until the minute's window ends. Static files (not routes) and
``/v1/health`` (load balancers probe it) are not counted. Behind a reverse proxy the address is the
client's only with ``--trust-proxy``; otherwise every reader shares the proxy's.

The default (:data:`..core.config.DEFAULT_ANONYMOUS_READS_PER_MINUTE`) is far above what a person browsing
sends (a page is one request; its scripts and styles are static files), and stops a scraper.
"""

from __future__ import annotations

import threading

from fastapi import Request

from palaestra.scoreboard.server.accounts import auth
from palaestra.scoreboard.server.accounts.rate_limits import count_hit, too_many
from palaestra.scoreboard.server.core.database import WriterBusy
from palaestra.scoreboard.server.core.deps import run_blocking, state_of
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.web import signin

__all__ = ["READ_WINDOW_S", "count_read", "limit_anonymous_reads"]

#: The window of ``anonymous_reads_per_minute``.
READ_WINDOW_S = 60
#: Routes whose reads are not counted.
UNCOUNTED_PATHS = frozenset({"/v1/health"})


async def limit_anonymous_reads(request: Request) -> None:
    """A dependency of every route: count an anonymous read, 429 once its address sent too many."""
    if request.method not in ("GET", "HEAD") or request.url.path in UNCOUNTED_PATHS:
        return
    state = state_of(request)
    limit = state.config.anonymous_reads_per_minute
    # a read-only archive writes nothing, counters included (its database may be a read-only copy)
    if limit <= 0 or state.config.read_only or await _identified(request, state):
        return
    address = request.client.host if request.client else "unknown"
    hits, wait = await run_blocking(state, count_read, state, f"read:{address}")
    if hits > limit:
        raise too_many(
            f"Too many requests from {address}: this server answers {limit} requests a minute from one "
            "address without an API key or a sign-in. Wait for the next minute, send an API key "
            "(`Authorization: Bearer KEY`), or ask the server's operator to raise "
            "PALAESTRA_RATE_LIMIT_ANONYMOUS_READS.",
            wait,
        )


_HELD_LOCK = threading.Lock()


def count_read(state: ServerState, bucket: str) -> tuple[int, float]:
    """Count an anonymous read in ``bucket``: ``(reads in the window so far, seconds until it ends)``.

    On SQLite a hit is a write, and it runs on the event loop (``run_blocking``): waiting there for
    another writer (a 4 MB ladder upload's transaction holds the database for a third of a second)
    would stall every request. So it never waits: while another writer holds the database the read
    is answered at once, its hit held back in the cache and added with the address's next hit that
    finds the database free; meanwhile the count is the last one seen plus the hits held back, so a
    scraper gains nothing by reading during a long write."""
    now = state.clock.time()
    start = int(now // READ_WINDOW_S * READ_WINDOW_S)
    with _HELD_LOCK:
        seen, held = _counts(state, bucket, start)
        _keep(state, bucket, start, seen, 0)  # the held hits go to the database with this one
    try:
        total, wait = count_hit(state.db, bucket, READ_WINDOW_S, state.clock, hits=held + 1, wait=False)
    except WriterBusy:
        with _HELD_LOCK:
            seen_now, held_now = _counts(state, bucket, start)
            seen, held = max(seen, seen_now), held_now + held + 1
            _keep(state, bucket, start, seen, held)
        return seen + held, start + READ_WINDOW_S - now
    with _HELD_LOCK:
        seen_now, held_now = _counts(state, bucket, start)
        _keep(state, bucket, start, max(total, seen_now), held_now)
    return total, wait


def _counts(state: ServerState, bucket: str, window_start: int) -> tuple[int, int]:
    """``(the last count seen, the hits held back)`` of ``bucket`` in the window of ``window_start``."""
    found, value = state.cache.lookup(("reads", bucket), state.clock.time())
    if not found or value[0] != window_start:
        return 0, 0
    return value[1], value[2]


def _keep(state: ServerState, bucket: str, window_start: int, seen: int, held: int) -> None:
    state.cache.store(("reads", bucket), (window_start, seen, held), window_start + 2 * READ_WINDOW_S)


async def _identified(request: Request, state: ServerState) -> bool:
    """Whether the request carries a valid API key or a signed-in session (an invalid one counts as
    none: sending junk credentials must not escape the limit)."""
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    key = key.strip()
    if scheme.lower() == "bearer" and key:
        principal = auth._cached_principal(state, key)
        if principal is None:
            principal = await run_blocking(state, auth._lookup_and_cache, state, key)
        if principal is not None:
            return True
    if request.cookies.get(signin.SESSION_COOKIE):
        return await run_blocking(state, signin.signed_in, request) is not None
    return False
