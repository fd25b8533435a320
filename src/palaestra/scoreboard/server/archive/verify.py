"""``palaestra server verify [DEST|URL]``: check the hash chain of scores, every record and every blob.

Three sources, one check (:func:`verify`): the board of the configured database and store (no
argument), an export folder (``DEST``) and a running server (``URL``, through ``/v1/log``). Entry by
entry, oldest first: the entry follows on from the one before (``seq`` and ``previous_sha256``), it
hashes to its ``entry_sha256``, its record's current document hashes to ``record_sha256`` (a row
edited behind the server's back does not), and each of its blobs hashes to its ``sha256`` (a
rewritten blob does not). Then: no evaluation or committed, scored run is on the board without an
entry. The first failure is reported, naming the entry and what differs.

A reader who keeps the head hash (``entry_sha256`` of the last entry) of an earlier check detects a
rewritten history too: ``--expect-head HASH`` fails unless that entry is still in the chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol

import httpx
import sqlalchemy as sa

from palaestra.scoreboard.server.archive import format as fmt
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.storage import BlobNotFound, BlobStore
from palaestra.scoreboard.server.evaluations import coverage
from palaestra.scoreboard.server.evaluations.coverage import SUPERSEDED, changed_fields
from palaestra.scoreboard.server.evaluations.scorelog import (
    GENESIS,
    KINDS,
    canonical_json,
    current_documents,
    entry_hash,
    sha256_hex,
    unlogged,
)
from palaestra.scoreboard.server.tables.service import ScoreLogEntry

__all__ = ["BoardSource", "ExportSource", "ServerSource", "VerifyReport", "verify"]

PAGE_SIZE = 100


@dataclass
class VerifyReport:
    entries: int = 0
    blobs: int = 0
    head: str = GENESIS
    #: what failed first (None: everything checked out)
    failure: str | None = None
    heads_seen: set[str] = field(default_factory=set, repr=False)

    def summary(self) -> str:
        if self.failure:
            return f"Verification FAILED: {self.failure}"
        return f"Verified {self.entries} log entries and {self.blobs} blobs; the head is {self.head}"


class Source(Protocol):
    def entries(self) -> Iterator[Any]:
        """The log's entries, oldest first (attributes of ``score_log``'s columns, plus ``record``:
        the record's current document, None when it is gone)."""

    def blob_sha256(self, entry: Any, index: int) -> str | None:
        """The sha256 of blob ``index`` of ``entry`` as held now (None: it is missing)."""

    def unlogged(self) -> list[tuple[str, str]]:
        """``(kind, id)`` of records on the board with no entry."""


def verify(source: Source, expect_head: str | None = None) -> VerifyReport:
    report = VerifyReport()
    report.failure = (
        _check_chain(source, report) or _check_head(report, expect_head) or _check_unlogged(source)
    )
    return report


def _check_record(name: str, entry: Any) -> str | None:
    """None if ``entry``'s record is on the board as it was logged; else what differs, by field
    for a version-2 entry (``its provenance, conditions``), by hash for a version-1 one."""
    if entry.record is None:
        return f"{name}: the {entry.kind} is not on the board"
    found = sha256_hex(canonical_json(entry.record))
    if found == entry.record_sha256:
        return None
    changed = changed_fields(entry.fields, entry.record) if getattr(entry, "fields", None) else []
    what = f": its {', '.join(changed)} changed" if changed else ""
    when = "scored" if entry.kind in KINDS else "logged"
    return (
        f"{name}: the {entry.kind} was changed after it was {when}{what} (its record hashes "
        f"to {found}, the log says {entry.record_sha256})"
    )


def _check_chain(source: Source, report: VerifyReport) -> str | None:
    previous, expected_seq = GENESIS, 1
    latest: dict[tuple[str, str], tuple[str, Any]] = {}  # SUPERSEDED kinds: held to their last entry
    for entry in source.entries():
        name = f"entry {entry.seq} ({entry.kind} {entry.record_id})"
        if entry.seq != expected_seq:
            return f"entry {expected_seq} is missing: the log goes on at entry {entry.seq}"
        if entry.previous_sha256 != previous:
            return f"{name} names {entry.previous_sha256} as the entry before it, which hashes to {previous}"
        version = getattr(entry, "version", None) or 1
        found = entry_hash(entry.seq, entry.kind, entry.record_id, entry.record_sha256, entry.blobs,
                           entry.previous_sha256, entry.created, version, getattr(entry, "fields", None))  # fmt: skip
        if found != entry.entry_sha256:
            return f"{name} was changed: it hashes to {found}, and says {entry.entry_sha256}"
        if entry.kind in SUPERSEDED:
            latest[entry.kind, entry.record_id] = (name, entry)
        else:
            failure = _check_record(name, entry)
            if failure:
                return failure
        for index, blob in enumerate(entry.blobs):
            digest = source.blob_sha256(entry, index)
            if digest is None:
                return f"{name}: blob {blob['key']} is missing"
            if digest != blob["sha256"]:
                return f"{name}: blob {blob['key']} was rewritten (its sha256 is {digest}, the log says {blob['sha256']})"
            report.blobs += 1
        previous = entry.entry_sha256
        report.heads_seen.add(previous)
        report.entries, report.head, expected_seq = report.entries + 1, previous, expected_seq + 1
    for name, entry in latest.values():
        failure = _check_record(name, entry)
        if failure:
            return failure
    return None


