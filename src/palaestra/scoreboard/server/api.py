"""The ``/v1`` API: files, uploads, evaluations, benchmark runs, algorithms and envs.

Wire-compatible with the 2017 gym client (spec §4.3-4.4, §10). Creating POSTs honour an
``Idempotency-Key`` header (same key and user: the stored answer, no second object). Creating an
evaluation is one database transaction: a server killed at any point leaves either the whole
evaluation or none of it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session
from starlette.datastructures import UploadFile
from starlette.types import Message

from palaestra import catalogue
from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol import NO_PARAM
from palaestra.scoreboard.server import benchmarking, migrate
from palaestra.scoreboard.server.auth import Principal, require_user
from palaestra.scoreboard.server.db import (
    Algorithm,
    BenchmarkRun,
    EnvStats,
    Evaluation,
    FileRecord,
    IdempotencyKey,
    RawJSON,
    User,
    from_row,
    snapshot,
    upsert_env_stats,
    utcnow,
)
from palaestra.scoreboard.server.deps import get_state, run_blocking
from palaestra.scoreboard.server.ids import new_id
from palaestra.scoreboard.server.ingest import (
    ArchiveLimits,
    IngestError,
    WorkDir,
    score_batch,
    validate_episode_batch,
    validate_video_archive,
)
from palaestra.scoreboard.server.problems import ApiError
from palaestra.scoreboard.server.state import ServerState
from palaestra.scoreboard.server.storage import BlobNotFound, FileStore

logger = logging.getLogger("palaestra.scoreboard.api")

router = APIRouter(prefix=protocol.API_PREFIX)

#: Room for the multipart framing and form fields around an upload's bytes.
FORM_OVERHEAD_BYTES = 64 * 1024


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------

#: Uploads up to this size are ingested on the event loop when the service is all local.
INLINE_MAX_BYTES = 1024 * 1024




def base_url(state: ServerState, request: Request) -> str:
    return state.config.base_url(str(request.base_url))


def iso(dt: datetime | None) -> str | None:
    return dt.isoformat() if dt is not None else None


def body_hash(model: protocol.Request) -> str:
    return hashlib.sha256(model.model_dump_json(exclude_none=True).encode()).hexdigest()


def query_params(request: Request) -> dict[str, Any]:
    """GET parameters, also when sent the 2017 way: the raw JSON object as the query string."""
    raw = request.url.query
    if not raw:
        return {}
    text = unquote(raw) if raw[:3].upper() == "%7B" or raw.startswith("{") else raw
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            raise ApiError(
                400, f"The query string is neither key=value pairs nor a JSON object: {text[:100]!r}"
            ) from None
        if not isinstance(doc, dict):
            raise ApiError(400, "A JSON query string must be an object.")
        return doc
    return dict(parse_qsl(raw, keep_blank_values=True))


def list_params(request: Request) -> tuple[protocol.ListParams, dict[str, Any]]:
    params = query_params(request)
    try:
        parsed = protocol.ListParams.model_validate(params)
    except Exception as e:
        raise ApiError(400, f"Invalid list parameters: {e}", "limit") from None
    extra = {k: v for k, v in params.items() if k not in ("limit", "starting_after")}
    return parsed, extra


def filtered(query: Any, extra: dict[str, Any], columns: dict[str, Any]) -> Any:
    """``query`` narrowed to the list filters in ``extra`` (``name -> value``) that ``columns`` knows."""
    for name, column in columns.items():
        if extra.get(name):
            query = query.where(column == str(extra[name]))
    return query


def not_found(kind: str, object_id: str, param: str = NO_PARAM) -> ApiError:
    return ApiError(404, f"No such {kind}: {object_id!r}.", param)


def page(
    session: Session,
    model: Any,
    query: Any,
    params: protocol.ListParams,
    url: str,
    render: Callable[[Any], dict[str, Any]],
) -> dict[str, Any]:
    if params.starting_after:
        seq = session.scalar(sa.select(model.seq).where(model.id == params.starting_after))
        if seq is None:
            raise not_found("object", params.starting_after, "starting_after")
        query = query.where(model.seq < seq)
    rows = session.execute(query.order_by(model.seq.desc()).limit(params.limit + 1)).all()
    data = [render(r) for r in rows[: params.limit]]
    return {"object": "list", "url": url, "data": data, "has_more": len(rows) > params.limit}


# -- idempotency ------------------------------------------------------------------------------------


def _replay(stored: IdempotencyKey, signature: str, digest: str) -> JSONResponse:
    if stored.request != signature or stored.request_hash != digest:
        raise ApiError(
            409,
            f"This Idempotency-Key was already used for a different request ({stored.request}); "
            "send a new key for a new request.",
            "Idempotency-Key",
        )
    return JSONResponse(
        stored.response, status_code=stored.status_code, headers={"Idempotent-Replayed": "true"}
    )


def idempotent_create(
    state: ServerState,
    request: Request,
    principal: Principal,
    digest: str,
    create: Callable[[Session], tuple[int, dict[str, Any]]],
) -> JSONResponse:
    """Run ``create`` in one write transaction; with an ``Idempotency-Key``, store and replay its answer."""
    key = request.headers.get(protocol.IDEMPOTENCY_HEADER)
    signature = f"{request.method} {request.url.path}"
    if key is not None and not 0 < len(key) <= 255:
        raise ApiError(400, "The Idempotency-Key header must be 1-255 characters.", "Idempotency-Key")

    def stored() -> IdempotencyKey | None:
        with state.db.connect() as conn:
            row = conn.execute(_IDEMPOTENCY_KEY, {"user_seq": principal.user_seq, "key": key}).first()
        return None if row is None else from_row(IdempotencyKey, row)

    if key is not None and (found := stored()) is not None:
        return _replay(found, signature, digest)
    for attempt in range(3):
        try:
            with state.db.write() as session:
                status, body = create(session)
                if key is not None:
                    # Last in the transaction: a concurrent twin of this request that committed
                    # first makes this insert fail, and the twin's stored answer is replayed.
                    remembered = {
                        "user_seq": principal.user_seq,
                        "key": key,
                        "request": signature,
                        "request_hash": digest,
                        "status_code": status,
                        "response": body,
                        "created": utcnow(),
                    }
                    session.connection().execute(_INSERT_IDEMPOTENCY_KEY, remembered)
            return JSONResponse(body, status_code=status)
        except sa.exc.IntegrityError as e:
            if key is not None and (found := stored()) is not None:
                return _replay(found, signature, digest)
            logger.info("Retrying %s after a conflict: %s", signature, e.orig)
            if attempt == 2:
                raise ApiError(409, "The request conflicted with a concurrent one; retry it.") from None
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------------------------------
# Health and OpenAPI-visible basics
# --------------------------------------------------------------------------------------------------


@router.get("/health", tags=["service"])
def health(state: ServerState = Depends(get_state)) -> dict[str, Any]:
    """Liveness: answers when the database is reachable."""
    with state.db.read() as session:
        session.execute(sa.text("SELECT 1"))
    return {"object": "health", "status": "ok", "schema_revision": migrate.SCHEMA_HEAD}


# --------------------------------------------------------------------------------------------------
# Files and uploads
# --------------------------------------------------------------------------------------------------


def sign_upload(secret: bytes, file_id: str, expires: int, max_bytes: int) -> str:
    message = f"{file_id}\n{expires}\n{max_bytes}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def file_object(state: ServerState, base: str, f: FileRecord, with_upload: bool = True) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "object": "file",
        "id": f.id,
        "purpose": f.purpose,
        "content_type": f.content_type,
        "status": f.status,
        "size": f.size,
        "expires_at": iso(f.expires),
        "created": iso(f.created),
        "post_url": None,
        "post_fields": {},
    }
    if with_upload and f.status == "pending":
        presigned = None
        if not isinstance(state.store, FileStore) and f.storage_key:
            presigned = state.store.presigned_post(
                f.storage_key, f.max_bytes, max(1, int(f.expires.timestamp() - time.time())), f.content_type
            )
        if presigned is not None:
            obj["post_url"], obj["post_fields"] = presigned
        else:
            expires = int(f.expires.timestamp())
            obj["post_url"] = f"{base}{protocol.API_PREFIX}/uploads/{f.id}"
            obj["post_fields"] = {
                "expires": str(expires),
                "signature": sign_upload(state.secret, f.id, expires, f.max_bytes),
            }
    return obj


@router.post("/files", tags=["files"], status_code=201, response_model=protocol.FileObject)
async def create_file(
    body: protocol.FileCreate,
    request: Request,
    principal: Principal = Depends(require_user),
    state: ServerState = Depends(get_state),
) -> Response:
    """Create a file and a signed, expiring, single-use upload form (``post_url`` + ``post_fields``)."""
    return await run_blocking(state, _create_file, body, request, principal, state)


def _create_file(
    body: protocol.FileCreate, request: Request, principal: Principal, state: ServerState
) -> Response:
    file_id = new_id("file")
    now = utcnow()
    values = {
        "id": file_id,
        "user_seq": principal.user_seq,
        "purpose": body.purpose,
        "content_type": body.content_type or protocol.default_content_type(body.purpose),
        "status": "pending",
        "max_bytes": state.config.max_upload_bytes(body.purpose),
        "expires": now + timedelta(seconds=state.config.upload_ttl_s),
        "storage_key": None if isinstance(state.store, FileStore) else f"files/{file_id}",
        "created": now,
    }
    # Built before the write transaction: on SQLite, writers queue for one lock, so the less
    # happens while it is held, the more uploads a second (bench/server_load.py).
    answer = file_object(state, base_url(state, request), snapshot(FileRecord, values))

    if request.headers.get(protocol.IDEMPOTENCY_HEADER) is None:
        state.db.write_one(_INSERT_FILE, values)  # one statement: no transaction needed
        return JSONResponse(answer, status_code=201)

    def create(session: Session) -> tuple[int, dict[str, Any]]:
        session.connection().execute(_INSERT_FILE, values)  # Core: the ORM flush costs more than the rest
        return 201, answer

    return idempotent_create(state, request, principal, body_hash(body), create)


_FILES = FileRecord.__table__
_FILE_BY_ID = sa.select(_FILES).where(_FILES.c.id == sa.bindparam("file_id"))
_FILES_BY_ID = sa.select(_FILES).where(_FILES.c.id.in_(sa.bindparam("file_ids", expanding=True)))
_RUN_BY_ID = sa.select(BenchmarkRun).where(BenchmarkRun.id == sa.bindparam("run_id"))
_ALGORITHMS = Algorithm.__table__
_ALGORITHM_BY_ID_OR_NAME = (
    sa.select(_ALGORITHMS)
    .where(
        _ALGORITHMS.c.user_seq == sa.bindparam("user_seq"),
        sa.or_(_ALGORITHMS.c.id == sa.bindparam("ref"), _ALGORITHMS.c.name == sa.bindparam("ref")),
    )
    .order_by((_ALGORITHMS.c.id == sa.bindparam("ref")).desc())
    .limit(1)
)
_MARK_UPLOADED = (
    sa.update(FileRecord)
    .where(FileRecord.id == sa.bindparam("file_id"), FileRecord.status == "pending")
    .values(
        status="uploaded",
        storage_key=sa.bindparam("storage_key"),
        size=sa.bindparam("size"),
        uploaded=sa.bindparam("uploaded"),
        ingest=sa.bindparam("ingest"),
    )
)
_INSERT_FILE = sa.insert(FileRecord)
_INSERT_IDEMPOTENCY_KEY = sa.insert(IdempotencyKey)
_IDEMPOTENCY_KEYS = IdempotencyKey.__table__
_IDEMPOTENCY_KEY = sa.select(_IDEMPOTENCY_KEYS).where(
    _IDEMPOTENCY_KEYS.c.user_seq == sa.bindparam("user_seq"), _IDEMPOTENCY_KEYS.c.key == sa.bindparam("key")
)
_INSERT_EVALUATION = sa.insert(Evaluation)
_CLAIM_FILES = (
    sa.update(FileRecord)
    .where(FileRecord.id.in_(sa.bindparam("file_ids", expanding=True)), FileRecord.evaluation_id.is_(None))
    .values(evaluation_id=sa.bindparam("evaluation_id"))
)


def _taken_file(session: Session, records: list[FileRecord], evaluation_id: str) -> FileRecord:
    """Which of ``records`` another evaluation claimed first (after a claim fell short)."""
    for record in records:
        owner = session.scalar(sa.select(FileRecord.evaluation_id).where(FileRecord.id == record.id))
        if owner != evaluation_id:
            return record
    return records[0]


def _file(conn: sa.Connection, file_id: str) -> FileRecord | None:
    row = conn.execute(_FILE_BY_ID, {"file_id": file_id}).first()
    return None if row is None else from_row(FileRecord, row)


def _files(conn: sa.Connection, file_ids: list[str]) -> dict[str, FileRecord]:
    """The files among ``file_ids`` that exist, by id (one query)."""
    rows = conn.execute(_FILES_BY_ID, {"file_ids": file_ids})
    return {row.id: from_row(FileRecord, row) for row in rows}


def _own_file(conn: sa.Connection, principal: Principal, file_id: str, param: str = NO_PARAM) -> FileRecord:
    record = _file(conn, file_id)
    if record is None or record.user_seq != principal.user_seq:
        raise not_found("file", file_id, param)
    return record


@router.get("/files/{file_id}", tags=["files"], response_model=protocol.FileObject)
def get_file(
    file_id: str,
    request: Request,
    principal: Principal = Depends(require_user),
    state: ServerState = Depends(get_state),
) -> Response:
    """One of your files."""
    with state.db.connect() as conn:
        record = _own_file(conn, principal, file_id)
    return JSONResponse(file_object(state, base_url(state, request), record))


@router.get("/files", tags=["files"], response_model=protocol.ListPage[protocol.FileObject])
def list_files(
    request: Request, principal: Principal = Depends(require_user), state: ServerState = Depends(get_state)
) -> Response:
    """Your files, newest first."""
    params, _ = list_params(request)
    base = base_url(state, request)
    with state.db.read() as session:
        query = sa.select(FileRecord).where(FileRecord.user_seq == principal.user_seq)
        body = page(
            session,
            FileRecord,
            query,
            params,
            f"{protocol.API_PREFIX}/files",
            lambda r: file_object(state, base, r[0], with_upload=False),
        )
    return JSONResponse(body)


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


@router.post("/uploads/{file_id}", tags=["files"], status_code=204, include_in_schema=True)
async def upload(file_id: str, request: Request, state: ServerState = Depends(get_state)) -> Response:
    """The ``post_url`` of a file (file store): the multipart form ``post_fields`` + ``file``; 204.

    Signed (HMAC), expiring and single-use; no API key (the 2017 client sends none here).
    """
    record = await run_blocking(state, _load_file, state, file_id)
    if record.status != "pending":
        raise ApiError(
            409,
            f"The upload URL of {file_id} was already used; create a new file with "
            "POST /v1/files to upload again.",
            "file",
        )
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
            raise ApiError(400, "The upload form has no 'file' field holding the bytes.", "file")
        if part.size is not None and part.size > record.max_bytes:
            raise _too_large(record)
        small = part.size is not None and part.size <= INLINE_MAX_BYTES
        await run_blocking(state, _accept_upload, state, record, part, small=small)
    finally:
        await form.close()
    return Response(status_code=204)


def _too_large(record: FileRecord) -> ApiError:
    return ApiError(
        413,
        f"The upload is larger than this server accepts for {record.purpose} files "
        f"({record.max_bytes} bytes).",
        "file",
    )


def _load_file(state: ServerState, file_id: str) -> FileRecord:
    with state.db.connect() as conn:
        record = _file(conn, file_id)
    if record is None:
        raise not_found("file", file_id)
    return record


def _check_signature(state: ServerState, record: FileRecord, form: Any) -> None:
    expires, signature = form.get("expires"), form.get("signature")
    if not isinstance(expires, str) or not isinstance(signature, str) or not expires.isdigit():
        raise ApiError(
            400,
            "The upload form lacks the 'expires' and 'signature' fields of post_fields; send "
            "every post_fields entry with the file.",
            "signature",
        )
    expected = sign_upload(state.secret, record.id, int(expires), record.max_bytes)
    if not hmac.compare_digest(expected, signature):
        raise ApiError(
            401,
            "The upload form's signature does not match; send post_fields exactly as "
            "POST /v1/files returned them.",
            "signature",
        )
    if time.time() > int(expires) or utcnow() > record.expires:
        raise ApiError(
            400,
            f"The upload URL of {record.id} expired at "
            f"{datetime.fromtimestamp(int(expires), timezone.utc).isoformat()}; "
            "create a new file with POST /v1/files.",
            "expires",
        )


def _accept_upload(state: ServerState, record: FileRecord, part: UploadFile) -> None:
    """Store the bytes, validate them (ingest), then flip the file to ``uploaded`` exactly once.

    Every attempt writes under its own keys, so a concurrent or killed attempt never overwrites what
    another one stored; the database row is the only thing that says which bytes count.
    """
    store = state.store
    attempt = f"{record.id}.{uuid.uuid4().hex[:12]}"
    key = f"files/{attempt}"
    stored_keys: list[str] = []
    try:
        part.file.seek(0)
        if record.purpose == "episode_batch":
            data = part.file.read(record.max_bytes + 1)
            if len(data) > record.max_bytes:
                raise _too_large(record)
            size = len(data)
            ingest = _ingest_batch(data, record.max_bytes)
            store.put_bytes(key, data)
            stored_keys.append(key)
            stored_key: str | None = key
        else:
            part.file.seek(0, 2)
            size = part.file.tell()
            if size > record.max_bytes:
                raise _too_large(record)
            part.file.seek(0)
            ingest = _ingest_videos(state, part.file, f"videos/{attempt}", stored_keys)
            # The unpacked videos and their metadata are what is kept (and served); the archive
            # would be a second copy of them (new files are what this endpoint spends most on).
            stored_key = None
        marked = {
            "file_id": record.id,
            "storage_key": stored_key,
            "size": size,
            "uploaded": utcnow(),
            "ingest": ingest,
        }
        done = state.db.write_one(_MARK_UPLOADED, marked)
        if not done:
            raise ApiError(409, f"The upload URL of {record.id} was already used.", "file")
    except BaseException:
        for k in stored_keys:
            store.delete(k)
        raise


def _ingest_batch(data: bytes, max_bytes: int) -> dict[str, Any]:
    try:
        batch = validate_episode_batch(data, max_bytes)
    except IngestError as e:
        raise ApiError(e.status, e.detail, e.param) from None
    return {"episodes": len(batch.episode_lengths)}


def _ingest_videos(state: ServerState, archive: Any, prefix: str, stored_keys: list[str]) -> dict[str, Any]:
    """Validate a video archive (a path or a binary file) and store its videos and metadata under ``prefix``."""
    cfg = state.config
    limits = ArchiveLimits(
        max_member_bytes=cfg.max_archive_member_bytes, max_expanded_bytes=cfg.max_archive_expanded_bytes
    )
    with WorkDir() as workdir:
        try:
            videos = validate_video_archive(archive, workdir, limits, cfg.ffprobe)
        except IngestError as e:
            raise ApiError(e.status, e.detail, e.param) from None
        described = []
        for v in videos:
            # ``prefix.name``, not ``prefix/name``: a folder per upload would be one more new inode
            key, meta_key = f"{prefix}.{v.name}", f"{prefix}.{v.metadata_name}"
            for k, member in ((key, v.video), (meta_key, v.metadata_member)):
                if member.data is not None:
                    state.store.put_bytes(k, member.data)
                else:
                    assert member.path is not None
                    state.store.put_file(k, member.path)
                stored_keys.append(k)
            described.append(v.describe(key, meta_key))
    return {"videos": described}


# --------------------------------------------------------------------------------------------------
# Algorithms
# --------------------------------------------------------------------------------------------------


def algorithm_object(base: str, alg: Algorithm | None, owner: str | None = None) -> dict[str, Any] | None:
    if alg is None:
        return None
    return {
        "object": "algorithm",
        "id": alg.id,
        "name": alg.name,
        "description": alg.description,
        "writeup": alg.writeup,
        "owner": owner,
        "created": iso(alg.created),
        "web_url": f"{base}{protocol.algorithm_web_path(alg.id)}",
    }


#: (database URL, user seq, ref) -> the algorithm found; algorithms are never renamed or deleted,
#: so a found one stays right (an upload names the same algorithm again and again)
_known_algorithms: dict[tuple[str, int, str], Algorithm] = {}


def find_algorithm(conn: sa.Connection, principal: Principal, ref: str) -> Algorithm | None:
    """The caller's algorithm with id ``ref``, else named ``ref``, else None."""
    cache_key = (str(conn.engine.url), principal.user_seq, ref)
    known = _known_algorithms.get(cache_key)
    if known is not None:
        return known
    row = conn.execute(_ALGORITHM_BY_ID_OR_NAME, {"user_seq": principal.user_seq, "ref": ref}).first()
    if row is None:
        return None
    if len(_known_algorithms) > 10_000:
        _known_algorithms.clear()
    found = _known_algorithms[cache_key] = from_row(Algorithm, row)
    return found


