"""``POST /v1/uploads/{file_id}``: the ``post_url`` of a file on the file store, where its bytes arrive.

The multipart form is ``post_fields`` (``expires``, ``signature``) + ``file``; it is signed (HMAC),
expiring and single-use, and needs no API key (the 2017 client sends none there). The route reads the
form (refusing a body over the file's limit), checks the signature and hands the bytes to
:func:`palaestra.scoreboard.server.evaluations.uploads.accept_upload`, which validates them once and
stores them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.datastructures import UploadFile
from starlette.types import Message

from palaestra.scoreboard.server.api.deps import State
from palaestra.scoreboard.server.core.deps import run_blocking
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.evaluations.files import load_file
from palaestra.scoreboard.server.evaluations.uploads import accept_upload, too_large
from palaestra.scoreboard.server.guards.body_limits import FORM_OVERHEAD_BYTES
from palaestra.scoreboard.server.problems import Problem, not_found
from palaestra.scoreboard.server.tables.service import FileRecord

__all__ = ["router"]

router = APIRouter(prefix="/uploads", tags=["files"])

#: Uploads up to this size are ingested on the event loop when the service is all local.
INLINE_MAX_BYTES = 1024 * 1024


@router.post("/{file_id}", status_code=204)
async def upload(file_id: str, request: Request, state: State) -> Response:
    """The ``post_url`` of a file (file store): the multipart form ``post_fields`` + ``file``; 204.

    Signed (HMAC), expiring and single-use; no API key (the 2017 client sends none here).
    """
    record = await run_blocking(state, _pending_file, state, file_id)
    cap = record.max_bytes + FORM_OVERHEAD_BYTES
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > cap:
        raise too_large(record)
    try:
        form = await _read_form(request, cap)
    except _TooLarge:
        raise too_large(record) from None
    try:
        _check_signature(state, record, form)
        part = form.get("file")
        if not isinstance(part, UploadFile):
            raise Problem(400, "The upload form has no 'file' field holding the bytes.", "file")
        if part.size is not None and part.size > record.max_bytes:
            raise too_large(record)
        small = part.size is not None and part.size <= INLINE_MAX_BYTES
        await run_blocking(state, accept_upload, state, record, part, small=small)
    finally:
        await form.close()
    return Response(status_code=204)


def _pending_file(state: ServerState, file_id: str) -> FileRecord:
    with state.db.connect() as conn:
        record = load_file(conn, file_id)
    if record is None:
        raise not_found("file", file_id)
    if record.status != "pending":
        raise Problem(
            409,
            f"The upload URL of {file_id} was already used; create a new file with "
            "POST /v1/files to upload again.",
            "file",
        )
    return record


class _TooLarge(Exception):
    pass


async def _read_form(request: Request, cap: int) -> Any:
    """The multipart form, refusing (413) a body over ``cap`` bytes even without a Content-Length."""
    received = 0

    async def receive() -> Message:
        nonlocal received
        message = await request.receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > cap:
                raise _TooLarge
        return message

    capped = Request(request.scope, receive)
    return await capped.form(max_files=1, max_fields=50)


def _check_signature(state: ServerState, record: FileRecord, form: Any) -> None:
    expires, signature = form.get("expires"), form.get("signature")
    if not isinstance(expires, str) or not isinstance(signature, str) or not expires.isdigit():
        raise Problem(
            400,
            "The upload form lacks the 'expires' and 'signature' fields of post_fields; send "
            "every post_fields entry with the file.",
            "signature",
        )
    if not state.signing.verify(record.id, int(expires), record.max_bytes, signature):
        raise Problem(
            401,
            "The upload form's signature does not match; send post_fields exactly as "
            "POST /v1/files returned them.",
            "signature",
        )
    if state.clock.time() > int(expires) or state.clock.now() > record.expires:
        raise Problem(
            400,
            f"The upload URL of {record.id} expired at "
            f"{datetime.fromtimestamp(int(expires), timezone.utc).isoformat()}; "
            "create a new file with POST /v1/files.",
            "expires",
        )