def _check_head(report: VerifyReport, expect_head: str | None) -> str | None:
    if expect_head and expect_head not in report.heads_seen:
        return f"the entry {expect_head} seen earlier is not in the chain: the log was rewritten"
    return None


def _check_unlogged(source: Source) -> str | None:
    missing = source.unlogged()
    if missing:
        kind, record_id = missing[0]
        hint = (
            " (stored before palaestra logged ladders? `palaestra server log-backfill` logs it)"
            if kind.startswith("ladder_")
            else " (added behind the server's back?)"
        )
        return f"{kind} {record_id} is on the board but not in the log{hint}"
    return None


# -- sources -----------------------------------------------------------------------------------------


class BoardSource:
    """The board of a database and a blob store (``palaestra server verify`` with no argument)."""

    def __init__(self, db: Database, store: BlobStore) -> None:
        self.db, self.store = db, store

    def entries(self) -> Iterator[Any]:
        table: Any = ScoreLogEntry.__table__
        after = 0
        while True:
            with self.db.connect() as conn:
                query = sa.select(table).where(table.c.seq > after).order_by(table.c.seq).limit(PAGE_SIZE)
                rows = conn.execute(query).all()
                documents = current_documents(conn, rows)
            for row in rows:
                yield SimpleNamespace(**row._mapping, record=documents.get((row.kind, row.record_id, row.version)))
            if len(rows) < PAGE_SIZE:
                return
            after = rows[-1].seq

    def blob_sha256(self, entry: Any, index: int) -> str | None:
        h = hashlib.sha256()
        try:
            with self.store.open(entry.blobs[index]["key"]) as f:
                for chunk in iter(lambda: f.read(1024 * 1024), b""):
                    h.update(chunk)
        except BlobNotFound:
            return None
        return h.hexdigest()

    def unlogged(self) -> list[tuple[str, str]]:
        with self.db.connect() as conn:
            return unlogged(conn)


