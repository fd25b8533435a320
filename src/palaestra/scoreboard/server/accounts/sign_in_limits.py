"""Failed web sign-ins, throttled per client address and per (address, user name): guessing a
password is slowed, and nobody can lock a user out by failing as them.

- :func:`sign_in_wait`: 0 if a sign-in from ``address`` as ``name`` may be tried now, else the
  seconds until it may (the route answers 429 with ``Retry-After`` before hashing anything);
- :func:`note_failed_sign_in`: count a failure in every tier below;
- :func:`clear_failed_sign_ins`: a success starts the (address, name) count afresh (not the
  address's: an attacker who owns one account must not wipe its guesses by signing in as itself).

The counts are fixed windows in ``rate_counters`` (:func:`.rate_limits.count_hit`), shared by every
process on the database. Each tier is ``(failures, window)``; once a tier's failures are reached the
next try waits for the end of its window, so the waits grow with the failures:

- one name from one address (:data:`PAIR_TIERS`): 5 a minute, 10 per 15 minutes, 20 an hour;
- one address, whatever the names (:data:`ADDRESS_TIERS`): 30 per 15 minutes, 100 an hour.

No count is kept per name alone: 10 failures from anywhere used to hold the name back for everyone,
its owner included, which let anyone lock anyone out, again and again. The owner signing in from
another address is never held back by someone else's failures. What this leaves open is a guesser
with many addresses (each gets 20 tries per name an hour): a password of :data:`.sessions.MIN_PASSWORD_LENGTH`
characters or more, hashed with argon2id, is the defence there. An IPv6 client is counted by its
/64 network (one host usually holds the whole /64); behind a proxy, the address is the one
``--trust-proxy`` takes from ``X-Forwarded-For``.
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import Any

import sqlalchemy as sa

from palaestra.scoreboard.server.accounts.rate_limits import count_hit
from palaestra.scoreboard.server.core.clock import SYSTEM_CLOCK, Clock
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.tables.service import RateCounter

__all__ = [
    "ADDRESS_TIERS",
    "PAIR_TIERS",
    "clear_failed_sign_ins",
    "client_network",
    "note_failed_sign_in",
    "sign_in_wait",
]

#: (failures, window in seconds) of one user name from one address: the waits grow 1 min -> 15 min -> 1 h.
PAIR_TIERS: tuple[tuple[int, int], ...] = ((5, 60), (10, 15 * 60), (20, 3600))
#: (failures, window in seconds) from one address, whatever the names (spraying one password at many users).
ADDRESS_TIERS: tuple[tuple[int, int], ...] = ((30, 15 * 60), (100, 3600))

_COUNTERS: Any = RateCounter.__table__


def client_network(address: str) -> str:
    """What one client is counted as: its IPv4 address, or the /64 network of its IPv6 address."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]  # "an unknown address", a test client's name: counted as itself
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:  # ::ffff:203.0.113.7 is the IPv4 client 203.0.113.7
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _name_key(name: str) -> str:
    # a digest keeps the bucket short whatever the typed name, and the name out of the table
    return hashlib.sha256(name.strip().lower().encode("utf-8")).hexdigest()[:24]


def _buckets(address: str, name: str) -> list[tuple[str, int, int]]:
    """``(bucket, limit, window_s)`` of every tier a sign-in from ``address`` as ``name`` counts in."""
    network = client_network(address)
    pair = [(f"sign_in:{window}:{network}:{_name_key(name)}", limit, window) for limit, window in PAIR_TIERS]
    whole = [(f"sign_in:{window}:{network}", limit, window) for limit, window in ADDRESS_TIERS]
    return pair + whole


def sign_in_wait(db: Database, address: str, name: str, clock: Clock = SYSTEM_CLOCK) -> float:
    """0 if ``address`` may try to sign in as ``name`` now, else the seconds until it may."""
    now = clock.time()
    tiers = {
        bucket: (limit, int(now // window * window), window) for bucket, limit, window in _buckets(address, name)
    }
    with db.connect() as conn:
        rows = conn.execute(
            sa.select(_COUNTERS.c.bucket, _COUNTERS.c.window_start, _COUNTERS.c.hits).where(
                _COUNTERS.c.bucket.in_(list(tiers))
            )
        ).all()
    wait = 0.0
    for bucket, window_start, hits in rows:
        limit, start, window = tiers[bucket]
        if window_start == start and hits >= limit:
            wait = max(wait, start + window - now)
    return wait


def note_failed_sign_in(db: Database, address: str, name: str, clock: Clock = SYSTEM_CLOCK) -> None:
    """Count a failed sign-in from ``address`` as ``name`` in every tier."""
    for bucket, _, window in _buckets(address, name):
        count_hit(db, bucket, window, clock)


def clear_failed_sign_ins(db: Database, address: str, name: str) -> None:
    """A successful sign-in as ``name`` from ``address`` starts that pair's count afresh."""
    pair_buckets = [bucket for bucket, _, _ in _buckets(address, name)[: len(PAIR_TIERS)]]
    with db.write() as session:
        session.execute(sa.delete(_COUNTERS).where(_COUNTERS.c.bucket.in_(pair_buckets)))
