"""Free space of the blob store's disk and of the database's, for ``/v1/health``.

A probe of a few bytes (``api.health``) still passes on a disk too full for one more upload, so
health also compares each disk's free space with ``min_free_bytes`` (``PALAESTRA_MIN_FREE_BYTES``; by
default the largest upload the server accepts, :meth:`ServerConfig.largest_upload_bytes`; 0: not
checked). Where the free space cannot be known it is not checked, and the check says so:

- the file store: the disk of its folder;
- S3: unknown (a bucket has no free space to run out of);
- SQLite: the disk of the database file's folder;
- PostgreSQL on this machine: the disk of the database's tablespace (or of the data directory, which
  needs a superuser or ``pg_read_all_settings``); a server elsewhere: unknown.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import sqlalchemy as sa

from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import FileStore

__all__ = ["database_free_bytes", "shown_bytes", "space_problem", "store_free_bytes"]

_TABLESPACE_PATH = sa.text(
    "SELECT pg_tablespace_location(d.dattablespace) FROM pg_database d WHERE d.datname = current_database()"
)
_DATA_DIRECTORY = sa.text("SELECT current_setting('data_directory')")


def store_free_bytes(state: ServerState) -> int | None:
    """Bytes free on the blob store's disk; ``None`` where a store has no such limit (S3)."""
    if isinstance(state.store, FileStore):
        return shutil.disk_usage(state.store.root).free
    return None


def database_free_bytes(state: ServerState) -> int | None:
    """Bytes free on the database's disk; ``None`` where this process cannot see that disk."""
    if state.config.is_sqlite:
        path = sa.make_url(state.config.database_url).database
        if not path or path == ":memory:":
            return None
        return shutil.disk_usage(Path(path).absolute().parent).free
    if not state.config.database_is_local:
        return None
    folder = _postgres_folder(state.db.url, state)
    if folder is None:
        return None
    try:
        return shutil.disk_usage(folder).free
    except OSError:  # a data directory this user cannot reach
        return None


def _postgres_folder(url: str, state: ServerState) -> str | None:
    """The folder PostgreSQL keeps the database in (found once per state: it does not move)."""
    return state.cache.get(("postgres folder", url), lambda: _find_postgres_folder(state))


def _find_postgres_folder(state: ServerState) -> str | None:
    with state.db.connect() as conn:
        location = conn.scalar(_TABLESPACE_PATH)
        if location:
            return str(location)
        try:
            data_directory = conn.scalar(_DATA_DIRECTORY)
        except sa.exc.DBAPIError:  # not allowed to see it
            return None
    return str(data_directory) if data_directory and os.path.isabs(str(data_directory)) else None


def space_problem(free: int | None, needed: int) -> str | None:
    """What is wrong with ``free`` bytes when an upload needs ``needed``; ``None`` if nothing is."""
    if free is None or needed <= 0 or free >= needed:
        return None
    return (
        f"has {shown_bytes(free)} free, less than the {shown_bytes(needed)} of the largest upload this "
        "server accepts (PALAESTRA_MIN_FREE_BYTES)"
    )


def shown_bytes(n: int) -> str:
    """``"512 bytes"``, ``"1.9 MiB"``, ``"256 MiB"``, ``"3.2 GiB"``."""
    if n < 1024:
        return f"{n} bytes"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value >= 100 or value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"
