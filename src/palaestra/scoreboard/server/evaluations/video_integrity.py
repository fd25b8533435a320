"""A video's bytes are checked against the sha256 recorded when it was stored, on every read.

Ingest records ``sha256`` (the video) and ``metadata_sha256`` (its ``.meta.json``) with each video
(``evaluations.videos``, :class:`.records.StoredVideo`). Serving a video, its metadata, its page's
text fallback or the env picture made from it reads the blob through :func:`read_checked`: bytes
that differ are never served (:class:`..core.storage.BlobDamaged`: a 500 naming the fault, as for episode
batches).

Evaluations stored before palaestra recorded video hashes get them on their first read
(:func:`record_first_hash`): the bytes read then are taken as the stored ones, and every later read
is checked against them. (A migration would have to read every video of every evaluation from the
blob store, which on S3 is a download of the whole store, before the server could start.)
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.storage import BlobDamaged, BlobNotFound, BlobStore
from palaestra.scoreboard.server.tables.scores import Evaluation

__all__ = ["file_sha256", "read_checked", "record_first_hash"]

logger = logging.getLogger("palaestra.scoreboard")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            h.update(chunk)
    return h.hexdigest()


def read_checked(store: BlobStore, key: str, sha256: str | None) -> tuple[Path | bytes, str]:
    """The blob, as its local path (the file store) or its bytes, and its sha256, checked against
    ``sha256`` (``None``: none recorded yet). :class:`BlobDamaged` if it differs, :class:`BlobNotFound`
    if it is gone."""
    path = store.local_path(key)
    source: Path | bytes
    if path is not None:
        try:
            digest = file_sha256(path)
        except (FileNotFoundError, IsADirectoryError):
            raise BlobNotFound(key) from None
        source = path
    else:
        source = store.get_bytes(key)
        digest = hashlib.sha256(source).hexdigest()
    if sha256 is not None and digest != sha256:
        raise BlobDamaged(key, sha256, digest)
    return source, digest


def record_first_hash(db: Database, evaluation_id: str, key: str, digest: str) -> None:
    """Record ``digest`` for the video (or metadata) blob ``key`` of an evaluation stored before
    hashes were recorded; a hash already there is never replaced."""
    with db.write() as session:
        videos: list[Any] | None = session.scalar(sa.select(Evaluation.videos).where(Evaluation.id == evaluation_id))
        changed = False
        for doc in videos or []:
            for key_field, hash_field in (("key", "sha256"), ("metadata_key", "metadata_sha256")):
                if doc.get(key_field) == key and not doc.get(hash_field):
                    doc[hash_field] = digest
                    changed = True
        if changed:
            session.execute(sa.update(Evaluation).where(Evaluation.id == evaluation_id).values(videos=videos))
            logger.info("Recorded the sha256 of %s of %s on its first read", key, evaluation_id)
