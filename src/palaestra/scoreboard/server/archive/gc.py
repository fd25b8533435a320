"""Cleaning up what no evaluation needs: ``palaestra server gc`` and the server's periodic clean-up.

:func:`collect` removes, and reports (counts and bytes):

- expired pending files: a file never uploaded whose upload URL expired more than the grace period
  ago (its URL can no longer be used; nothing references it);
- expired idempotency keys: stored answers older than ``idempotency_ttl_s``;
- ended rate-limit counters (:data:`..accounts.rate_limits.STALE_COUNTER_S`) of addresses and names that did
  not come back (a bucket's own ended windows go with its next hit);
- unused uploaded files: a file whose bytes arrived more than ``unused_file_ttl_s`` ago (48 hours by
  default) and that no evaluation uses (clients create the evaluation seconds after the upload); its
  blobs go with it, as orphans, in the same run;
- orphaned blobs: blobs no database row references (a server killed between writing an upload's
  bytes and committing its row; S3 uploads already copied, or posted again after their evaluation),
  older than the grace period, so that an upload in flight is never touched;
- temporary files of writes that failed or were killed, older than the grace period.

What an evaluation references (its episode batch, its videos) and what an uploaded file references
is read from the database *after* the store is listed, so a row committed during the run still
protects its blobs. ``dry_run`` counts without removing anything.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from palaestra.scoreboard.server.accounts.rate_limits import STALE_COUNTER_S
from palaestra.scoreboard.server.core.clock import SYSTEM_CLOCK, Clock
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.storage import BlobStore
from palaestra.scoreboard.server.tables.agents import AgentJob
from palaestra.scoreboard.server.tables.scores import Evaluation
from palaestra.scoreboard.server.tables.service import FileRecord, IdempotencyKey, RateCounter

__all__ = ["GcReport", "PeriodicGc", "collect", "referenced_keys"]

logger = logging.getLogger("palaestra.scoreboard.gc")

_FILES = FileRecord.__table__
_KEYS = IdempotencyKey.__table__


@dataclass
class GcReport:
    """What a clean-up removed (or, with ``dry_run``, would remove)."""

    dry_run: bool = False
    expired_pending_files: int = 0
    expired_idempotency_keys: int = 0
    unused_files: int = 0
    ended_rate_counters: int = 0
    orphaned_blobs: int = 0
    orphaned_bytes: int = 0
    temporary_files: int = 0
    temporary_bytes: int = 0
    #: the orphaned blobs' keys (for ``--json``; a log line shows only the counts)
    orphaned_keys: list[str] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        return (
            f"gc {verb} {self.orphaned_blobs} orphaned blobs ({self.orphaned_bytes} bytes), "
            f"{self.temporary_files} temporary files ({self.temporary_bytes} bytes), "
            f"{self.expired_pending_files} expired pending files, {self.unused_files} unused uploaded files and "
            f"{self.expired_idempotency_keys} expired idempotency keys"
        )


def collect(
    db: Database,
    store: BlobStore,
    *,
    grace_s: float,
    idempotency_ttl_s: float,
    unused_file_ttl_s: float = 0,
    dry_run: bool = False,
    clock: Clock = SYSTEM_CLOCK,
) -> GcReport:
    """Remove (or count, ``dry_run``) what nothing references; see the module's docstring."""
    report = GcReport(dry_run=dry_run)
    now = clock.now()
    expired_before = now - timedelta(seconds=grace_s)
    report.expired_pending_files = _expire(db, _FILES, _expired_pending(expired_before), dry_run)
    ttl_before = now - timedelta(seconds=idempotency_ttl_s)
    report.expired_idempotency_keys = _expire(db, _KEYS, IdempotencyKey.created < ttl_before, dry_run)
    ended = RateCounter.window_start < int(clock.time() - STALE_COUNTER_S)
    report.ended_rate_counters = _expire(db, RateCounter.__table__, ended, dry_run)
    if unused_file_ttl_s > 0:
        unused_before = now - timedelta(seconds=unused_file_ttl_s)
        report.unused_files = _expire(db, _FILES, _unused_uploaded(unused_before), dry_run)
    cutoff = clock.time() - grace_s
    blobs = [b for b in store.list_blobs() if b.modified < cutoff]  # listed before the rows are read
    referenced = referenced_keys(db)
    for blob in blobs:
        if blob.key not in referenced:
            report.orphaned_blobs += 1
            report.orphaned_bytes += blob.size
            report.orphaned_keys.append(blob.key)
            if not dry_run:
                store.delete(blob.key)
    for tmp in store.list_temporary():
        if tmp.modified < cutoff:
            report.temporary_files += 1
            report.temporary_bytes += tmp.size
            if not dry_run:
                store.delete_temporary(tmp.key)
    return report


