"""Which exceptions say the scoreboard's database cannot be used just now (an outage), as against a
fault of the request or of the code.

One classification for every side that touches the database: the request guards answer an outage
with a 503 (:mod:`..guards.outage`), the agent worker waits it out with one log line.
"""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa

__all__ = ["database_unavailable"]

#: SQLite's primary result codes of a database that cannot be used just now (the file locked past the
#: busy timeout, gone, unreadable, read-only, or failing I/O), as ``sqlite3`` names them.
_SQLITE_OUTAGES = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_PERM")


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) says the database cannot be used just now."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _is_outage(current):
            return True
        current = getattr(current, "orig", None) or current.__cause__ or current.__context__
    return False


def _is_outage(exc: BaseException) -> bool:
    if isinstance(exc, sa.exc.TimeoutError):  # no pooled connection came free in time
        return True
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sqlite3.Error):
        name = str(getattr(exc, "sqlite_errorname", ""))
        return name.startswith(_SQLITE_OUTAGES)
    try:
        import psycopg
    except ImportError:  # pragma: no cover - SQLite-only installs
        return False
    # Connection failures (SQLSTATE class 08), a server shutting down or starting (57P0x), too many
    # connections (53300), lock and statement timeouts: psycopg's OperationalError. Its DiskFull is
    # a 507, recognised before this is asked.
    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
