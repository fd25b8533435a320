"""``palaestra server export DEST``: the whole board as files (:mod:`.format`), on any database and store.

- **One snapshot.** Every row is read in one read transaction (REPEATABLE READ, read only, on
  PostgreSQL; one ``BEGIN`` ... on SQLite, whose WAL readers see the database as of their first
  read), so uploads going on meanwhile are in the export whole or not at all. The blobs are copied
  after it: a blob is stored before the row that references it commits and is never changed.
- **Incremental.** A second export into the same folder reads the previous manifest: a blob key it
  listed (keys are never reused) whose blob file is there is not fetched again, a blob already
  present by hash is not written again, and a records file whose bytes did not change is left alone;
  what it keeps is hashed again (a file edited or replaced by a link since is written anew).
- **The manifest last**, after everything it lists is in place (an interrupted export is finished by
  running it again).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from tqdm import tqdm

from palaestra import __version__
from palaestra.scoreboard.server.archive import format as fmt
from palaestra.scoreboard.server.core import migrate
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.state import open_database
from palaestra.scoreboard.server.core.storage import BlobNotFound, BlobStore, open_store
from palaestra.scoreboard.server.evaluations.scorelog import evaluation_blob_keys

__all__ = ["ExportReport", "export"]

ROWS_PER_FETCH = 1000
#: What an export folder holds besides its manifest
_LAYOUT = {"records", "blobs", ".tmp"}


@dataclass(frozen=True)
class ExportReport:
    destination: Path
    rows: dict[str, int]
    blobs: int
    #: blobs fetched from the store this time (the rest were in the folder already)
    blobs_fetched: int
    #: files written this time (records files and blobs; the manifest not counted)
    files_written: int
    bytes: int

    def summary(self) -> str:
        rows = ", ".join(f"{n} {name}" for name, n in self.rows.items())
        return (
            f"Exported {rows} and {self.blobs} blobs into {self.destination} ({self.bytes} bytes; "
            f"{self.files_written} files written, {self.blobs_fetched} blobs fetched from the store)"
        )


def export(
    config: ServerConfig, destination: Path, include_keys: bool = False, progress: bool = False
) -> ExportReport:
    """Export the board of ``config`` into ``destination`` (new, empty, or an earlier export's folder)."""
    destination = destination.expanduser().absolute()
    previous = _previous_export(destination)
    destination.mkdir(parents=True, exist_ok=True)
    db = open_database(config, migrate_now=True)
    store = open_store(config.storage_url, config.s3_endpoint_url)
    try:
        store.check()
        writer = _Writer(destination, previous, progress)
        rows, keys = writer.records(db, [t for t in fmt.TABLES if include_keys or not t.secret])
        blobs = writer.blobs(store, keys)
        writer.manifest(rows, blobs)
    finally:
        db.dispose()
    shutil.rmtree(destination / ".tmp", ignore_errors=True)
    return ExportReport(destination, rows, len(blobs), writer.fetched, writer.written, writer.total_bytes)


def _previous_export(destination: Path) -> dict[str, Any] | None:
    if not destination.exists():
        return None
    manifest = fmt.read_manifest(destination)  # a newer format is refused here, naming both versions
    # without a manifest: empty, or an export interrupted before its end (finished now)
    if manifest is None and any(p.name not in _LAYOUT for p in destination.iterdir()):
        raise fmt.ArchiveError(
            f"{destination} is not empty and holds no export (no {fmt.MANIFEST}): pick a new folder, or "
            "the folder of an earlier export to update it"
        )
    return manifest


class _Writer:
    """Writes one export into ``root``, reusing what the ``previous`` manifest lists."""

    def __init__(self, root: Path, previous: dict[str, Any] | None, progress: bool) -> None:
        self.root = root
        self.old_files: dict[str, Any] = (previous or {}).get("files", {})
        self.old_blobs = self._old_blob_index() if previous else {}
        self.files: dict[str, dict[str, Any]] = {}
        self.progress = progress
        self.fetched = self.written = self.total_bytes = 0

    def _old_blob_index(self) -> dict[str, dict[str, Any]]:
        path = self.root / fmt.BLOB_INDEX
        if fmt.BLOB_INDEX not in self.old_files or not path.is_file():
            return {}
        return {doc["key"]: doc for doc in fmt.read_lines(path)}

    # -- records -----------------------------------------------------------------------------------

    def records(self, db: Database, tables: list[fmt.ExportedTable]) -> tuple[dict[str, int], set[str]]:
        """Every table's rows, from one snapshot; (rows per table, the blob keys they reference)."""
        rows: dict[str, int] = {}
        keys: set[str] = set()
        with _snapshot(db) as conn:
            for table in tables:
                rows[table.name] = self._table(conn, table, keys)
        return rows, keys

    def _table(self, conn: sa.Connection, table: fmt.ExportedTable, keys: set[str]) -> int:
        sa_table: Any = table.model.__table__
        query = sa.select(*table.columns()).order_by(*sa_table.primary_key.columns)
        tmp = fmt.temporary_path(self.root)
        count = 0
        digest = hashlib.sha256()
        with open(tmp, "wb") as out, tqdm(desc=table.name, unit=" rows", disable=not self.progress) as bar:
            for row in conn.execution_options(yield_per=ROWS_PER_FETCH).execute(query):
                line = fmt.row_line(row._mapping)
                out.write(line)
                digest.update(line)
                keys.update(_blob_keys(table.name, row))
                count += 1
                bar.update()
        self._place(tmp, table.path, digest.hexdigest())
        return count

    def _place(self, tmp: Path, relative: str, sha256: str) -> None:
        """Move ``tmp`` to ``relative`` unless the same bytes are there already; list it."""
        size = tmp.stat().st_size
        target = self.root / relative
        # kept only if the file there still holds those bytes (re-hashed: a file edited since is replaced)
        if self.old_files.get(relative, {}).get("sha256") == sha256 and _holds(target, sha256):
            tmp.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, target)
            self.written += 1
        self.files[relative] = {"sha256": sha256, "size": size}
        self.total_bytes += size

    # -- blobs -------------------------------------------------------------------------------------

    def blobs(self, store: BlobStore, keys: set[str]) -> list[dict[str, Any]]:
        """Copy the blobs of ``keys`` in (each once by hash); the blob index, by key."""
        index: list[dict[str, Any]] = []
        for key in tqdm(sorted(keys), desc="blobs", unit=" blobs", disable=not self.progress):
            known = self.old_blobs.get(key)
            if known is not None and _holds(self.root / fmt.blob_path(known["sha256"]), known["sha256"]):
                doc = {"key": key, "sha256": known["sha256"], "size": known["size"]}
            else:
                fetched = self._fetch(store, key)
                if fetched is None:
                    continue
                doc = fetched
            index.append(doc)
            path = fmt.blob_path(doc["sha256"])
            if path not in self.files:
                self.files[path] = {"sha256": doc["sha256"], "size": doc["size"]}
                self.total_bytes += doc["size"]
        tmp = fmt.temporary_path(self.root)
        with open(tmp, "wb") as out:
            for doc in index:
                out.write(fmt.row_line(doc))
        self._place(tmp, fmt.BLOB_INDEX, fmt.file_digest(tmp)[0])
        return index

    def _fetch(self, store: BlobStore, key: str) -> dict[str, Any] | None:
        """Copy one blob from the store (None if it is gone: an unused upload collected meanwhile)."""
        tmp = fmt.temporary_path(self.root)
        digest, size = hashlib.sha256(), 0
        try:
            with store.open(key) as src, open(tmp, "wb") as out:
                for chunk in iter(lambda: src.read(1024 * 1024), b""):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
        except BlobNotFound:
            tmp.unlink(missing_ok=True)
            return None
        self.fetched += 1
        sha256 = digest.hexdigest()
        target = self.root / fmt.blob_path(sha256)
        if _holds(target, sha256):
            tmp.unlink()  # the same bytes under another key: stored once
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, target)
            self.written += 1
        return {"key": key, "sha256": sha256, "size": size}

    # -- manifest ----------------------------------------------------------------------------------

    def manifest(self, rows: dict[str, int], blobs: list[dict[str, Any]]) -> None:
        doc = {
            "format": fmt.FORMAT_NAME,
            "version": fmt.FORMAT_VERSION,
            "created": datetime.now(timezone.utc).isoformat(),
            "palaestra_version": __version__,
            "schema_revision": migrate.SCHEMA_HEAD,
            "tables": rows,
            "blobs": len(blobs),
            "files": dict(sorted(self.files.items())),
        }
        fmt.write_json_atomically(self.root / fmt.MANIFEST, doc)


def _holds(path: Path, sha256: str) -> bool:
    """Whether ``path`` is a file (not a link) whose bytes hash to ``sha256``: what an export keeps
    of an earlier one is hashed again, not trusted by its name."""
    return path.is_file() and not path.is_symlink() and fmt.file_digest(path)[0] == sha256


def _blob_keys(table: str, row: Any) -> list[str]:
    """The blob keys a row references (those the pages and downloads read)."""
    if table == "evaluations":
        return evaluation_blob_keys(row.episode_batch_key, row.videos or [])
    if table == "files" and row.status == "uploaded" and row.storage_key:
        return [row.storage_key]
    return []


@contextlib.contextmanager
def _snapshot(db: Database) -> Iterator[sa.Connection]:
    """A connection inside one read transaction that sees the database as of its start."""
    if db.is_sqlite:
        with db.engine.connect() as conn:
            conn.exec_driver_sql("BEGIN")  # the driver runs in autocommit: this opens the read transaction
            try:
                conn.exec_driver_sql("SELECT count(*) FROM users")  # the snapshot starts at the first read
                yield conn
            finally:
                conn.exec_driver_sql("ROLLBACK")
        return
    options = {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
    with db.write_engine.connect().execution_options(**options) as conn, conn.begin():
        yield conn