def resolve_algorithm(session: Session, principal: Principal, ref: str | None) -> Algorithm | None:
    """An algorithm of the caller by id, else by name, else a new one named ``ref`` (2017 semantics)."""
    if not ref:
        return None
    found = find_algorithm(session.connection(), principal, ref)
    if found is not None:
        return found
    alg = Algorithm(id=new_id("algorithm"), user_seq=principal.user_seq, name=ref)
    session.add(alg)
    session.flush()
    return alg


@router.post("/algorithms", tags=["algorithms"], status_code=201, response_model=protocol.AlgorithmObject)
def create_algorithm(
    body: protocol.AlgorithmCreate,
    request: Request,
    principal: Principal = Depends(require_user),
    state: ServerState = Depends(get_state),
) -> Response:
    """Create an algorithm (its name is unique per user)."""
    base = base_url(state, request)

    def create(session: Session) -> tuple[int, dict[str, Any]]:
        existing = session.scalar(
            sa.select(Algorithm).where(Algorithm.name == body.name, Algorithm.user_seq == principal.user_seq)
        )
        if existing is not None:
            raise ApiError(409, f"You already have an algorithm named {body.name!r} ({existing.id}).", "name")
        alg = Algorithm(
            id=new_id("algorithm"),
            user_seq=principal.user_seq,
            name=body.name,
            description=body.description,
            writeup=body.writeup,
        )
        session.add(alg)
        session.flush()
        obj = algorithm_object(base, alg, principal.user_name)
        assert obj is not None
        return 201, obj

    return idempotent_create(state, request, principal, body_hash(body), create)


