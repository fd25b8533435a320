"""The tamper-evident log of scores: a hash chain with one entry per scored evaluation and benchmark run.

- :func:`record_document`: a record's canonical document (a fixed list of its columns per entry
  version, so that a column added later does not change old hashes: :mod:`.coverage` says what each
  version covers); :func:`canonical_json` its bytes.
- Each entry holds ``record_sha256`` (the document's sha256), ``blobs`` (the key and sha256 of each
  blob the record's pages and downloads read) and ``previous_sha256`` (the entry before it; 64 zeros
  for the first); ``entry_sha256`` hashes all of that with the entry's ``seq`` and ``created``.
- :func:`append_evaluation` runs inside the transaction that inserts the evaluation, and
  :func:`append_run` inside the one that stores a committed run's score: a record is in the log
  exactly when it is on the board. Appends are serialised (SQLite's writers already are; on
  PostgreSQL a transaction-scoped advisory lock), so the chain never forks.
- :func:`append_ladder_match` and :func:`append_ladder_ratings` run in the transaction that stores a
  match and rates its ladder again (version 2 entries).
- :func:`backfill`: entries for records scored before the log existed, or before it covered them
  (``palaestra server log-backfill``).

A changed row or blob shows as a document or blob whose hash no longer matches its entry; a changed
entry as a broken link (:mod:`..archive.verify` checks all three).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.storage import BlobStore
from palaestra.scoreboard.server.evaluations import coverage
from palaestra.scoreboard.server.evaluations.coverage import (
    CURRENT_VERSION,
    canonical_json,
    current_documents,
    hashed_document,
    plain,
    run_evaluations,
)
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.base import utcnow
from palaestra.scoreboard.server.tables.ladders import LadderMatch, LadderRating
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, Evaluation
from palaestra.scoreboard.server.tables.service import ScoreLogEntry

__all__ = [
    "GENESIS",
    "KINDS",
    "append_evaluation",
    "append_ladder_match",
    "append_ladder_ratings",
    "append_run",
    "backfill",
    "canonical_json",
    "current_documents",
    "entry_hash",
    "evaluation_blobs",
    "plain",
    "record_document",
    "sha256_hex",
]

#: ``previous_sha256`` of the first entry
GENESIS = "0" * 64
#: Entries appended per transaction by :func:`backfill` (one transaction each took 64 s for 10,000
#: evaluations, bench/archive.py)
BACKFILL_BATCH = 500
#: pg_advisory_xact_lock key of appends ("scorelog" in ASCII)
PG_LOCK_KEY = 0x73636F72656C6F67

#: The kinds of version-1 entries and their documents' columns (:mod:`.coverage` has every version's).
KINDS = coverage.FIELDS[1]


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_document(
    kind: str, row: Mapping[Any, Any], evaluation_ids: Sequence[str] = (), version: int = 1
) -> dict[str, Any]:
    """The document of a record of ``kind`` in an entry of ``version`` from its row (a database row,
    the values inserted, or an exported line: JSON columns may come as text, datetimes as ISO
    strings). Version 2 reads ``user_name`` and ``algorithm_name`` from the row too."""
    return coverage.document(kind, row, evaluation_ids, version)


def entry_hash(
    seq: int, kind: str, record_id: str, record_sha256: str, blobs: Sequence[Mapping[str, Any]],
    previous_sha256: str, created: Any, version: int = 1, fields: Mapping[str, str] | None = None,
) -> str:  # fmt: skip
    """The sha256 of an entry: its fields' canonical JSON (``created`` as :func:`plain` writes it),
    with its ``version`` and its document's field digests (``fields``) from version 2 on (version 1
    entries hash as they always did)."""
    hashed: dict[str, Any] = {
        "seq": seq,
        "kind": kind,
        "record_id": record_id,
        "record_sha256": record_sha256,
        "blobs": [{"key": b["key"], "sha256": b["sha256"]} for b in blobs],
        "previous_sha256": previous_sha256,
        "created": plain(datetime.fromisoformat(created) if isinstance(created, str) else created),
    }
    if version >= 2:
        hashed["version"] = version
        hashed["fields"] = dict(fields or {})
    return sha256_hex(canonical_json(hashed))


_Item = tuple[str, str, Mapping[str, Any], list[dict[str, str]]]


def _append(
    session: Session, kind: str, record_id: str, document: Mapping[str, Any], blobs: list[dict[str, str]]
) -> None:
    _append_all(session, [(kind, record_id, document, blobs)])


def _append_all(session: Session, items: Sequence[_Item]) -> None:
    """Append ``(kind, record_id, document, blobs)`` entries, in order, after the last one."""
    conn = session.connection()
    if conn.dialect.name == "postgresql":  # held to COMMIT: the next append reads this one as its previous
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})
    last = conn.execute(
        sa.select(ScoreLogEntry.seq, ScoreLogEntry.entry_sha256).order_by(ScoreLogEntry.seq.desc()).limit(1)
    ).first()
    seq, previous = (last[0] + 1, last[1]) if last else (1, GENESIS)
    rows = []
    for kind, record_id, document, blobs in items:
        record_bytes, fields = hashed_document(document)
        record_sha256 = sha256_hex(record_bytes)
        created = utcnow()
        entry = entry_hash(seq, kind, record_id, record_sha256, blobs, previous, created, CURRENT_VERSION, fields)
        rows.append({"seq": seq, "kind": kind, "record_id": record_id, "record_sha256": record_sha256,
                     "blobs": blobs, "previous_sha256": previous, "created": created, "entry_sha256": entry,
                     "version": CURRENT_VERSION, "fields": fields})  # fmt: skip
        seq, previous = seq + 1, entry
    conn.execute(sa.insert(ScoreLogEntry), rows)


def _names(session: Session, values: Mapping[Any, Any]) -> dict[str, Any]:
    """``user_name`` and ``algorithm_name`` of a record's ``user_seq`` and ``algorithm_seq``."""
    algorithm_seq = values.get("algorithm_seq")
    return {
        "user_name": session.scalar(sa.select(User.name).where(User.seq == values["user_seq"])),
        "algorithm_name": session.scalar(sa.select(Algorithm.name).where(Algorithm.seq == algorithm_seq))
        if algorithm_seq is not None
        else None,
    }


