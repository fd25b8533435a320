"""Files, the uploads an evaluation is made of: a file is created ``pending`` with a signed, expiring,
single-use upload form (``post_url`` + ``post_fields``) and turns ``uploaded`` once its bytes arrived
and passed ingest (:mod:`.uploads`, or an S3 presigned POST checked when its evaluation is created).

- :func:`create_file`: a new pending file (its owner's rate limits checked), answered once per
  ``Idempotency-Key``;
- :func:`load_file`, :func:`load_files`: files by id; :func:`own_file`: the caller's file, else 404.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import sqlalchemy as sa
from fastapi import Request, Response
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol import NO_PARAM
from palaestra.scoreboard.server.accounts import rate_limits
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.core.answers import Idempotency, answer
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import FileStore
from palaestra.scoreboard.server.problems import not_found
from palaestra.scoreboard.server.tables.base import from_row, snapshot
from palaestra.scoreboard.server.tables.service import FileRecord

__all__ = ["UPLOADED_PREFIX", "create_file", "load_file", "load_files", "own_file"]

#: The key prefix of bytes uploaded straight to the store (S3 presigned POSTs).
UPLOADED_PREFIX = "uploads/"

_FILES = FileRecord.__table__

_FILE_BY_ID = sa.select(_FILES).where(_FILES.c.id == sa.bindparam("file_id"))

_FILES_BY_ID = sa.select(_FILES).where(_FILES.c.id.in_(sa.bindparam("file_ids", expanding=True)))

_INSERT_FILE = sa.insert(FileRecord)


def load_file(conn: sa.Connection, file_id: str) -> FileRecord | None:
    row = conn.execute(_FILE_BY_ID, {"file_id": file_id}).first()
    return None if row is None else from_row(FileRecord, row)


def load_files(conn: sa.Connection, file_ids: list[str]) -> dict[str, FileRecord]:
    """The files among ``file_ids`` that exist, by id (one query)."""
    rows = conn.execute(_FILES_BY_ID, {"file_ids": file_ids})
    return {row.id: from_row(FileRecord, row) for row in rows}


def own_file(
    record: FileRecord | None, principal: Principal, file_id: str, param: str = NO_PARAM
) -> FileRecord:
    """``record`` (file ``file_id``, looked up), or 404 unless it exists and is the caller's."""
    if record is None or record.user_seq != principal.user_seq:
        raise not_found("file", file_id, param)
    return record


def create_file(
    state: ServerState,
    request: Request,
    principal: Principal,
    body: protocol.FileCreate,
    render: Callable[[FileRecord], protocol.FileObject],
) -> Response:
    """A new pending file of ``principal`` (its rate limits checked first), answered as ``render``
    shows it (with its upload form), once per ``Idempotency-Key`` (the request's header)."""
    rate_limits.check_new_file(state, principal.user_seq)
    file_id = new_id("file")
    now = state.clock.now()
    values = {
        "id": file_id,
        "user_seq": principal.user_seq,
        "purpose": body.purpose,
        "content_type": body.content_type or protocol.default_content_type(body.purpose),
        "status": "pending",
        "max_bytes": state.config.max_upload_bytes(body.purpose),
        "expires": now + timedelta(seconds=state.config.upload_ttl_s),
        # where a presigned POST puts the bytes: the client's to write until the form expires, so an
        # evaluation never references it (uploads.ingest_remote stores a copy of its own)
        "storage_key": None if isinstance(state.store, FileStore) else f"{UPLOADED_PREFIX}{file_id}",
        "created": now,
    }
    # Built before the write: on SQLite, writers queue for one lock, so the less happens while it is
    # held, the more uploads a second (bench/server_load.py).
    created = render(snapshot(FileRecord, values))
    idempotency = Idempotency.of(request, principal, body)
    if idempotency.key is None:
        state.db.write_one(_INSERT_FILE, values)  # one statement: no transaction needed
        return answer(created, 201)

    def create(session: Session) -> tuple[int, protocol.FileObject]:
        session.connection().execute(_INSERT_FILE, values)  # Core: the ORM flush costs more than the rest
        return 201, created

    return idempotency.answer(state.db, create)