@router.get("/algorithms/{algorithm_id}", tags=["algorithms"], response_model=protocol.AlgorithmObject)
def get_algorithm(algorithm_id: str, request: Request, state: ServerState = Depends(get_state)) -> Response:
    with state.db.read() as session:
        row = session.execute(
            sa.select(Algorithm, User.name)
            .join(User, User.seq == Algorithm.user_seq)
            .where(Algorithm.id == algorithm_id)
        ).first()
    if row is None:
        raise not_found("algorithm", algorithm_id)
    return JSONResponse(algorithm_object(base_url(state, request), row[0], row[1]))


@router.get("/algorithms", tags=["algorithms"], response_model=protocol.ListPage[protocol.AlgorithmObject])
def list_algorithms(request: Request, state: ServerState = Depends(get_state)) -> Response:
    """Algorithms, newest first (filter: ``owner``)."""
    params, extra = list_params(request)
    base = base_url(state, request)
    query = sa.select(Algorithm, User.name).join(User, User.seq == Algorithm.user_seq)
    query = filtered(query, extra, {"owner": User.name})
    with state.db.read() as session:
        body = page(
            session,
            Algorithm,
            query,
            params,
            f"{protocol.API_PREFIX}/algorithms",
            lambda r: algorithm_object(base, r[0], r[1]) or {},
        )
    return JSONResponse(body)