class ExportSource:
    """An export folder (:mod:`.format`): its rows, its blob index and its blob files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.expanduser().absolute()
        fmt.refuse_links(self.folder)  # every file read is the export's own
        if fmt.read_manifest(self.folder) is None:
            raise fmt.ArchiveError(f"{self.folder} has no {fmt.MANIFEST}: it is not an export")
        self.rows = {kind: self._rows(f"records/{kind}s.jsonl") for kind in KINDS}
        self.blobs = {doc["key"]: doc["sha256"] for doc in self._lines(fmt.BLOB_INDEX)}
        self.run_evaluations: dict[int, list[str]] = {}
        for row in sorted(self.rows["evaluation"].values(), key=lambda r: r["seq"]):
            if row.get("benchmark_run_seq") is not None:
                self.run_evaluations.setdefault(row["benchmark_run_seq"], []).append(row["id"])
        # what version-2 documents add: names, ladder matches with their games, ratings
        self.user_names = {row["seq"]: row["name"] for row in self._lines("records/users.jsonl")}
        self.algorithm_names = {row["seq"]: row["name"] for row in self._lines("records/algorithms.jsonl")}
        self.matches = self._rows("records/ladder_matches.jsonl")
        self.games: dict[int, list[dict[str, Any]]] = {}
        for game in self._lines("records/ladder_games.jsonl"):
            self.games.setdefault(game["match_seq"], []).append(game)
        for games in self.games.values():
            games.sort(key=lambda g: (g["number"], g["seq"]))
        self.ratings: dict[str, list[dict[str, Any]]] = {}
        for rating in self._lines("records/ladder_ratings.jsonl"):
            self.ratings.setdefault(rating["ladder"], []).append(rating)
        self.logged: set[tuple[str, str]] = set()

    def _lines(self, relative: str) -> Iterator[dict[str, Any]]:
        path = self.folder / relative
        return fmt.read_lines(path) if path.is_file() else iter(())

    def _rows(self, relative: str) -> dict[str, dict[str, Any]]:
        return {row["id"]: row for row in self._lines(relative)}

    def entries(self) -> Iterator[Any]:
        for row in self._lines("records/score_log.jsonl"):
            self.logged.add((row["kind"], row["record_id"]))
            record = self._document(row["kind"], row["record_id"], row.get("version") or 1)
            yield SimpleNamespace(**row, record=record)

    def _document(self, kind: str, record_id: str, version: int) -> dict[str, Any] | None:
        if kind == "ladder_ratings":
            ratings = self.ratings.get(record_id)
            if not ratings:
                return None
            return coverage.document(kind, {"ladder": record_id}, version=version, ratings=ratings)
        if kind == "ladder_match":
            match = self.matches.get(record_id)
            if match is None:
                return None
            owned = {**match, "user_name": self.user_names.get(match["user_seq"])}
            return coverage.document(kind, owned, version=version, games=self.games.get(match["seq"], []))
        row = self.rows.get(kind, {}).get(record_id)
        if row is None:
            return None
        names = {
            "user_name": self.user_names.get(row["user_seq"]),
            "algorithm_name": self.algorithm_names.get(row.get("algorithm_seq")),
        }
        return coverage.document(kind, {**row, **names}, self.run_evaluations.get(row["seq"], []), version)

    def blob_sha256(self, entry: Any, index: int) -> str | None:
        named = self.blobs.get(entry.blobs[index]["key"])
        path = self.folder / fmt.blob_path(named) if named else None
        if path is None or not path.is_file():
            return None
        return fmt.file_digest(path)[0]  # the file's bytes, not its name, are checked

    def unlogged(self) -> list[tuple[str, str]]:
        out = [("evaluation", i) for i in self.rows["evaluation"] if ("evaluation", i) not in self.logged]
        out += [
            ("benchmark_run", i)
            for i, row in self.rows["benchmark_run"].items()
            if row["status"] == "committed"
            and row.get("score") is not None
            and ("benchmark_run", i) not in self.logged
        ]
        out += [("ladder_match", i) for i in self.matches if ("ladder_match", i) not in self.logged]
        out += [("ladder_ratings", i) for i in sorted(self.ratings) if ("ladder_ratings", i) not in self.logged]
        return out


class ServerSource:
    """A running server, through ``/v1/log`` (records as it renders them now, blobs as it serves them)."""

    def __init__(self, url: str, client: httpx.Client | None = None) -> None:
        self.client = client or httpx.Client(base_url=url.rstrip("/"), timeout=60)
        self.logged: set[tuple[str, str]] = set()

    def entries(self) -> Iterator[Any]:
        after = 0
        while True:
            r = self.client.get("/v1/log", params={"limit": PAGE_SIZE, "starting_after": str(after)})
            r.raise_for_status()
            page = r.json()
            for doc in page["data"]:
                self.logged.add((doc["kind"], doc["record_id"]))
                yield SimpleNamespace(**doc)
            if not page["has_more"] or not page["data"]:
                return
            after = page["data"][-1]["seq"]

    def blob_sha256(self, entry: Any, index: int) -> str | None:
        h = hashlib.sha256()
        with self.client.stream("GET", entry.blobs[index]["url"]) as r:
            if r.status_code == 404:
                return None
            r.raise_for_status()
            for chunk in r.iter_bytes():
                h.update(chunk)
        return h.hexdigest()

    def unlogged(self) -> list[tuple[str, str]]:
        """The evaluations and committed, scored runs its lists show that the log does not hold."""
        out = [("evaluation", doc["id"]) for doc in self._all("/v1/evaluations")]
        out += [
            ("benchmark_run", doc["id"])
            for doc in self._all("/v1/benchmark_runs")
            if doc.get("status") == "committed" and doc.get("score") is not None
        ]
        return [record for record in out if record not in self.logged]

    def _all(self, path: str) -> Iterator[dict[str, Any]]:
        params: dict[str, Any] = {"limit": PAGE_SIZE}
        while True:
            r = self.client.get(path, params=params)
            r.raise_for_status()
            page = r.json()
            yield from page["data"]
            if not page["has_more"] or not page["data"]:
                return
            params["starting_after"] = page["data"][-1]["id"]


def open_source(target: str | None, config: ServerConfig) -> tuple[Source, Any]:
    """The source ``target`` names (None: the configured board) and what to close after."""
    if target and target.startswith(("http://", "https://")):
        source = ServerSource(target)
        return source, source.client.close
    if target:
        return ExportSource(Path(target)), lambda: None
    from palaestra.scoreboard.server.core.state import open_database
    from palaestra.scoreboard.server.core.storage import open_store

    db = open_database(config, migrate_now=False)
    return BoardSource(db, open_store(config.storage_url, config.s3_endpoint_url)), db.dispose
