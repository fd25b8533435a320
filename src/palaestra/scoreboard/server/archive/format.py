"""The archive format of ``palaestra server export`` (version 1; ``docs/archive.md`` describes it).

::

    DEST/manifest.json              {"format", "version", "created", "palaestra_version",
                                     "schema_revision", "tables": {name: rows},
                                     "files": {path: {"sha256", "size"}}}: every other file, hashed
    DEST/records/<table>.jsonl      one JSON object per row, every column by name (datetimes ISO 8601)
    DEST/records/blobs.jsonl        {"key", "sha256", "size"}: each stored blob the rows reference
    DEST/blobs/sha256/ab/abcd...    the blobs, named by the sha256 of their bytes

The manifest is written last: it is what makes a folder an export, and a reader trusts nothing that
does not match it. Users carry no password hash and API keys come only when asked; sign-in
sessions, invites, idempotency keys, rate counters and the upload-signing secret never do.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from palaestra.errors import Error
from palaestra.scoreboard.server.tables.accounts import ApiKey, User
from palaestra.scoreboard.server.tables.base import Base, UTCDateTime
from palaestra.scoreboard.server.tables.ladders import LadderGame, LadderMatch, LadderPlayer, LadderRating
from palaestra.scoreboard.server.tables.live import LiveChunkRecord, LiveEvaluation, LiveSource
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, EnvStats, Evaluation
from palaestra.scoreboard.server.tables.service import FileRecord, ScoreLogEntry

__all__ = [
    "BLOB_INDEX",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MANIFEST",
    "TABLES",
    "ArchiveError",
    "ExportedTable",
    "blob_path",
    "check_version",
    "read_manifest",
    "refuse_links",
    "row_line",
    "row_values",
]

FORMAT_NAME = "palaestra-board-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
BLOB_INDEX = "records/blobs.jsonl"


class ArchiveError(Error):
    """An export or import that cannot go on: a damaged or partial export, a newer format, a board
    that is not empty."""


@dataclass(frozen=True)
class ExportedTable:
    """A table of the export: its model, the columns left out, and whether only ``--include-keys`` brings it."""

    model: type[Base]
    left_out: frozenset[str] = frozenset()
    secret: bool = False

    @property
    def name(self) -> str:
        return str(self.model.__tablename__)

    @property
    def path(self) -> str:
        return f"records/{self.name}.jsonl"

    def columns(self) -> list[sa.Column[Any]]:
        table: Any = self.model.__table__
        return [c for c in table.columns if c.name not in self.left_out]


#: In the order an import inserts them (every row after the rows it references).
TABLES = (
    ExportedTable(User, frozenset({"password_hash"})),
    ExportedTable(ApiKey, secret=True),
    ExportedTable(Algorithm),
    ExportedTable(BenchmarkRun),
    ExportedTable(FileRecord),
    ExportedTable(Evaluation),
    ExportedTable(EnvStats),
    ExportedTable(ScoreLogEntry),
    # the board-game ladders (games are stored as their records' text, no blob) and live runs
    ExportedTable(LadderMatch),
    ExportedTable(LadderPlayer),
    ExportedTable(LadderGame),
    ExportedTable(LadderRating),
    ExportedTable(LiveEvaluation),
    ExportedTable(LiveSource),
    ExportedTable(LiveChunkRecord),
)


def blob_path(sha256: str) -> str:
    return f"blobs/sha256/{sha256[:2]}/{sha256}"


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def row_line(row: Mapping[Any, Any]) -> bytes:
    """One row as a JSON line (floats exactly as stored; JSON columns as their values)."""
    return json.dumps(dict(row), sort_keys=True, default=_json_default, ensure_ascii=False).encode() + b"\n"


def row_values(table: ExportedTable, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The column values of an exported row, ready to insert (datetimes parsed; unknown keys dropped)."""
    out = {}
    for column in table.columns():
        if column.name not in doc:
            continue
        value = doc[column.name]
        if isinstance(column.type, UTCDateTime) and isinstance(value, str):
            value = datetime.fromisoformat(value)
        out[column.name] = value
    return out


def refuse_links(folder: Path) -> None:
    """:class:`ArchiveError` naming the first symbolic link in ``folder`` (the folder itself included):
    an export holds files only, and a link would make an import or a verify read a file outside it
    (``/etc/passwd`` as a blob, another board's records)."""
    if folder.is_symlink():
        raise ArchiveError(f"{folder} is a symbolic link: give the export's own folder ({folder.resolve()})")
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            raise ArchiveError(
                f"{path} is a symbolic link (to {os.readlink(path)}): an export holds files only, so this one "
                "was changed after it was made; refused, nothing was read from it"
            )


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of the export in ``folder`` (its version checked), or None if there is none."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_bytes())
    except ValueError as e:
        raise ArchiveError(f"{path} is not JSON ({e}): the export is damaged") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise ArchiveError(f"{path} is not the manifest of a palaestra board export (format {FORMAT_NAME!r})")
    check_version(manifest, path)
    return manifest


def check_version(manifest: Mapping[str, Any], path: Path) -> None:
    version = manifest.get("version")
    if not isinstance(version, int) or version < 1:
        raise ArchiveError(f"{path} names no format version (found {version!r})")
    if version > FORMAT_VERSION:
        raise ArchiveError(
            f"{path} is an export of format version {version}, and this palaestra reads format versions "
            f"up to {FORMAT_VERSION}: upgrade palaestra to read it"
        )


def read_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a ``.jsonl`` file."""
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def file_digest(path: Path) -> tuple[str, int]:
    """``(sha256, size)`` of a file, read in chunks."""
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def temporary_path(folder: Path) -> Path:
    """A fresh name in ``folder/.tmp`` (on the same file system as what it becomes)."""
    tmp = folder / ".tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp / uuid.uuid4().hex


def write_json_atomically(path: Path, doc: Any) -> None:
    tmp = temporary_path(path.parent)
    tmp.write_bytes(json.dumps(doc, indent=1, sort_keys=True).encode() + b"\n")
    os.replace(tmp, path)