# --------------------------------------------------------------------------------------------------
# Benchmark runs
# --------------------------------------------------------------------------------------------------


def _run_query() -> Any:
    return (
        sa.select(BenchmarkRun, Algorithm, User.name)
        .join(User, User.seq == BenchmarkRun.user_seq)
        .outerjoin(Algorithm, Algorithm.seq == BenchmarkRun.algorithm_seq)
    )


def benchmark_run_object(
    session: Session, base: str, run: BenchmarkRun, alg: Algorithm | None, owner: str | None
) -> dict[str, Any]:
    evaluations = list(
        session.scalars(
            sa.select(Evaluation.id).where(Evaluation.benchmark_run_seq == run.seq).order_by(Evaluation.seq)
        )
    )
    return {
        "object": "benchmark_run",
        "id": run.id,
        "benchmark_id": run.benchmark_id,
        "algorithm": algorithm_object(base, alg, owner),
        "tags": run.tags or {},
        "status": run.status,
        "evaluations": evaluations,
        "score": run.score,
        "owner": owner,
        "created": iso(run.created),
        "committed": iso(run.committed),
        "web_url": f"{base}{protocol.benchmark_run_web_path(run.id)}",
    }


@router.post(
    "/benchmark_runs", tags=["benchmark runs"], status_code=201, response_model=protocol.BenchmarkRunObject
)
def create_benchmark_run(
    body: protocol.BenchmarkRunCreate,
    request: Request,
    principal: Principal = Depends(require_user),
    state: ServerState = Depends(get_state),
) -> Response:
    """Start a benchmark run (any ``benchmark_id``; ``tags`` as a JSON string, as the 2017 client sends)."""
    base = base_url(state, request)

    def create(session: Session) -> tuple[int, dict[str, Any]]:
        alg = resolve_algorithm(session, principal, body.algorithm_id)
        run = BenchmarkRun(
            id=new_id("benchmark_run"),
            user_seq=principal.user_seq,
            benchmark_id=body.benchmark_id,
            algorithm_seq=alg.seq if alg else None,
            tags=body.tags or {},
        )
        session.add(run)
        session.flush()
        return 201, benchmark_run_object(session, base, run, alg, principal.user_name)

    return idempotent_create(state, request, principal, body_hash(body), create)