def append_evaluation(session: Session, values: Mapping[str, Any], blobs: list[dict[str, str]]) -> None:
    """Log the evaluation inserted with ``values`` (in its transaction); ``blobs``: :func:`evaluation_blobs`."""
    row = {**values, **_names(session, values)}
    _append(session, "evaluation", values["id"], record_document("evaluation", row, version=CURRENT_VERSION), blobs)


def append_ladder_match(session: Session, match_id: str) -> None:
    """Log ladder match ``match_id`` and its games (in the transaction that stores them)."""
    documents = coverage.match_documents(session.connection(), [match_id])
    _append(session, "ladder_match", match_id, documents[match_id], [])


def append_ladder_ratings(session: Session, ladder: str) -> None:
    """Log ``ladder``'s ratings as they are now (in the transaction that rated it again): the latest
    such entry of a ladder is the one its table is held to."""
    documents = coverage.ratings_documents(session.connection(), [ladder])
    if ladder in documents:
        _append(session, "ladder_ratings", ladder, documents[ladder], [])


def append_run(session: Session, run_id: str) -> None:
    """Log committed, scored benchmark run ``run_id`` (in the transaction that stored the score),
    once: a run committed twice, or scored again after its commit, keeps its first entry."""
    run = session.execute(sa.select(BenchmarkRun.__table__).where(BenchmarkRun.id == run_id)).first()
    if run is None or run.status != "committed" or run.score is None:
        return
    if session.connection().dialect.name == "postgresql":  # the check and the append under one lock
        session.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})
    if _logged(session, "benchmark_run", run_id):
        return
    evaluations = run_evaluations(session.connection(), run.seq)
    row = {**run._mapping, **_names(session, run._mapping)}
    document = record_document("benchmark_run", row, evaluations, CURRENT_VERSION)
    _append(session, "benchmark_run", run_id, document, [])


def _logged(session: Session, kind: str, record_id: str) -> bool:
    query = sa.select(ScoreLogEntry.seq).where(
        ScoreLogEntry.kind == kind, ScoreLogEntry.record_id == record_id
    )
    return session.scalar(query.limit(1)) is not None


