"""``/v1/files``: a file is created ``pending`` with a signed, expiring, single-use upload form
(``post_url`` + ``post_fields``) and turns ``uploaded`` once its bytes arrived and passed ingest
(:mod:`.uploads`, or an S3 presigned POST checked when its evaluation is created)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, cast

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol import NO_PARAM
from palaestra.scoreboard.server.accounts import rate_limits
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.api.common import answer, base_url, not_found, page
from palaestra.scoreboard.server.api.deps import CurrentUser, ListQuery, State, json_body
from palaestra.scoreboard.server.api.idempotency import Idempotency
from palaestra.scoreboard.server.core.deps import run_blocking
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import FileStore
from palaestra.scoreboard.server.tables.base import from_row, snapshot
from palaestra.scoreboard.server.tables.service import FileRecord

__all__ = ["file_object", "load_file", "load_files", "own_file", "router"]

router = APIRouter(prefix="/files", tags=["files"])

#: The key prefix of bytes uploaded straight to the store (S3 presigned POSTs).
UPLOADED_PREFIX = "uploads/"

_FILES = FileRecord.__table__
_FILE_BY_ID = sa.select(_FILES).where(_FILES.c.id == sa.bindparam("file_id"))
_FILES_BY_ID = sa.select(_FILES).where(_FILES.c.id.in_(sa.bindparam("file_ids", expanding=True)))
_INSERT_FILE = sa.insert(FileRecord)


def file_object(
    state: ServerState, base: str, f: FileRecord, with_upload: bool = True
) -> protocol.FileObject:
    """A file as the API shows it; a pending one ``with_upload`` carries its upload form."""
    post_url: str | None = None
    post_fields: dict[str, str] = {}
    if with_upload and f.status == "pending":
        presigned = None
        if not isinstance(state.store, FileStore) and f.storage_key:
            seconds_left = max(1, int(f.expires.timestamp() - state.clock.time()))
            presigned = state.store.presigned_post(f.storage_key, f.max_bytes, seconds_left, f.content_type)
        if presigned is not None:
            post_url, post_fields = presigned
        else:
            expires = int(f.expires.timestamp())
            post_url = f"{base}{protocol.API_PREFIX}/uploads/{f.id}"
            post_fields = {
                "expires": str(expires),
                "signature": state.signing.sign(f.id, expires, f.max_bytes),
            }
    return protocol.FileObject(
        id=f.id,
        purpose=cast(protocol.FilePurpose, f.purpose),  # checked by the model, as every answer is
        content_type=f.content_type,
        status=cast(protocol.FileStatus, f.status),
        size=f.size,
        expires_at=f.expires,
        created=f.created,
        post_url=post_url,
        post_fields=post_fields,
    )


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


@router.post("", status_code=201, response_model=protocol.FileObject)
async def create_file(
    body: Annotated[protocol.FileCreate, json_body(protocol.FileCreate)],
    request: Request,
    principal: CurrentUser,
    state: State,
) -> Response:
    """Create a file and a signed, expiring, single-use upload form (``post_url`` + ``post_fields``)."""
    return await run_blocking(state, _create_file, body, request, principal, state)


def _create_file(
    body: protocol.FileCreate, request: Request, principal: Principal, state: ServerState
) -> Response:
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
        # evaluation never references it (api.uploads.ingest_remote stores a copy of its own)
        "storage_key": None if isinstance(state.store, FileStore) else f"{UPLOADED_PREFIX}{file_id}",
        "created": now,
    }
    # Built before the write: on SQLite, writers queue for one lock, so the less happens while it is
    # held, the more uploads a second (bench/server_load.py).
    created = file_object(state, base_url(state, request), snapshot(FileRecord, values))
    idempotency = Idempotency.of(request, principal, body)
    if idempotency.key is None:
        state.db.write_one(_INSERT_FILE, values)  # one statement: no transaction needed
        return answer(created, 201)

    def create(session: Session) -> tuple[int, protocol.FileObject]:
        session.connection().execute(_INSERT_FILE, values)  # Core: the ORM flush costs more than the rest
        return 201, created

    return idempotency.answer(state.db, create)


@router.get("/{file_id}", response_model=protocol.FileObject)
def get_file(file_id: str, request: Request, principal: CurrentUser, state: State) -> Response:
    """One of your files."""
    with state.db.connect() as conn:
        record = own_file(load_file(conn, file_id), principal, file_id)
    return answer(file_object(state, base_url(state, request), record))


@router.get("", response_model=protocol.ListPage[protocol.FileObject])
def list_files(request: Request, principal: CurrentUser, state: State, asked: ListQuery) -> Response:
    """Your files, newest first."""
    base = base_url(state, request)
    with state.db.read() as session:
        query = sa.select(FileRecord).where(FileRecord.user_seq == principal.user_seq)
        body = page(
            session,
            FileRecord,
            query,
            asked,
            f"{protocol.API_PREFIX}/files",
            lambda r: file_object(state, base, r[0], with_upload=False),
            protocol.FileObject,
        )
    return answer(body)