def _own_run(session: Session, principal: Principal, run_id: str, param: str = NO_PARAM) -> BenchmarkRun:
    run = session.scalar(_RUN_BY_ID, {"run_id": run_id})
    if run is None or run.user_seq != principal.user_seq:
        raise not_found("benchmark run", run_id, param)
    return run


def _render_run(state: ServerState, request: Request, run_id: str) -> dict[str, Any]:
    with state.db.read() as session:
        row = session.execute(_run_query().where(BenchmarkRun.id == run_id)).first()
        if row is None:
            raise not_found("benchmark run", run_id)
        return benchmark_run_object(session, base_url(state, request), row[0], row[1], row[2])


@router.get("/benchmark_runs/{run_id}", tags=["benchmark runs"], response_model=protocol.BenchmarkRunObject)
def get_benchmark_run(run_id: str, request: Request, state: ServerState = Depends(get_state)) -> Response:
    return JSONResponse(_render_run(state, request, run_id))


@router.get(
    "/benchmark_runs", tags=["benchmark runs"], response_model=protocol.ListPage[protocol.BenchmarkRunObject]
)
def list_benchmark_runs(request: Request, state: ServerState = Depends(get_state)) -> Response:
    """Benchmark runs, newest first (filters: ``benchmark_id``, ``owner``, ``status``)."""
    params, extra = list_params(request)
    base = base_url(state, request)
    query = filtered(
        _run_query(),
        extra,
        {"benchmark_id": BenchmarkRun.benchmark_id, "owner": User.name, "status": BenchmarkRun.status},
    )
    with state.db.read() as session:
        body = page(
            session,
            BenchmarkRun,
            query,
            params,
            f"{protocol.API_PREFIX}/benchmark_runs",
            lambda r: benchmark_run_object(session, base, r[0], r[1], r[2]),
        )
    return JSONResponse(body)