def unlogged(conn: sa.Connection) -> list[tuple[str, str]]:
    """``(kind, id)`` of the evaluations, committed and scored runs, ladder matches and rated ladders
    on the board with no log entry."""
    out = []
    for kind, model, scored in (
        ("evaluation", Evaluation, sa.true()),
        (
            "benchmark_run",
            BenchmarkRun,
            sa.and_(BenchmarkRun.status == "committed", BenchmarkRun.score.is_not(None)),
        ),
    ):
        logged = sa.select(ScoreLogEntry.record_id).where(ScoreLogEntry.kind == kind)
        query = sa.select(model.id).where(scored, model.id.not_in(logged)).order_by(model.seq)
        out += [(kind, record_id) for record_id in conn.scalars(query)]
    logged = sa.select(ScoreLogEntry.record_id).where(ScoreLogEntry.kind == "ladder_match")
    query = sa.select(LadderMatch.id).where(LadderMatch.id.not_in(logged)).order_by(LadderMatch.seq)
    out += [("ladder_match", record_id) for record_id in conn.scalars(query)]
    logged = sa.select(ScoreLogEntry.record_id).where(ScoreLogEntry.kind == "ladder_ratings")
    query = sa.select(LadderRating.ladder).where(LadderRating.ladder.not_in(logged)).distinct()
    out += [("ladder_ratings", ladder) for ladder in sorted(conn.scalars(query))]
    return out


def evaluation_blob_keys(batch_key: str | None, videos: Iterable[Mapping[str, Any]]) -> list[str]:
    """The blobs an evaluation reads: its episode batch, then each video and its metadata."""
    keys = [batch_key] if batch_key else []
    for video in videos:
        keys += [video["key"], video["metadata_key"]]
    return keys


def evaluation_blobs(
    store: BlobStore, batch_key: str | None, batch_sha256: str | None, videos: Iterable[Mapping[str, Any]]
) -> list[dict[str, str]]:
    """``[{key, sha256}]`` of an evaluation's blobs. The hashes ingest recorded (the batch's when it
    arrived, each video's and its metadata's when the archive was unpacked) are taken as they are;
    only a blob stored without one (before palaestra recorded them) is read and hashed."""
    videos = list(videos)
    known: dict[str, str | None] = {batch_key: batch_sha256} if batch_key else {}
    for video in videos:
        known[video["key"]] = video.get("sha256")
        known[video["metadata_key"]] = video.get("metadata_sha256")
    return [
        {"key": key, "sha256": known.get(key) or hash_blob(store, key)}
        for key in evaluation_blob_keys(batch_key, videos)
    ]


def hash_blob(store: BlobStore, key: str) -> str:
    """The sha256 of a stored blob, read in chunks."""
    h = hashlib.sha256()
    with store.open(key) as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            h.update(chunk)
    return h.hexdigest()


def backfill(db: Database, store: BlobStore) -> int:
    """Append entries for the evaluations, committed and scored runs, ladder matches and rated
    ladders that have none (stored before the log existed, or before it covered them), oldest
    first; returns how many."""
    logged = sa.select(ScoreLogEntry.record_id).where(ScoreLogEntry.kind == sa.bindparam("kind"))
    table: Any = Evaluation.__table__
    with db.connect() as conn:
        done = set(conn.scalars(logged, {"kind": "evaluation"}))
        ids = [i for i in conn.scalars(sa.select(table.c.id).order_by(table.c.seq)) if i not in done]
        found = coverage.evaluation_rows(conn, ids)
        rows = [found[i] for i in ids]
        runs_done = set(conn.scalars(logged, {"kind": "benchmark_run"}))
        run_ids = [
            r.id
            for r in conn.execute(
                sa.select(BenchmarkRun.id)
                .where(BenchmarkRun.status == "committed")
                .order_by(BenchmarkRun.seq)
            )
            if r.id not in runs_done
        ]
    for start in range(0, len(rows), BACKFILL_BATCH):
        chunk = rows[start : start + BACKFILL_BATCH]
        hashed = [
            evaluation_blobs(store, r["episode_batch_key"], r["episode_batch_sha256"], r["videos"] or [])
            for r in chunk
        ]
        items = [
            ("evaluation", row["id"], record_document("evaluation", row, version=CURRENT_VERSION), blobs)
            for row, blobs in zip(chunk, hashed, strict=True)
        ]
        with db.write() as session:  # everything prepared first: the writers' lock is held for the inserts
            _append_all(session, items)
    for run_id in run_ids:
        with db.write() as session:
            append_run(session, run_id)
    with db.connect() as conn:
        ladder_records = [
            record for record in unlogged(conn) if record[0] in ("ladder_match", "ladder_ratings")
        ]
    for kind, record_id in ladder_records:
        with db.write() as session:
            (append_ladder_match if kind == "ladder_match" else append_ladder_ratings)(session, record_id)
    return len(rows) + len(run_ids) + len(ladder_records)
