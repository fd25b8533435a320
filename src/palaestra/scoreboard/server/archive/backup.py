"""``palaestra server backup DEST``: a consistent copy of a running SQLite + blob-folder scoreboard.

The database is copied with SQLite's online backup (``sqlite3.Connection.backup``), which reads
through SQLite and so includes the commits still in the write-ahead log (copying the database file
alone misses them), while the server keeps serving. The blob folder is copied after it: blobs are
written before the row that references them commits and are never changed afterwards, so every blob
the copied database references is there. The upload-signing secret comes along, so that upload forms
handed out before the backup still work after a restore.

``DEST`` is a data folder of its own: ``palaestra server --data-dir DEST`` serves it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from palaestra.errors import ConfigurationError
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.core.signing import SECRET_FILE_NAME, secret_path
from palaestra.scoreboard.server.core.storage import FileStore, open_store

__all__ = ["BackupReport", "backup"]

DATABASE_NAME = "scoreboard.sqlite3"
BLOBS_NAME = "blobs"
#: Pages copied per step of the online backup: small steps let the server's writers in between.
PAGES_PER_STEP = 1024


@dataclass(frozen=True)
class BackupReport:
    destination: Path
    database_bytes: int
    blob_files: int
    blob_bytes: int


def backup(config: ServerConfig, destination: Path) -> BackupReport:
    """Copy the database, the blob folder and the upload secret of ``config`` into ``destination``
    (a new or empty folder)."""
    if not config.is_sqlite:
        raise ConfigurationError(
            "palaestra server backup copies a SQLite database; back PostgreSQL up with its own tools "
            "(pg_dump, or continuous archiving) and copy the blob folder after it"
        )
    store = open_store(config.storage_url, config.s3_endpoint_url)
    if not isinstance(store, FileStore):
        raise ConfigurationError(
            f"palaestra server backup copies a blob folder, and {config.storage_url} is not one: keep the "
            "bucket's objects with the storage's own versioning or replication"
        )
    source = Path(sa.make_url(config.database_url).database or "")
    if not source.is_file():
        raise ConfigurationError(f"There is no scoreboard database at {source} to back up")
    destination = destination.expanduser().absolute()
    if destination.exists() and any(destination.iterdir()):
        raise ConfigurationError(f"The backup folder {destination} is not empty; pick a new one")
    destination.mkdir(parents=True, exist_ok=True, mode=0o700)

    copy = destination / DATABASE_NAME
    src, dst = sqlite3.connect(source, timeout=30), sqlite3.connect(copy)
    try:
        src.backup(dst, pages=PAGES_PER_STEP)
    finally:
        dst.close()
        src.close()
    files, size = _copy_blobs(store.root, destination / BLOBS_NAME)
    secret = secret_path(config)
    if secret.is_file():
        shutil.copy2(secret, destination / SECRET_FILE_NAME)
    return BackupReport(destination, copy.stat().st_size, files, size)


def _copy_blobs(root: Path, target: Path) -> tuple[int, int]:
    """Copy every blob under ``root`` (not the temporary files of writes in progress); (files, bytes)."""
    files = size = 0
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not (here == root and d.startswith("."))]
        out = target / here.relative_to(root)
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            try:
                shutil.copy2(here / name, out / name)
            except FileNotFoundError:
                continue  # removed meanwhile (an orphan collected): nothing references it
            files += 1
            size += (out / name).stat().st_size
    return files, size