@router.post("/benchmark_runs/{run_id}", tags=["benchmark runs"], response_model=protocol.BenchmarkRunObject)
def update_benchmark_run(
    run_id: str,
    body: protocol.BenchmarkRunUpdate,
    request: Request,
    principal: Principal = Depends(require_user),
    state: ServerState = Depends(get_state),
) -> Response:
    """Change a run's algorithm or tags (the 2017 ``save()``)."""
    with state.db.write() as session:
        run = _own_run(session, principal, run_id)
        if body.algorithm_id is not None:
            alg = resolve_algorithm(session, principal, body.algorithm_id)
            run.algorithm_seq = alg.seq if alg else None
        if body.tags is not None:
            run.tags = body.tags
    return JSONResponse(_render_run(state, request, run_id))


@router.post(
    "/benchmark_runs/{run_id}/commit", tags=["benchmark runs"], response_model=protocol.BenchmarkRunObject
)
def commit_benchmark_run(
    run_id: str,
    request: Request,
    principal: Principal = Depends(require_user),
    state: ServerState = Depends(get_state),
) -> Response:
    """Close a run to new evaluations and score it (committing twice is harmless)."""
    with state.db.write() as session:
        run = _own_run(session, principal, run_id)
        if run.status != "committed":
            run.status, run.committed = "committed", utcnow()
    benchmarking.score_run(state, run_id)
    return JSONResponse(_render_run(state, request, run_id))


# --------------------------------------------------------------------------------------------------
# Evaluations
# --------------------------------------------------------------------------------------------------


def _evaluation_query() -> Any:
    return (
        sa.select(Evaluation, Algorithm, BenchmarkRun.id, User.name)
        .join(User, User.seq == Evaluation.user_seq)
        .outerjoin(Algorithm, Algorithm.seq == Evaluation.algorithm_seq)
        .outerjoin(BenchmarkRun, BenchmarkRun.seq == Evaluation.benchmark_run_seq)
    )


def evaluation_object(
    base: str, ev: Evaluation, alg: Algorithm | None, run_id: str | None, owner: str | None
) -> dict[str, Any]:
    entry = catalogue.lookup(ev.env_id) if ev.env_id else None
    return {
        "object": "evaluation",
        "id": ev.id,
        "env": ev.env_id,
        "env_listed": ev.env_listed,
        "env_group": entry.group if entry else None,
        "algorithm": algorithm_object(base, alg, owner),
        "benchmark_run_id": run_id,
        "writeup": ev.writeup,
        "gym_version": ev.gym_version,
        "training_episode_batch": ev.training_episode_batch,
        "training_video": ev.training_video,
        "owner": owner,
        "score": {
            "episode_t_value": ev.episode_t_value,
            "timestep_t_value": ev.timestep_t_value,
            "mean": ev.mean,
            "error": ev.error,
            "number_episodes": ev.number_episodes,
            "number_timesteps": ev.number_timesteps,
            "seconds_to_solve": ev.seconds_to_solve,
            "seconds_in_total": ev.seconds_in_total,
            "trials": ev.trials,
            "reward_threshold": ev.reward_threshold,
            "solved": ev.solved,
        },
        "videos": [
            {k: v[k] for k in ("name", "metadata_name", "episode_id", "content_type", "size")}
            for v in (ev.videos or [])
        ],
        "created": iso(ev.created),
        "web_url": f"{base}{protocol.evaluation_web_path(ev.id)}",
    }


def _file_for_evaluation(
    state: ServerState,
    record: FileRecord | None,
    principal: Principal,
    file_id: str,
    purpose: str,
    param: str,
) -> FileRecord:
    """``record`` (the file ``file_id``, looked up by the caller) checked for use by a new evaluation."""
    if record is None or record.user_seq != principal.user_seq:
        raise not_found("file", file_id, param)
    if record.purpose != purpose:
        raise ApiError(
            400,
            f"{param} must be a file uploaded with purpose {purpose!r}; {file_id} has purpose "
            f"{record.purpose!r}.",
            param,
        )
    if record.evaluation_id is not None:
        raise ApiError(
            409,
            f"File {file_id} already belongs to evaluation {record.evaluation_id}; upload the "
            "data again for a new evaluation.",
            param,
        )
    if record.status != "uploaded":
        if record.storage_key is None or isinstance(state.store, FileStore):
            raise ApiError(
                400,
                f"File {file_id} has no content yet: POST its post_fields and the file to its "
                "post_url first.",
                param,
            )
        size = state.store.size(record.storage_key)
        if size is None:
            raise ApiError(
                400,
                f"File {file_id} has no content yet: POST its post_fields and the file to its "
                "post_url first.",
                param,
            )
        if size > record.max_bytes:
            raise ApiError(
                413, f"File {file_id} is {size} bytes; this server accepts at most {record.max_bytes}.", param
            )
        record.size = size
    return record


def _ingest_remote(state: ServerState, record: FileRecord, param: str) -> tuple[dict[str, Any], bytes | None]:
    """Fetch and validate a file the server has not seen yet (uploaded straight to S3)."""
    assert record.storage_key is not None
    try:
        if record.purpose == "episode_batch":
            data = state.store.get_bytes(record.storage_key)
            return _ingest_batch(data, record.max_bytes), data
        with tempfile.TemporaryDirectory(prefix="palaestra-ingest-") as tmp:
            local = Path(tmp) / "upload"
            state.store.download(record.storage_key, local)
            return _ingest_videos(state, local, f"videos/{record.id}.ingest", []), None
    except BlobNotFound:
        raise ApiError(400, f"File {record.id} has no content yet.", param) from None
    except ApiError as e:
        raise ApiError(e.status, e.detail, param) from None


