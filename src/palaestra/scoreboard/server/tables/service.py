"""The service's own tables, beside the scores' (:mod:`.scores`):

- ``files``: uploads, pending until their bytes arrived and were validated;
- ``idempotency_keys``: the stored answers of creating POSTs sent with an ``Idempotency-Key``;
- ``rate_counters``: hits per rate-limited subject and window (:mod:`..accounts.rate_limits`);
- ``server_settings``: the upload-signing secret, shared by every server process;
- ``score_log``: the hash chain of scored evaluations and benchmark runs (:mod:`..evaluations.scorelog`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, Session, mapped_column

from palaestra.scoreboard.server.tables.base import Base, utcnow

__all__ = [
    "FileRecord",
    "IdempotencyKey",
    "RateCounter",
    "ScoreLogEntry",
    "ServerSetting",
    "derived_generation",
    "next_derived_generation",
]


class ServerSetting(Base):
    __tablename__ = "server_settings"

    key: Mapped[str] = mapped_column(sa.String(100), primary_key=True)
    value: Mapped[str] = mapped_column(sa.Text)


#: How many times ``palaestra server rescore`` has derived the stored evaluations again: what the
#: servers' kept page values (web/page_cache.py) are keyed by, besides the rows they were computed from
DERIVED_GENERATION = "derived_generation"


def derived_generation(session: Session) -> int:
    """The generation of the derived values (0 until the first rescore)."""
    row = session.get(ServerSetting, DERIVED_GENERATION)
    return int(row.value) if row is not None else 0


def next_derived_generation(session: Session) -> int:
    """Start a new generation (in the caller's transaction): every server's kept page values are then
    computed again at their next request."""
    generation = derived_generation(session) + 1
    row = session.get(ServerSetting, DERIVED_GENERATION)
    if row is None:
        session.add(ServerSetting(key=DERIVED_GENERATION, value=str(generation)))
    else:
        row.value = str(generation)
    return generation


class FileRecord(Base):
    __tablename__ = "files"
    #: gc finds expired pending files with the first; the rate limits count a user's recent (and
    #: pending) files with the second (:mod:`..accounts.rate_limits`)
    __table_args__ = (
        sa.Index("ix_files_status_expires", "status", "expires"),
        sa.Index("ix_files_user_created", "user_seq", "created"),
    )

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # file_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), index=True)
    purpose: Mapped[str] = mapped_column(sa.String(20))
    content_type: Mapped[str] = mapped_column(sa.String(100))
    #: pending -> uploaded
    status: Mapped[str] = mapped_column(sa.String(20), default="pending")
    #: where the bytes are in the blob store (set when they arrived, for the file store)
    storage_key: Mapped[str | None] = mapped_column(sa.String(300), default=None)
    size: Mapped[int | None] = mapped_column(sa.BigInteger, default=None)
    max_bytes: Mapped[int] = mapped_column(sa.BigInteger)
    expires: Mapped[datetime] = mapped_column()
    created: Mapped[datetime] = mapped_column(default=utcnow)
    uploaded: Mapped[datetime | None] = mapped_column(default=None)
    #: what ingest found (for videos: the list of unpacked videos with their blob keys)
    ingest: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    #: the evaluation that consumed this file (a file backs at most one evaluation)
    evaluation_id: Mapped[str | None] = mapped_column(sa.String(40), index=True, default=None)
    #: sha256 hex of the stored episode batch (checked when it is read; NULL: not recorded)
    sha256: Mapped[str | None] = mapped_column(sa.String(64), default=None)


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"
    __table_args__ = (sa.Index("ix_idempotency_keys_created", "created"),)

    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), primary_key=True)
    key: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    #: "POST /v1/evaluations" and a hash of the body, to refuse a key reused for another request
    request: Mapped[str] = mapped_column(sa.String(200))
    request_hash: Mapped[str] = mapped_column(sa.String(64))
    status_code: Mapped[int] = mapped_column()
    response: Mapped[dict[str, Any]] = mapped_column()
    created: Mapped[datetime] = mapped_column(default=utcnow)


class RateCounter(Base):
    """Hits of one rate-limited subject (``bucket``, e.g. ``invalid_key:203.0.113.7``) in one fixed
    window starting at ``window_start`` (Unix seconds): shared by every process on the database."""

    __tablename__ = "rate_counters"

    bucket: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    window_start: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    hits: Mapped[int] = mapped_column(sa.Integer)


class ScoreLogEntry(Base):
    """One link of the hash chain of scores (:mod:`palaestra.scoreboard.server.evaluations.scorelog`):
    appended in the transaction that scores the record, never changed."""

    __tablename__ = "score_log"
    __table_args__ = (sa.Index("ix_score_log_record", "kind", "record_id"),)

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    #: "evaluation", "benchmark_run", "ladder_match" or "ladder_ratings" (version 2)
    kind: Mapped[str] = mapped_column(sa.String(20))
    #: the record's id (a ladder's name for "ladder_ratings")
    record_id: Mapped[str] = mapped_column(sa.String(100))
    #: sha256 hex of the record's canonical JSON document when it was scored
    record_sha256: Mapped[str] = mapped_column(sa.String(64))
    #: [{"key": blob key, "sha256": hex}, ...]: the record's blobs when it was scored
    blobs: Mapped[list[Any]] = mapped_column(default=list)
    previous_sha256: Mapped[str] = mapped_column(sa.String(64))
    entry_sha256: Mapped[str] = mapped_column(sa.String(64), unique=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    #: which documents the entry hashes (1: before 0013_score_log_coverage; 2: curves, provenance,
    #: conditions, names, ladder matches and ratings too)
    version: Mapped[int] = mapped_column(sa.Integer, default=1, server_default="1")
    #: version 2: {field: sha256} of the record's document (for verify to name what was changed)
    fields: Mapped[dict[str, Any] | None] = mapped_column(default=None)

