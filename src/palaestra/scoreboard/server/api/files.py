"""``/v1/files``: a file is created ``pending`` with a signed, expiring, single-use upload form
(``post_url`` + ``post_fields``) and turns ``uploaded`` once its bytes arrived and passed ingest
(:mod:`.uploads`, or an S3 presigned POST checked when its evaluation is created). Creating and
loading files is :mod:`palaestra.scoreboard.server.evaluations.files`; :func:`file_object` is how the
API shows one."""

from __future__ import annotations

from typing import Annotated, cast

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.api.common import base_url, page
from palaestra.scoreboard.server.api.deps import CurrentUser, ListQuery, State, json_body
from palaestra.scoreboard.server.core.answers import answer
from palaestra.scoreboard.server.core.deps import run_blocking
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import FileStore
from palaestra.scoreboard.server.evaluations import files
from palaestra.scoreboard.server.tables.service import FileRecord

__all__ = ["file_object", "router"]

router = APIRouter(prefix="/files", tags=["files"])


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
    base = base_url(state, request)
    return files.create_file(state, request, principal, body, lambda f: file_object(state, base, f))


@router.get("/{file_id}", response_model=protocol.FileObject)
def get_file(file_id: str, request: Request, principal: CurrentUser, state: State) -> Response:
    """One of your files."""
    with state.db.connect() as conn:
        record = files.own_file(files.load_file(conn, file_id), principal, file_id)
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