@router.post("/evaluations", tags=["evaluations"], status_code=201, response_model=protocol.EvaluationObject)
async def create_evaluation(
    body: protocol.EvaluationCreate,
    request: Request,
    principal: Principal = Depends(require_user),
    state: ServerState = Depends(get_state),
) -> Response:
    """Create an evaluation from uploaded files; scored on ingest; atomic."""
    return await run_blocking(state, _create_evaluation, body, request, principal, state)


def _create_evaluation(
    body: protocol.EvaluationCreate, request: Request, principal: Principal, state: ServerState
) -> Response:
    if not body.env:
        raise ApiError(
            400, "Missing required parameter 'env' (the env id the episodes were recorded on).", "env"
        )
    base = base_url(state, request)
    key = request.headers.get(protocol.IDEMPOTENCY_HEADER)
    if key is not None:
        with state.db.connect() as conn:
            row = conn.execute(_IDEMPOTENCY_KEY, {"user_seq": principal.user_seq, "key": key}).first()
        found = None if row is None else from_row(IdempotencyKey, row)
        if found is not None:
            return _replay(found, f"{request.method} {request.url.path}", body_hash(body))

    # 1. Check the references and ingest the data, outside the write transaction.
    batch_record = video_record = None
    run_seq: int | None = None
    algorithm_ref = body.algorithm.id if body.algorithm else None
    known_algorithm: Algorithm | None = None
    with state.db.read() as session:
        conn = session.connection()
        if algorithm_ref:  # looked up here, so that the transaction only creates a new one
            known_algorithm = find_algorithm(conn, principal, algorithm_ref)
        file_ids = [i for i in (body.training_episode_batch, body.training_video) if i]
        files = _files(conn, file_ids) if file_ids else {}
        if body.training_episode_batch:
            batch_record = _file_for_evaluation(
                state,
                files.get(body.training_episode_batch),
                principal,
                body.training_episode_batch,
                "episode_batch",
                "training_episode_batch",
            )
        if body.training_video:
            video_record = _file_for_evaluation(
                state, files.get(body.training_video), principal, body.training_video, "video", "training_video"
            )
        benchmark_id = None
        if body.benchmark_run_id:
            run = _own_run(session, principal, body.benchmark_run_id, "benchmark_run_id")
            if run.status == "committed":
                raise ApiError(
                    409,
                    f"Benchmark run {run.id} was committed; start a new run to upload more.",
                    "benchmark_run_id",
                )
            run_seq, benchmark_id = run.seq, run.benchmark_id

    updates: dict[str, dict[str, Any]] = {}
    batch = None
    data: bytes | None = None
    if batch_record is not None:
        if batch_record.status != "uploaded":
            ingest, data = _ingest_remote(state, batch_record, "training_episode_batch")
            updates[batch_record.id] = {"ingest": ingest, "size": batch_record.size, "status": "uploaded"}
        if data is None:
            assert batch_record.storage_key is not None
            try:
                data = state.store.get_bytes(batch_record.storage_key)
            except BlobNotFound:
                raise ApiError(
                    400,
                    f"The content of {batch_record.id} is missing from the store; upload it again.",
                    "training_episode_batch",
                ) from None
        try:
            batch = validate_episode_batch(data, batch_record.max_bytes)
        except IngestError as e:
            raise ApiError(e.status, e.detail, "training_episode_batch") from None
    videos: list[Any] = []
    if video_record is not None:
        video_ingest = video_record.ingest
        if video_record.status != "uploaded":
            video_ingest, _ = _ingest_remote(state, video_record, "training_video")
            updates[video_record.id] = {
                "ingest": video_ingest,
                "size": video_record.size,
                "status": "uploaded",
            }
        videos = list((video_ingest or {}).get("videos", []))

    scored = score_batch(batch, body.env, body.gym_version)
    evaluation_id = new_id("evaluation")
    batch_key = None
    bench_score = None
    if batch is not None:
        assert batch_record is not None
        # The evaluation points at the uploaded batch; readers add env_id and the first reset time
        # (ingest.stored_batch_document).
        batch_key = batch_record.storage_key
        if benchmark_id:
            bench_score = benchmarking.score_evaluation(benchmark_id, body.env, batch.enriched(body.env))

    columns = scored.columns()
    if columns.get("graph_stats") is not None:
        columns["graph_stats"] = RawJSON(json.dumps(columns["graph_stats"]))  # not while holding the lock

    # 2. One transaction: the evaluation, its files, the env aggregates, the idempotency record.
    def create(session: Session) -> tuple[int, dict[str, Any]]:
        alg = known_algorithm or resolve_algorithm(session, principal, algorithm_ref)
        now = utcnow()
        values = {
            "id": evaluation_id,
            "user_seq": principal.user_seq,
            "env_id": body.env,
            "env_listed": scored.listed,
            "algorithm_seq": alg.seq if alg else None,
            "benchmark_run_seq": run_seq,
            "writeup": body.writeup,
            "gym_version": body.gym_version,
            "training_episode_batch": body.training_episode_batch,
            "training_video": body.training_video,
            "episode_batch_key": batch_key,
            "videos": videos,
            "benchmark_score": bench_score,
            "created": now,
            **columns,
        }
        session.connection().execute(_INSERT_EVALUATION, values)
        ev = snapshot(Evaluation, values)  # for the response
        records = [r for r in (batch_record, video_record) if r is not None]
        claimed = 0
        for record in records:
            if record.id in updates:
                claim: Any = (
                    sa.update(FileRecord)
                    .where(FileRecord.id == record.id, FileRecord.evaluation_id.is_(None))
                    .values(evaluation_id=evaluation_id, **updates[record.id])
                )
                claimed += session.execute(claim).rowcount  # type: ignore[attr-defined]
        uploaded = [r.id for r in records if r.id not in updates]
        if uploaded:  # one statement for both files: the write lock is held meanwhile
            params = {"file_ids": uploaded, "evaluation_id": evaluation_id}
            claimed += session.connection().execute(_CLAIM_FILES, params).rowcount
        if claimed != len(records):
            taken = _taken_file(session, records, evaluation_id)
            param = "training_video" if taken is video_record else "training_episode_batch"
            raise ApiError(409, f"File {taken.id} was used by another evaluation meanwhile.", param)
        if run_seq is not None:
            status = session.scalar(sa.select(BenchmarkRun.status).where(BenchmarkRun.seq == run_seq))
            if status == "committed":
                raise ApiError(
                    409, f"Benchmark run {body.benchmark_run_id} was committed meanwhile.", "benchmark_run_id"
                )
        upsert_env_stats(
            session,
            body.env or "",
            scored.group,
            scored.listed,
            scored.stats["mean"],
            scored.solved,
            evaluation_id,
            now,
        )
        return 201, evaluation_object(base, ev, alg, body.benchmark_run_id, principal.user_name)

    response = idempotent_create(state, request, principal, body_hash(body), create)
    if body.benchmark_run_id and not response.headers.get("Idempotent-Replayed"):
        benchmarking.score_run(state, body.benchmark_run_id)
    return response


