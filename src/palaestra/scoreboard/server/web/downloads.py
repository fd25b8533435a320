"""The downloads the pages link to: an evaluation's episode batch (``episode_batch.json``, the 2017
stored document, and ``episodes.csv``) and its videos with their metadata. These, and only these,
read the stored bytes (every page reads what ingest derived from them), each checked against its
recorded sha256 before a byte is served."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

from palaestra.episodes import Episodes
from palaestra.scoreboard.server.core.storage import BlobDamaged
from palaestra.scoreboard.server.evaluations.ingest import IngestError, read_validated_batch
from palaestra.scoreboard.server.evaluations.records import EvaluationRecord
from palaestra.scoreboard.server.evaluations.video_integrity import read_checked, record_first_hash
from palaestra.scoreboard.server.web.services import blob_store, database, evaluation_of, not_found

__all__ = ["router"]

logger = logging.getLogger("palaestra.scoreboard.web")

router = APIRouter(include_in_schema=False)


def _blob_response(
    request: Request, evaluation_id: str, key: str, sha256: str | None, media_type: str, filename: str
) -> Response:
    """A stored video (or its metadata) of an evaluation, from this server's origin (the pages'
    Content-Security-Policy allows no other), its sha256 checked first (:mod:`..evaluations.video_integrity`):
    bytes that are not those stored are never served.

    The file store's blobs are files (served with Range support, so videos seek); other stores'
    are read and served from memory, with single-range requests answered too.
    """
    headers = {
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "public, max-age=86400",
        "Content-Disposition": f'inline; filename="{filename}"',
    }
    try:
        source, digest = read_checked(blob_store(request), key, sha256)
    except LookupError:
        return Response("not found", status_code=404, media_type="text/plain")
    except BlobDamaged as e:
        logger.error("Not serving %s of %s: %s", filename, evaluation_id, e)
        return Response(
            f"The stored {filename} of {evaluation_id} is not the one uploaded: {e} It is not served; "
            "the server's operator can restore it from a backup.",
            status_code=500,
            media_type="text/plain",
        )
    if sha256 is None:
        record_first_hash(database(request), evaluation_id, key, digest)
    if isinstance(source, Path):
        return FileResponse(source, media_type=media_type, headers=headers)
    return _bytes_response(source, media_type, headers, request.headers.get("range"))


_RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")


def _bytes_response(
    data: bytes, media_type: str, headers: dict[str, str], range_header: str | None
) -> Response:
    """``data`` whole, or the one byte range asked for (206), or 416 for a range outside it."""
    headers = {**headers, "Accept-Ranges": "bytes"}
    match = _RANGE_RE.match(range_header.strip()) if range_header else None
    if match is None or match.group(1) == match.group(2) == "":
        return Response(data, media_type=media_type, headers=headers)
    size = len(data)
    if match.group(1):
        start = int(match.group(1))
        end = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
    else:  # the last N bytes
        start, end = max(0, size - int(match.group(2))), size - 1
    if start >= size or start > end:
        return Response(status_code=416, headers={**headers, "Content-Range": f"bytes */{size}"})
    headers["Content-Range"] = f"bytes {start}-{end}/{size}"
    return Response(data[start : end + 1], status_code=206, media_type=media_type, headers=headers)


@router.get("/evaluations/{evaluation_id}/episode_batch.json")
def episode_batch_download(request: Request, evaluation_id: str) -> Response:
    doc = _stored_batch(request, evaluation_of(request, evaluation_id))
    if isinstance(doc, Response):
        return doc
    headers = {
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "public, max-age=86400",
        "Content-Disposition": f'inline; filename="{evaluation_id}.episode_batch.json"',
    }
    return Response(json.dumps(doc), media_type="application/json", headers=headers)


def _stored_batch(request: Request, ev: EvaluationRecord | None) -> dict[str, Any] | Response:
    """The 2017 stored document of evaluation ``ev``'s episode batch (the uploaded keys plus
    ``env_id`` and ``initial_reset_timestamp``), its sha256 checked and otherwise trusted as validated
    at upload (:func:`..evaluations.ingest.read_validated_batch`: the only reader of the blob once the evaluation
    is derived); else the page that says why not: 404 naming the file when it is gone (the other pages
    draw what was derived from it), 500 naming the fault when its bytes are not those scored."""
    if ev is None or not ev.episode_batch_key:
        return Response("no such episode batch", status_code=404, media_type="text/plain")
    try:
        data = blob_store(request).get_verified(ev.episode_batch_key, ev.episode_batch_sha256)
        return read_validated_batch(data).enriched(ev.env_id)
    except LookupError:
        logger.warning("The episode batch of %s (%s) is missing from the store", ev.id, ev.episode_batch_key)
        return not_found(
            request,
            f"The episode batch of evaluation {ev.id} (stored as {ev.episode_batch_key}) is missing from "
            "this server's store, so it cannot be downloaded; the evaluation's scores and learning curves "
            "were derived from it at upload and are still shown. The server's operator can restore the "
            "file from a backup.",
        )
    except (BlobDamaged, IngestError) as e:
        logger.error("Not serving the episode batch of %s: %s", ev.id, e)
        return Response(
            f"The stored episode batch of {ev.id} is not the one it was scored on: {e} It is not "
            "served; the server's operator can restore it from a backup.",
            status_code=500,
            media_type="text/plain",
        )


@router.get("/evaluations/{evaluation_id}/episodes.csv")
def episodes_csv(request: Request, evaluation_id: str) -> Response:
    doc = _stored_batch(request, evaluation_of(request, evaluation_id))
    if isinstance(doc, Response):
        return doc
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["episode", "type", "length", "reward", "timestamp", "seconds", "data_source"])
    episodes = Episodes.from_batch(doc, f"The stored episode batch of {evaluation_id}")
    columns = (episodes.types, episodes.lengths, episodes.rewards, episodes.timestamps, episodes.axis("seconds"))
    for i, (kind, length, reward, stamp, seconds, source) in enumerate(
        zip(*(c.tolist() for c in columns), episodes.data_sources.tolist())
    ):
        writer.writerow([i, kind, length, reward, stamp, f"{seconds:.6f}", source])
    headers = {"Content-Disposition": f'attachment; filename="{evaluation_id}.episodes.csv"'}
    return Response(out.getvalue(), media_type="text/csv", headers=headers)


@router.get("/evaluations/{evaluation_id}/videos/{name}")
def video_download(request: Request, evaluation_id: str, name: str) -> Response:
    ev = evaluation_of(request, evaluation_id)
    if ev is None:
        return Response("no such evaluation", status_code=404, media_type="text/plain")
    for video in ev.videos:
        if video.name == name:
            return _blob_response(request, ev.id, video.key, video.sha256, video.media_type, name)
        if video.metadata_name == name:
            return _blob_response(request, ev.id, video.metadata_key, video.metadata_sha256, "application/json", name)
    return Response("no such video", status_code=404, media_type="text/plain")
