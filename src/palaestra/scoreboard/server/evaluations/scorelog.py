"""The tamper-evident log of scores: a hash chain with one entry per scored evaluation and benchmark run.

- :func:`record_document`: a record's canonical document (a fixed list of its columns, so that a
  column added later does not change old hashes); :func:`canonical_json` its bytes.
- Each entry holds ``record_sha256`` (the document's sha256), ``blobs`` (the key and sha256 of each
  blob the record's pages and downloads read) and ``previous_sha256`` (the entry before it; 64 zeros
  for the first); ``entry_sha256`` hashes all of that with the entry's ``seq`` and ``created``.
- :func:`append_evaluation` runs inside the transaction that inserts the evaluation, and
  :func:`append_run` inside the one that stores a committed run's score: a record is in the log
  exactly when it is on the board. Appends are serialised (SQLite's writers already are; on
  PostgreSQL a transaction-scoped advisory lock), so the chain never forks.
- :func:`backfill`: entries for records scored before the log existed (``palaestra server log-backfill``).

A changed row or blob shows as a document or blob whose hash no longer matches its entry; a changed
entry as a broken link (:mod:`..archive.verify` checks all three).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.storage import BlobStore
from palaestra.scoreboard.server.tables.base import utcnow
from palaestra.scoreboard.server.tables.scores import BenchmarkRun, Evaluation
from palaestra.scoreboard.server.tables.service import ScoreLogEntry

__all__ = [
    "GENESIS",
    "KINDS",
    "append_evaluation",
    "append_run",
    "backfill",
    "canonical_json",
    "entry_hash",
    "evaluation_blobs",
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

#: The columns each kind's document holds (version 1 of the log). Benchmark runs leave out what the
#: API lets an owner change after the score (tags, algorithm); their document names their evaluations.
EVALUATION_FIELDS = (
    "id", "user_seq", "env_id", "env_listed", "algorithm_seq", "benchmark_run_seq", "writeup",
    "gym_version", "training_episode_batch", "training_video", "episode_batch_key",
    "episode_batch_sha256", "trials", "reward_threshold", "solved", "episode_t_value",
    "timestep_t_value", "mean", "error", "number_episodes", "number_timesteps", "seconds_to_solve",
    "seconds_in_total", "episodes_mean", "evaluation_episodes", "evaluation_mean", "ranking_mean",
    "graph_stats", "benchmark_score", "videos", "created",
)  # fmt: skip
RUN_FIELDS = ("id", "user_seq", "benchmark_id", "status", "score", "score_value", "score_evaluations", "created",
              "committed")  # fmt: skip
KINDS = {"evaluation": EVALUATION_FIELDS, "benchmark_run": RUN_FIELDS}
_JSON_FIELDS = {"graph_stats", "benchmark_score", "videos", "score"}


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def plain(value: Any) -> Any:
    """``value`` as the one JSON form it has everywhere: a datetime as UTC ISO 8601, a float with an
    integral value as an int (PostgreSQL's JSONB and SQLite's REAL disagree on ``195`` vs ``195.0``),
    non-finite floats as None."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc).isoformat()
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in sorted(value.items())}  # sorted: one order on every backend
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def canonical_json(doc: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the bytes that are hashed."""
    return json.dumps(plain(doc), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def record_document(kind: str, row: Mapping[Any, Any], evaluation_ids: Sequence[str] = ()) -> dict[str, Any]:
    """The document of a record of ``kind`` from its row (a database row, the values inserted, or an
    exported line: JSON columns may come as text, datetimes as ISO strings)."""
    doc: dict[str, Any] = {"kind": kind}
    for name in KINDS[kind]:
        value = row.get(name)
        if name in _JSON_FIELDS and isinstance(value, str):
            value = json.loads(value)  # a RawJSON value, serialised before the write transaction
        if name in ("created", "committed") and isinstance(value, str):
            value = datetime.fromisoformat(value)
        doc[name] = value
    if kind == "benchmark_run":
        doc["evaluations"] = list(evaluation_ids)
    out: dict[str, Any] = plain(doc)
    return out


def entry_hash(
    seq: int, kind: str, record_id: str, record_sha256: str, blobs: Sequence[Mapping[str, Any]],
    previous_sha256: str, created: Any,
) -> str:  # fmt: skip
    """The sha256 of an entry: its fields' canonical JSON (``created`` as :func:`plain` writes it)."""
    return sha256_hex(
        canonical_json(
            {
                "seq": seq,
                "kind": kind,
                "record_id": record_id,
                "record_sha256": record_sha256,
                "blobs": [{"key": b["key"], "sha256": b["sha256"]} for b in blobs],
                "previous_sha256": previous_sha256,
                "created": plain(datetime.fromisoformat(created) if isinstance(created, str) else created),
            }
        )
    )


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
        record_sha256 = sha256_hex(canonical_json(document))
        created = utcnow()
        entry = entry_hash(seq, kind, record_id, record_sha256, blobs, previous, created)
        rows.append({"seq": seq, "kind": kind, "record_id": record_id, "record_sha256": record_sha256,
                     "blobs": blobs, "previous_sha256": previous, "created": created, "entry_sha256": entry})  # fmt: skip
        seq, previous = seq + 1, entry
    conn.execute(sa.insert(ScoreLogEntry), rows)


def append_evaluation(session: Session, values: Mapping[str, Any], blobs: list[dict[str, str]]) -> None:
    """Log the evaluation inserted with ``values`` (in its transaction); ``blobs``: :func:`evaluation_blobs`."""
    _append(session, "evaluation", values["id"], record_document("evaluation", values), blobs)


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
    _append(session, "benchmark_run", run_id, record_document("benchmark_run", run._mapping, evaluations), [])


def _logged(session: Session, kind: str, record_id: str) -> bool:
    query = sa.select(ScoreLogEntry.seq).where(
        ScoreLogEntry.kind == kind, ScoreLogEntry.record_id == record_id
    )
    return session.scalar(query.limit(1)) is not None


def run_evaluations(conn: sa.Connection, run_seq: int) -> list[str]:
    """The ids of a run's evaluations, in upload order (what its document names)."""
    query = sa.select(Evaluation.id).where(Evaluation.benchmark_run_seq == run_seq).order_by(Evaluation.seq)
    return list(conn.scalars(query))


def current_documents(conn: sa.Connection, entries: Iterable[Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The documents of the records of ``entries`` as their rows are now, by ``(kind, record_id)``
    (a record that is gone has none)."""
    wanted: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for entry in entries:
        wanted[entry.kind].add(entry.record_id)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    evaluations: Any = Evaluation.__table__
    if wanted["evaluation"]:
        query = sa.select(evaluations).where(evaluations.c.id.in_(sorted(wanted["evaluation"])))
        for row in conn.execute(query):
            out["evaluation", row.id] = record_document("evaluation", row._mapping)
    if wanted["benchmark_run"]:
        runs: Any = BenchmarkRun.__table__
        for row in conn.execute(sa.select(runs).where(runs.c.id.in_(sorted(wanted["benchmark_run"])))):
            out["benchmark_run", row.id] = record_document(
                "benchmark_run", row._mapping, run_evaluations(conn, row.seq)
            )
    return out


def unlogged(conn: sa.Connection) -> list[tuple[str, str]]:
    """``(kind, id)`` of the evaluations and committed, scored runs on the board with no log entry."""
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
    """Append entries for the evaluations and committed, scored runs that have none (scored before the
    log existed), oldest first; returns how many."""
    logged = sa.select(ScoreLogEntry.record_id).where(ScoreLogEntry.kind == sa.bindparam("kind"))
    table: Any = Evaluation.__table__
    with db.connect() as conn:
        done = set(conn.scalars(logged, {"kind": "evaluation"}))
        rows = [r for r in conn.execute(sa.select(table).order_by(table.c.seq)) if r.id not in done]
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
            evaluation_blobs(store, r.episode_batch_key, r.episode_batch_sha256, r.videos or [])
            for r in chunk
        ]
        items = [
            ("evaluation", row.id, record_document("evaluation", row._mapping), blobs)
            for row, blobs in zip(chunk, hashed, strict=True)
        ]
        with db.write() as session:  # everything prepared first: the writers' lock is held for the inserts
            _append_all(session, items)
    for run_id in run_ids:
        with db.write() as session:
            append_run(session, run_id)
    return len(rows) + len(run_ids)
