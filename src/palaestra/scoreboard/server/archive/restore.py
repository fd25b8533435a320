"""``palaestra server import SRC``: an export (:mod:`.format`) into an empty board, on any database and store.

The order is what makes a refused import write nothing: (1) the manifest's version, (2) every file
it lists, hashed, and every blob the blob index names, present (a damaged or partial export is
refused here, naming the file), (3) the target board empty, (4) the blobs stored under their keys,
(5) every row in one transaction, ids, sequence numbers and timestamps as they were, so that
every page and ``/v1`` answer of the new board is the old one's. An export's API keys are imported
only when the operator asks (``--include-keys``), and a folder holding a symbolic link is refused
before anything is read through it. On PostgreSQL the id sequences are
moved past the imported rows. Blobs stored before a failed (5) are orphans that ``gc`` removes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session
from tqdm import tqdm

from palaestra.scoreboard.server.archive import format as fmt
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.core.database import Database, shown_url
from palaestra.scoreboard.server.core.state import open_database
from palaestra.scoreboard.server.core.storage import BlobStore, open_store
from palaestra.scoreboard.server.evaluations import index_stats
from palaestra.scoreboard.server.evaluations.rescore import derive_missing_curves

__all__ = ["ImportReport", "check_export", "import_board"]

ROWS_PER_INSERT = 500


@dataclass(frozen=True)
class ImportReport:
    source: Path
    rows: dict[str, int]
    blobs: int
    #: tables the export holds that were left out (its API keys, without ``include_keys``)
    left_out: tuple[str, ...] = ()

    def summary(self) -> str:
        rows = ", ".join(f"{n} {name}" for name, n in self.rows.items())
        done = f"Imported {rows} and {self.blobs} blobs from {self.source}"
        if self.left_out:
            done += (
                f"; left out its {', '.join(self.left_out)} (import with --include-keys to bring them: "
                "the keys would work on this board)"
            )
        return done


def check_export(source: Path, progress: bool = False) -> dict[str, Any]:
    """The manifest of the export in ``source``, after every file it lists matched its hash;
    :class:`~.format.ArchiveError` naming the first file that does not."""
    source = source.expanduser().absolute()
    fmt.refuse_links(source)
    manifest = fmt.read_manifest(source)
    if manifest is None:
        raise fmt.ArchiveError(
            f"{source} has no {fmt.MANIFEST}: it is not an export, or an export that did not finish "
            "(run the export again)"
        )
    files: dict[str, Any] = manifest.get("files", {})
    for relative, expected in tqdm(
        sorted(files.items()), desc="checking", unit=" files", disable=not progress
    ):
        path = source / relative
        if not path.is_file():
            raise fmt.ArchiveError(f"{path} is missing: the export is partial (the manifest lists it)")
        sha256, size = fmt.file_digest(path)
        if sha256 != expected["sha256"] or size != expected["size"]:
            raise fmt.ArchiveError(
                f"{path} is damaged: its sha256 is {sha256} ({size} bytes), and the manifest says "
                f"{expected['sha256']} ({expected['size']} bytes)"
            )
    if fmt.BLOB_INDEX not in files:
        raise fmt.ArchiveError(f"{source / fmt.MANIFEST} lists no {fmt.BLOB_INDEX}: the export is partial")
    for doc in fmt.read_lines(source / fmt.BLOB_INDEX):
        if fmt.blob_path(doc["sha256"]) not in files:
            raise fmt.ArchiveError(
                f"{source / fmt.blob_path(doc['sha256'])} (blob {doc['key']}) is not in the manifest: "
                "the export is partial"
            )
    return manifest


def import_board(
    config: ServerConfig, source: Path, progress: bool = False, include_keys: bool = False
) -> ImportReport:
    """Import the export in ``source`` into the (empty) board of ``config``: its API keys only with
    ``include_keys`` (an export made with ``--include-keys`` does not decide that for the importer)."""
    source = source.expanduser().absolute()
    manifest = check_export(source, progress)
    tables = [t for t in fmt.TABLES if include_keys or not t.secret]
    left_out = tuple(t.name for t in fmt.TABLES if t not in tables and t.path in manifest["files"])
    db = open_database(config, migrate_now=True)
    store = open_store(config.storage_url, config.s3_endpoint_url)
    try:
        store.check()
        _check_empty(db, config)
        blobs = _store_blobs(store, source, progress)
        rows = _insert_rows(db, source, manifest, tables, progress)
        with db.engine.begin() as conn:  # an export from before 0009_derived_evaluations has no curves
            derive_missing_curves(conn, store)
    finally:
        db.dispose()
    return ImportReport(source, rows, blobs, left_out)


def _check_empty(db: Database, config: ServerConfig) -> None:
    with db.connect() as conn:
        for table in fmt.TABLES:
            count = conn.scalar(sa.select(sa.func.count()).select_from(table.model.__table__))
            if count:
                raise fmt.ArchiveError(
                    f"The board at {shown_url(config.database_url)} is not empty ({count} rows in {table.name}): "
                    "import into a new database"
                )




def _store_blobs(store: BlobStore, source: Path, progress: bool) -> int:
    index = list(fmt.read_lines(source / fmt.BLOB_INDEX))
    for doc in tqdm(index, desc="blobs", unit=" blobs", disable=not progress):
        store.put_file(doc["key"], source / fmt.blob_path(doc["sha256"]))
    return len(index)


def _insert_rows(
    db: Database, source: Path, manifest: dict[str, Any], tables: list[fmt.ExportedTable], progress: bool
) -> dict[str, int]:
    rows: dict[str, int] = {}
    listed = manifest["files"]
    with db.write() as session:
        for table in tables:
            if table.path not in listed:
                continue  # API keys of an export made without --include-keys
            rows[table.name] = _insert_table(session, table, source / table.path, progress)
        # derived from the evaluations, not exported: the per-user and per-algorithm counts
        index_stats.rebuild(session.connection())
        if session.connection().dialect.name == "postgresql":
            _move_sequences(session)
    return rows


def _insert_table(session: Session, table: fmt.ExportedTable, path: Path, progress: bool) -> int:
    sa_table: Any = table.model.__table__
    insert = sa.insert(sa_table)
    batch: list[dict[str, Any]] = []
    count = 0
    for doc in tqdm(fmt.read_lines(path), desc=table.name, unit=" rows", disable=not progress):
        batch.append(fmt.row_values(table, doc))
        if len(batch) >= ROWS_PER_INSERT:
            session.execute(insert, batch)
            count, batch = count + len(batch), []
    if batch:
        session.execute(insert, batch)
        count += len(batch)
    return count


def _move_sequences(session: Session) -> None:
    """Set each ``seq`` identity sequence past the imported rows (PostgreSQL gives new rows ids from it)."""
    for table in fmt.TABLES:
        sa_table: Any = table.model.__table__
        seq = sa_table.columns.get("seq")
        if seq is None or seq.autoincrement is False:
            continue
        session.execute(
            sa.text(
                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'seq'), "
                f"COALESCE((SELECT max(seq) FROM {table.name}), 0) + 1, false)"
            )
        )
