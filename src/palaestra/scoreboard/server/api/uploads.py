"""``POST /v1/uploads/{file_id}``: the ``post_url`` of a file on the file store, where its bytes arrive.

The multipart form is ``post_fields`` (``expires``, ``signature``) + ``file``; it is signed (HMAC),
expiring and single-use, and needs no API key (the 2017 client sends none there). The bytes are
validated here, once (:mod:`palaestra.scoreboard.server.evaluations.ingest`), and stored; the file turns
``uploaded`` in one statement, so a concurrent or killed attempt never counts twice.
"""

from __future__ import annotations

import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response
from starlette.datastructures import UploadFile
from starlette.types import Message

from palaestra.scoreboard.protocol import EpisodeBatch
from palaestra.scoreboard.server.api.common import not_found
from palaestra.scoreboard.server.api.deps import State
from palaestra.scoreboard.server.api.files import load_file
from palaestra.scoreboard.server.core.deps import run_blocking
from palaestra.scoreboard.server.core.faults import pause_at
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import BlobNotFound, sha256_of
from palaestra.scoreboard.server.evaluations.ingest import (
    ArchiveLimits,
    IngestError,
    WorkDir,
    validate_episode_batch,
    validate_video_archive,
)
from palaestra.scoreboard.server.evaluations.records import StoredVideo
from palaestra.scoreboard.server.guards.body_limits import FORM_OVERHEAD_BYTES
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.base import utcnow
from palaestra.scoreboard.server.tables.service import FileRecord

__all__ = ["RemoteFile", "ingest_remote", "router", "store_videos"]

router = APIRouter(prefix="/uploads", tags=["files"])

#: Uploads up to this size are ingested on the event loop when the service is all local.
INLINE_MAX_BYTES = 1024 * 1024

_MARK_UPLOADED = (
    sa.update(FileRecord)
    .where(FileRecord.id == sa.bindparam("file_id"), FileRecord.status == "pending")
    .values(
        status="uploaded",
        storage_key=sa.bindparam("storage_key"),
        size=sa.bindparam("size"),
        uploaded=sa.bindparam("uploaded"),
        ingest=sa.bindparam("ingest"),
        sha256=sa.bindparam("sha256"),
    )
)


@router.post("/{file_id}", status_code=204)
async def upload(file_id: str, request: Request, state: State) -> Response:
    """The ``post_url`` of a file (file store): the multipart form ``post_fields`` + ``file``; 204.

    Signed (HMAC), expiring and single-use; no API key (the 2017 client sends none here).
    """
    record = await run_blocking(state, _pending_file, state, file_id)
    cap = record.max_bytes + FORM_OVERHEAD_BYTES
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > cap:
        raise _too_large(record)
    try:
        form = await _read_form(request, cap)
    except _TooLarge:
        raise _too_large(record) from None
    try:
        _check_signature(state, record, form)
        part = form.get("file")
        if not isinstance(part, UploadFile):
            raise Problem(400, "The upload form has no 'file' field holding the bytes.", "file")
        if part.size is not None and part.size > record.max_bytes:
            raise _too_large(record)
        small = part.size is not None and part.size <= INLINE_MAX_BYTES
        await run_blocking(state, _accept_upload, state, record, part, small=small)
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


def _too_large(record: FileRecord) -> Problem:
    return Problem(
        413,
        f"The upload is larger than this server accepts for {record.purpose} files "
        f"({record.max_bytes} bytes).",
        "file",
    )


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


def _accept_upload(state: ServerState, record: FileRecord, part: UploadFile) -> None:
    """Validate and store the bytes, then flip the file to ``uploaded`` exactly once.

    Every attempt writes under its own keys, so a concurrent or killed attempt never overwrites what
    another one stored; the database row is the only thing that says which bytes count.
    """
    attempt = f"{record.id}.{uuid.uuid4().hex[:12]}"
    stored_keys: list[str] = []
    try:
        part.file.seek(0)
        store = _store_batch if record.purpose == "episode_batch" else _store_archive
        stored = store(state, record, part, attempt, stored_keys)
        pause_at("after_blob_write")  # tests only (server.faults): a kill here leaves an orphaned blob
        marked = {
            "file_id": record.id,
            "storage_key": stored.key,
            "size": stored.size,
            "uploaded": utcnow(),
            "ingest": stored.ingest,
            "sha256": stored.sha256,
        }
        if not state.db.write_one(_MARK_UPLOADED, marked):
            raise Problem(409, f"The upload URL of {record.id} was already used.", "file")
    except BaseException:
        for key in stored_keys:
            state.store.delete(key)
        raise


@dataclass
class _Stored:
    """What an upload left in the store: its key (None: an archive, kept as its videos), its size,
    its ingest document and (an episode batch) the sha256 of the bytes stored."""

    key: str | None
    size: int
    ingest: dict[str, Any]
    sha256: str | None = None