def _expired_pending(before: Any) -> Any:
    return sa.and_(
        FileRecord.status == "pending", FileRecord.evaluation_id.is_(None), FileRecord.expires < before
    )


def _unused_uploaded(before: Any) -> Any:
    # an evaluation claims its files with ``evaluation_id IS NULL`` in its WHERE (api.evaluations):
    # a claim and this DELETE cannot both succeed
    return sa.and_(
        FileRecord.status == "uploaded", FileRecord.evaluation_id.is_(None), FileRecord.uploaded < before
    )


def _expire(db: Database, table: Any, condition: Any, dry_run: bool) -> int:
    """Delete the rows of ``table`` that ``condition`` selects (one statement); how many."""
    if dry_run:
        with db.connect() as conn:
            return int(conn.scalar(sa.select(sa.func.count()).select_from(table).where(condition)) or 0)
    return db.write_one(sa.delete(table).where(condition), {})


def referenced_keys(db: Database) -> set[str]:
    """Every blob key a row references: files (their bytes; an uploaded archive's videos),
    evaluations (their episode batch and videos) and agent jobs (their artifact)."""
    keys: set[str] = set()
    with db.connect() as conn:
        for key, ingest in conn.execute(sa.select(FileRecord.storage_key, FileRecord.ingest)):
            keys.update(_keys(key, (ingest or {}).get("videos", [])))
        for key, videos in conn.execute(sa.select(Evaluation.episode_batch_key, Evaluation.videos)):
            keys.update(_keys(key, videos or []))
        keys.update(conn.scalars(sa.select(AgentJob.artifact_key)))  # agents the board evaluates
    return keys


def _keys(key: str | None, videos: Iterable[dict[str, Any]]) -> Iterable[str]:
    if key:
        yield key
    for video in videos:
        yield from (k for k in (video.get("key"), video.get("metadata_key")) if k)


class PeriodicGc:
    """:func:`collect` every ``interval_s`` seconds in a background thread of the server (one line
    logged per run that removed something; a failed run is logged in one line and retried later)."""

    def __init__(
        self, db: Database, store: BlobStore, interval_s: float, grace_s: float, ttl_s: float, unused_ttl_s: float = 0
    ) -> None:
        self._args = (db, store)
        self._interval, self._grace, self._ttl, self._unused_ttl = interval_s, grace_s, ttl_s, unused_ttl_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="palaestra-gc", daemon=True)

    def start(self) -> PeriodicGc:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                report = collect(
                    *self._args, grace_s=self._grace, idempotency_ttl_s=self._ttl, unused_file_ttl_s=self._unused_ttl
                )
            except Exception as e:
                logger.warning(
                    "Periodic gc failed (%s: %s); it runs again in %d s", type(e).__name__, e, self._interval
                )
                continue
            if any((report.orphaned_blobs, report.temporary_files, report.expired_pending_files,
                    report.expired_idempotency_keys, report.unused_files)):  # fmt: skip
                logger.info("%s", report.summary())