@router.get("/evaluations/{evaluation_id}", tags=["evaluations"], response_model=protocol.EvaluationObject)
def get_evaluation(evaluation_id: str, request: Request, state: ServerState = Depends(get_state)) -> Response:
    with state.db.read() as session:
        row = session.execute(_evaluation_query().where(Evaluation.id == evaluation_id)).first()
    if row is None:
        raise not_found("evaluation", evaluation_id)
    return JSONResponse(evaluation_object(base_url(state, request), *row))


@router.get("/evaluations", tags=["evaluations"], response_model=protocol.ListPage[protocol.EvaluationObject])
def list_evaluations(request: Request, state: ServerState = Depends(get_state)) -> Response:
    """Evaluations, newest first (filters: ``env``, ``algorithm``, ``benchmark_run_id``, ``owner``)."""
    params, extra = list_params(request)
    base = base_url(state, request)
    query = filtered(
        _evaluation_query(),
        extra,
        {
            "env": Evaluation.env_id,
            "algorithm": Algorithm.id,
            "benchmark_run_id": BenchmarkRun.id,
            "owner": User.name,
        },
    )
    with state.db.read() as session:
        body = page(
            session,
            Evaluation,
            query,
            params,
            f"{protocol.API_PREFIX}/evaluations",
            lambda r: evaluation_object(base, *r),
        )
    return JSONResponse(body)


# --------------------------------------------------------------------------------------------------
# Environments
# --------------------------------------------------------------------------------------------------


def env_object(env_id: str, stats: EnvStats | None) -> dict[str, Any]:
    entry = catalogue.lookup(env_id)
    return {
        "object": "env",
        "id": env_id,
        "listed": entry is not None,
        "group": entry.group if entry else None,
        "summary": entry.summary if entry else None,
        "reward_threshold": entry.reward_threshold if entry else None,
        "trials": entry.trials if entry else protocol.EvaluationScore().trials,
        "solving_rule": entry.solving_rule if entry else None,
        "evaluation_count": stats.evaluation_count if stats else 0,
        "solved_count": stats.solved_count if stats else 0,
        "best_mean": stats.best_mean if stats else None,
        "best_evaluation_id": stats.best_evaluation_id if stats else None,
    }


@router.get("/envs", tags=["envs"])
def list_envs(request: Request, state: ServerState = Depends(get_state)) -> Response:
    """Known environments (``group`` filter) and every env id that has evaluations, with aggregates."""
    params = query_params(request)
    group = params.get("group")
    with state.db.read() as session:
        stats = {s.env_id: s for s in session.scalars(sa.select(EnvStats))}
    try:
        ids = [e.env_id for e in catalogue.entries(group=str(group) if group else None)]
    except ValueError as e:
        raise ApiError(400, str(e), "group") from None
    ids += sorted(k for k, s in stats.items() if k not in set(ids) and (not group or s.group_id == group))
    data = [env_object(i, stats.get(i)) for i in ids]
    return JSONResponse(
        {"object": "list", "url": f"{protocol.API_PREFIX}/envs", "data": data, "has_more": False}
    )


@router.get("/groups", tags=["envs"])
def list_groups() -> Response:
    """The scoreboard's env groups (spec §4.5) and the env ids of each."""
    data = [
        {
            "object": "group",
            "id": g.id,
            "name": g.name,
            "description": g.description,
            "envs": [e.env_id for e in catalogue.entries(group=g.id)],
        }
        for g in catalogue.GROUPS
    ]
    return JSONResponse(
        {"object": "list", "url": f"{protocol.API_PREFIX}/groups", "data": data, "has_more": False}
    )


@router.get("/envs/{env_id}", tags=["envs"])
def get_env(env_id: str, state: ServerState = Depends(get_state)) -> Response:
    with state.db.read() as session:
        stats = session.get(EnvStats, env_id)
    if stats is None and catalogue.lookup(env_id) is None:
        raise not_found("environment", env_id)
    return JSONResponse(env_object(env_id, stats))