def _store_batch(
    state: ServerState, record: FileRecord, part: UploadFile, attempt: str, stored_keys: list[str]
) -> _Stored:
    """An episode batch, validated, stored as it came."""
    data = part.file.read(record.max_bytes + 1)
    if len(data) > record.max_bytes:
        raise _too_large(record)
    ingest, _ = _batch_ingest(data, record.max_bytes)
    key = f"files/{attempt}"
    state.store.put_bytes(key, data)
    stored_keys.append(key)
    return _Stored(key, len(data), ingest, sha256_of(data))


def _store_archive(
    state: ServerState, record: FileRecord, part: UploadFile, attempt: str, stored_keys: list[str]
) -> _Stored:
    """A video archive, validated and unpacked: its videos and their metadata are what is kept (and
    served); the archive would be a second copy of them (new files are what this endpoint spends
    most on), so it has no key of its own."""
    part.file.seek(0, 2)
    size = part.file.tell()
    if size > record.max_bytes:
        raise _too_large(record)
    part.file.seek(0)
    videos = store_videos(state, part.file, f"videos/{attempt}", stored_keys)
    return _Stored(None, size, _videos_ingest(videos))


def _batch_ingest(data: bytes, max_bytes: int) -> tuple[dict[str, Any], EpisodeBatch]:
    """The batch in ``data``, validated, and what its file's ``ingest`` column says about it."""
    batch = validate_episode_batch(data, max_bytes)
    return {"episodes": len(batch.episode_lengths)}, batch


def _videos_ingest(videos: list[StoredVideo]) -> dict[str, Any]:
    """What a file's ``ingest`` column says about a valid video archive: its videos, stored."""
    return {"videos": [v.stored() for v in videos]}


def store_videos(state: ServerState, archive: Any, prefix: str, stored_keys: list[str]) -> list[StoredVideo]:
    """Validate a video archive (a path or a binary file) and store its videos and their metadata
    under ``prefix`` (each key stored is added to ``stored_keys``, for the caller to clean up)."""
    cfg = state.config
    limits = ArchiveLimits(
        max_member_bytes=cfg.max_archive_member_bytes, max_expanded_bytes=cfg.max_archive_expanded_bytes
    )
    stored = []
    with WorkDir() as workdir:
        for video in validate_video_archive(archive, workdir, limits, cfg.ffprobe):
            # ``prefix.name``, not ``prefix/name``: a folder per upload would be one more new inode
            key, meta_key = f"{prefix}.{video.name}", f"{prefix}.{video.metadata_name}"
            for k, member in ((key, video.video), (meta_key, video.metadata_member)):
                if member.data is not None:
                    state.store.put_bytes(k, member.data)
                else:
                    assert member.path is not None
                    state.store.put_file(k, member.path)
                stored_keys.append(k)
            stored.append(video.stored_as(key, meta_key))
    return stored


@dataclass
class RemoteFile:
    """A file uploaded straight to the store, validated: its ``ingest`` document and its content,
    and (an episode batch) the key and sha256 of the copy the server stored of it."""

    ingest: dict[str, Any]
    batch: EpisodeBatch | None = None
    videos: list[StoredVideo] = field(default_factory=list)
    storage_key: str | None = None
    sha256: str | None = None


def ingest_remote(state: ServerState, record: FileRecord, param: str, stored_keys: list[str]) -> RemoteFile:
    """Validate a file the server has not seen yet (uploaded straight to S3 with a presigned POST);
    what is wrong is blamed on ``param``, the request parameter that named the file.

    The presigned form stays valid until it expires and its key is the client's to write, so what is
    kept is a copy under a key of the server's own (each key stored is added to ``stored_keys``): the
    bytes validated here are the bytes stored, and a later POST of the form changes nothing scored.
    """
    assert record.storage_key is not None
    attempt = f"{record.id}.{uuid.uuid4().hex[:12]}"
    try:
        if record.purpose == "episode_batch":
            data = state.store.get_bytes(record.storage_key)
            ingest, batch = _batch_ingest(data, record.max_bytes)
            key = f"files/{attempt}"
            state.store.put_bytes(key, data)
            stored_keys.append(key)
            return RemoteFile(ingest, batch=batch, storage_key=key, sha256=sha256_of(data))
        with tempfile.TemporaryDirectory(prefix="palaestra-ingest-") as tmp:
            local = Path(tmp) / "upload"
            state.store.download(record.storage_key, local)
            videos = store_videos(state, local, f"videos/{attempt}", stored_keys)
        return RemoteFile(_videos_ingest(videos), videos=videos)
    except BlobNotFound:
        raise Problem(400, f"File {record.id} has no content yet.", param) from None
    except IngestError as e:
        raise e.about(param) from None
