"""The bytes of a file, arrived: validated once (:mod:`.ingest`) and stored.

- :func:`accept_upload`: the bytes posted to a file's ``post_url`` (``POST /v1/uploads/{file_id}``),
  validated and stored; the file turns ``uploaded`` in one statement, so a concurrent or killed attempt
  never counts twice;
- :func:`ingest_remote`: a file uploaded straight to S3 with a presigned POST, validated when its
  evaluation is created, and copied under a key of the server's own;
- :func:`store_videos`: a video archive's videos and their metadata, stored.
"""

from __future__ import annotations

import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from starlette.datastructures import UploadFile

from palaestra.scoreboard.protocol import EpisodeBatch
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
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.base import utcnow
from palaestra.scoreboard.server.tables.service import FileRecord

__all__ = ["RemoteFile", "accept_upload", "ingest_remote", "store_videos", "too_large"]

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


def too_large(record: FileRecord) -> Problem:
    return Problem(
        413,
        f"The upload is larger than this server accepts for {record.purpose} files "
        f"({record.max_bytes} bytes).",
        "file",
    )


def accept_upload(state: ServerState, record: FileRecord, part: UploadFile) -> None:
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
        pause_at("after_blob_write")  # tests only (core.faults): a kill here leaves an orphaned blob
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
        raise too_large(record)
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
        raise too_large(record)
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
