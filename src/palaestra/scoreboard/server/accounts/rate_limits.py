"""Rate limits kept in the database, so that they hold across every process and server that shares it
(``--workers N``, several hosts), on SQLite and PostgreSQL alike, with no other service.

- :func:`check_new_file`: the files a user may create per hour (``uploads_per_hour``, counted from
  the ``files`` table itself) and may have waiting for their upload (``max_pending_files``);
- :func:`note_live_chunk`: the chunks of live runs a user may send per minute
  (``live_chunks_per_minute``, counted in ``rate_counters``; the live runs it may start per hour are
  counted from their own table: :func:`palaestra.scoreboard.server.live.runs.check_new_live_run`);
- :func:`note_invalid_key`: requests with an invalid API key per client address and
  :data:`INVALID_KEY_WINDOW_S` (``invalid_keys_per_window``), counted in ``rate_counters``; a valid
  key costs nothing here;
- failed web sign-ins (per address and per address and user name) are
  :mod:`palaestra.scoreboard.server.accounts.sign_in_limits`, counted with :func:`count_hit`.

Above a limit the answer is 429 with ``Retry-After``: the seconds until the request would pass.
The defaults (:mod:`..core.config`) are far above what a user uploading by hand or a benchmark run sends.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from palaestra.scoreboard.server.core.clock import SYSTEM_CLOCK, Clock
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.service import FileRecord, RateCounter

__all__ = [
    "INVALID_KEY_WINDOW_S",
    "STALE_COUNTER_S",
    "UPLOAD_WINDOW_S",
    "check_new_file",
    "count_hit",
    "note_invalid_key",
    "note_live_chunk",
]

#: The window of ``uploads_per_hour``.
UPLOAD_WINDOW_S = 3600
#: The window of ``invalid_keys_per_window``.
INVALID_KEY_WINDOW_S = 600

#: Counters whose window started longer ago than this have ended, whatever their bucket (every
#: window here is an hour at most): gc removes them.
STALE_COUNTER_S = 2 * 3600

_FILES = FileRecord.__table__
_COUNTERS: Any = RateCounter.__table__
_RECENT_FILES = sa.select(sa.func.count()).where(
    _FILES.c.user_seq == sa.bindparam("user_seq"), _FILES.c.created > sa.bindparam("since")
)
# The n-th oldest of them: once it is an hour old, the user is back under the limit.
_NTH_RECENT_FILE = (
    sa.select(_FILES.c.created)
    .where(_FILES.c.user_seq == sa.bindparam("user_seq"), _FILES.c.created > sa.bindparam("since"))
    .order_by(_FILES.c.created)
    .offset(sa.bindparam("n"))
    .limit(1)
)
# A pending file expires upload_ttl_s after it was created, so the ones that still count are among
# the recent ones: the same index (user_seq, created) finds them.
_PENDING = _FILES.c.status == "pending"
_PENDING_FILES = sa.select(sa.func.count(), sa.func.min(_FILES.c.expires)).where(
    _FILES.c.user_seq == sa.bindparam("user_seq"),
    _FILES.c.created > sa.bindparam("since"),
    _PENDING,
    _FILES.c.expires > sa.bindparam("now"),
)


def check_new_file(state: ServerState, user_seq: int) -> None:
    """429 if the user may not create a file now (blocking: call it where the handler blocks)."""
    config = state.config
    if config.uploads_per_hour <= 0 and config.max_pending_files <= 0:
        return
    now = state.clock.now()
    with state.db.connect() as conn:
        if config.uploads_per_hour > 0:
            since = now - timedelta(seconds=UPLOAD_WINDOW_S)
            params = {"user_seq": user_seq, "since": since}
            recent = int(conn.execute(_RECENT_FILES, params).scalar_one())
            if recent >= config.uploads_per_hour:
                nth = conn.execute(
                    _NTH_RECENT_FILE, {**params, "n": recent - config.uploads_per_hour}
                ).scalar()
                wait = (nth - since).total_seconds() if nth is not None else UPLOAD_WINDOW_S
                raise too_many(
                    f"Too many uploads: this server accepts {config.uploads_per_hour} files per user and "
                    f"hour, and you created {recent} in the last hour. Try again in {_shown(wait)}, or "
                    "ask the server's operator to raise PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR.",
                    wait,
                )
        if config.max_pending_files > 0:
            since = now - timedelta(seconds=max(config.upload_ttl_s, 0))
            pending, first_expiry = conn.execute(
                _PENDING_FILES, {"user_seq": user_seq, "since": since, "now": now}
            ).one()
            if pending >= config.max_pending_files:
                wait = (first_expiry - now).total_seconds() if first_expiry is not None else 60
                raise too_many(
                    f"Too many files waiting for their upload: you have {pending} files created and never "
                    f"uploaded (this server allows {config.max_pending_files}). Upload to them (POST each "
                    f"file's post_url) or wait until they expire (the first in {_shown(wait)}).",
                    wait,
                )


#: The window of ``live_chunks_per_minute``.
LIVE_CHUNK_WINDOW_S = 60


def note_live_chunk(state: ServerState, user_seq: int) -> None:
    """Count a chunk sent by the user; 429 once there were more than ``live_chunks_per_minute``."""
    limit = state.config.live_chunks_per_minute
    if limit <= 0:
        return
    hits, wait = count_hit(state.db, f"live_chunks:{user_seq}", LIVE_CHUNK_WINDOW_S, state.clock)
    if hits > limit:
        raise too_many(
            f"Too many live chunks: this server accepts {limit} chunks per user and minute. The follower "
            f"sends the same episodes again in {_shown(wait)} (nothing was stored); ask the server's "
            "operator to raise PALAESTRA_RATE_LIMIT_LIVE_CHUNKS_PER_MINUTE for faster runs.",
            wait,
        )


def note_invalid_key(state: ServerState, address: str) -> None:
    """Count a request with an invalid API key from ``address``; 429 once there were too many."""
    limit = state.config.invalid_keys_per_window
    if limit <= 0 or state.config.read_only:  # an archive writes no counter (and stores nothing to guard)
        return
    hits, wait = count_hit(state.db, f"invalid_key:{address}", INVALID_KEY_WINDOW_S, state.clock)
    if hits > limit:
        raise too_many(
            f"Too many requests with an invalid API key from {address}: this server allows {limit} per "
            f"{INVALID_KEY_WINDOW_S // 60} minutes. Check the key (`palaestra login`) and try again in "
            f"{_shown(wait)}.",
            wait,
        )


def count_hit(
    db: Database, bucket: str, window_s: int, clock: Clock = SYSTEM_CLOCK, *, hits: int = 1, wait: bool = True
) -> tuple[int, float]:
    """Add ``hits`` to ``bucket`` in the current fixed window; ``(hits in the window so far, seconds
    until the window ends)``. The bucket's windows that ended are deleted on the way (through the
    primary key: the buckets' windows differ in length, so only the bucket knows which ended); gc
    removes the counters of buckets that never came back (:data:`STALE_COUNTER_S`). ``wait=False``:
    :class:`~..core.database.WriterBusy` at once, nothing counted, if another writer holds SQLite."""
    now = clock.time()
    start = int(now // window_s * window_s)
    upsert = _counter_upsert(db.engine.dialect.name)
    with db.write(wait=wait) as session:
        if db.engine.dialect.name == "postgresql":
            # a hit lost to a crash of the database costs nothing: no waiting for the WAL's fsync
            # (a hit took 5.8 ms, then 1.2, at load 10), which every anonymous read would otherwise do
            session.execute(_NO_SYNC_COMMIT)
        total = int(session.execute(upsert, {"bucket": bucket, "window_start": start, "hits": hits}).scalar_one())
        if total == hits:  # a new window: the bucket's earlier ones have ended
            session.execute(
                sa.delete(_COUNTERS).where(_COUNTERS.c.bucket == bucket, _COUNTERS.c.window_start < start)
            )
    return total, start + window_s - now


def too_many(detail: str, wait: float) -> Problem:
    """The 429 problem with ``Retry-After`` (whole seconds, at least 1)."""
    return Problem(429, detail, headers={"Retry-After": str(max(1, math.ceil(wait)))})


_NO_SYNC_COMMIT = sa.text("SET LOCAL synchronous_commit = off")
_UPSERTS: dict[str, Any] = {}


def _counter_upsert(dialect: str) -> Any:
    """``INSERT ... ON CONFLICT DO UPDATE SET hits = hits + :hits RETURNING hits`` (one statement, atomic
    in SQLite and PostgreSQL, so concurrent processes never lose a hit)."""
    if dialect not in _UPSERTS:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
        stmt = insert(_COUNTERS).values(
            bucket=sa.bindparam("bucket"), window_start=sa.bindparam("window_start"), hits=sa.bindparam("hits")
        )
        _UPSERTS[dialect] = stmt.on_conflict_do_update(
            index_elements=[_COUNTERS.c.bucket, _COUNTERS.c.window_start],
            set_={"hits": _COUNTERS.c.hits + stmt.excluded.hits},
        ).returning(_COUNTERS.c.hits)
    return _UPSERTS[dialect]


def _shown(seconds: float) -> str:
    """``"42 s"`` or ``"17 min"``."""
    seconds = max(1, math.ceil(seconds))
    return f"{seconds} s" if seconds < 120 else f"{math.ceil(seconds / 60)} min"
