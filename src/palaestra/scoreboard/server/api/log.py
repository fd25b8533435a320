"""``/v1/log``: the hash chain of scores (:mod:`..evaluations.scorelog`), oldest entry first.

``GET /v1/log?limit=N&starting_after=SEQ`` pages through the entries, each with its record's
document as the board holds it now; ``GET /v1/log/{seq}/blobs/{index}`` serves the bytes of one of an
entry's blobs, for ``palaestra server verify URL`` to hash. Nothing here needs a key: the log is
public, like the leaderboards it vouches for.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.api.common import base_url
from palaestra.scoreboard.server.api.deps import ListQuery, State
from palaestra.scoreboard.server.core.answers import answer
from palaestra.scoreboard.server.core.storage import BlobNotFound
from palaestra.scoreboard.server.evaluations.scorelog import current_documents, plain
from palaestra.scoreboard.server.problems import Problem, not_found
from palaestra.scoreboard.server.tables.service import ScoreLogEntry

__all__ = ["router"]

router = APIRouter(prefix="/log", tags=["log"])
_PATH = f"{protocol.API_PREFIX}/log"


@router.get("", response_model=protocol.ListPage[protocol.LogEntryObject])
def list_log(request: Request, state: State, asked: ListQuery) -> Response:
    """The entries after ``starting_after`` (a ``seq``; none: from the first), oldest first."""
    after = asked.params.starting_after or "0"
    if not after.isdigit():
        raise Problem(
            400, f"starting_after of /v1/log is an entry's seq (a number), not {after!r}.", "starting_after"
        )
    table: Any = ScoreLogEntry.__table__
    query = (
        sa.select(table).where(table.c.seq > int(after)).order_by(table.c.seq).limit(asked.params.limit + 1)
    )
    with state.db.connect() as conn:
        rows = conn.execute(query).all()
        entries = rows[: asked.params.limit]
        documents = current_documents(conn, entries)
    base = base_url(state, request).rstrip("/")
    data = [_entry_object(row, documents.get((row.kind, row.record_id, row.version)), base) for row in entries]
    return answer(
        protocol.ListPage[protocol.LogEntryObject](url=_PATH, data=data, has_more=len(rows) > len(entries))
    )


def _entry_object(row: Any, record: dict[str, Any] | None, base: str) -> protocol.LogEntryObject:
    blobs = [
        protocol.LogBlob(key=b["key"], sha256=b["sha256"], url=f"{base}{_PATH}/{row.seq}/blobs/{i}")
        for i, b in enumerate(row.blobs)
    ]
    return protocol.LogEntryObject(
        seq=row.seq,
        kind=row.kind,
        record_id=row.record_id,
        record_sha256=row.record_sha256,
        blobs=blobs,
        previous_sha256=row.previous_sha256,
        entry_sha256=row.entry_sha256,
        created=plain(row.created),
        version=row.version,
        fields=dict(sorted(row.fields.items())) if row.fields else None,  # one order on every backend
        record=record,
    )


@router.get("/{seq}/blobs/{index}")
def log_blob(seq: int, index: int, state: State) -> Response:
    """The bytes of blob ``index`` of entry ``seq``, as the store holds them now."""
    with state.db.connect() as conn:
        blobs = conn.scalar(sa.select(ScoreLogEntry.blobs).where(ScoreLogEntry.seq == seq))
    if blobs is None or not 0 <= index < len(blobs):
        raise not_found("log blob", f"{seq}/{index}")
    try:
        data = state.store.get_bytes(blobs[index]["key"])
    except BlobNotFound:
        raise Problem(
            404, f"Blob {blobs[index]['key']} of log entry {seq} is missing from the store."
        ) from None
    return Response(data, media_type="application/octet-stream")
