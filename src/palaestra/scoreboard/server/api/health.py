"""``GET /v1/health``: for load balancers and ``palaestra demo``. 200 when the database and the blob
store both pass a probe (a small write read back; on a read-only archive, a read) and, on a board that
takes uploads, each disk has room for the largest upload (:mod:`..guards.free_space`), else 503 naming the part
that failed; ``mode`` says whether the board is a read-only archive (:mod:`..guards.readonly`)."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.api.deps import State
from palaestra.scoreboard.server.core import migrate
from palaestra.scoreboard.server.core.answers import answer
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import HEALTH_PREFIX
from palaestra.scoreboard.server.guards import readonly
from palaestra.scoreboard.server.guards.free_space import database_free_bytes, space_problem, store_free_bytes
from palaestra.scoreboard.server.problems import problem_body, storage_full, storage_full_detail
from palaestra.scoreboard.server.tables.base import utcnow
from palaestra.scoreboard.server.tables.service import ServerSetting

__all__ = ["router"]

router = APIRouter(tags=["service"])
logger = logging.getLogger("palaestra.scoreboard")

#: The ``server_settings`` row every probe writes and reads back.
PROBE_SETTING = "health_probe"

_UPDATE_PROBE = (
    sa.update(ServerSetting).where(ServerSetting.key == PROBE_SETTING).values(value=sa.bindparam("value"))
)
_INSERT_PROBE = sa.insert(ServerSetting).values(key=PROBE_SETTING, value=sa.bindparam("value"))
_READ_PROBE = sa.select(ServerSetting.value).where(ServerSetting.key == PROBE_SETTING)


@router.get("/health", response_model=protocol.HealthObject)
def health(request: Request, state: State) -> Response:
    """200 when the database and the blob store each write and read back a probe (a read-only archive:
    read one) and have room for the largest upload (a read-only archive takes none); 503 otherwise."""
    read_only = state.config.read_only
    probes = (_read_database, _read_store) if read_only else (_probe_database, _probe_store)
    room = (_no_room_needed, _no_room_needed) if read_only else (database_free_bytes, store_free_bytes)
    checks = {
        "database": _check("database", probes[0], room[0], state),
        "blob_store": _check("blob_store", probes[1], room[1], state),
    }
    failed = {part: problem for part, problem in checks.items() if problem != "ok"}
    mode = readonly.mode_name(read_only)
    if not failed:
        return answer(protocol.HealthObject(schema_revision=migrate.SCHEMA_HEAD, checks=checks, mode=mode))
    detail = "Unhealthy: " + "; ".join(f"{_NAMES[part]} {why}" for part, why in failed.items())
    body = {**problem_body(request, 503, detail + "."), "checks": checks, "mode": mode}
    return JSONResponse(body, status_code=503, headers={"Retry-After": "5"})


_NAMES = {"database": "the database", "blob_store": "the blob store"}


def _check(
    part: str,
    probe: Callable[[ServerState], None],
    free_bytes: Callable[[ServerState], int | None],
    state: ServerState,
) -> str:
    """``"ok"`` or what went wrong, in one line: a failed probe, or a disk with too little room for
    the largest upload, is logged without a traceback."""
    try:
        probe(state)
        problem = space_problem(free_bytes(state), state.config.needed_free_bytes())
    except Exception as e:
        which = storage_full(e)
        why = storage_full_detail(which) if which else f"{type(e).__name__}: {_first_line(e)}"
        problem = f"failed its probe ({why})"
    if problem is None:
        return "ok"
    logger.warning("Health check failed: %s %s", _NAMES[part], problem)
    return problem


def _no_room_needed(state: ServerState) -> None:
    """A read-only archive stores nothing, so no free space is asked of its disks."""
    return None


def _probe_database(state: ServerState) -> None:
    value = utcnow().isoformat()
    if not state.db.write_one(_UPDATE_PROBE, {"value": value}):
        try:
            state.db.write_one(_INSERT_PROBE, {"value": value})
        except sa.exc.IntegrityError:  # another process inserted it first
            state.db.write_one(_UPDATE_PROBE, {"value": value})
    with state.db.connect() as conn:
        if conn.scalar(_READ_PROBE) is None:
            raise RuntimeError("the probe row written was not read back")


def _read_database(state: ServerState) -> None:
    readonly.probe_database(state.db)


def _read_store(state: ServerState) -> None:
    readonly.probe_store(state.store)


def _probe_store(state: ServerState) -> None:
    """A blob of its own per probe (concurrent probes cannot read each other's), removed after."""
    key = f"{HEALTH_PREFIX}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    data = utcnow().isoformat().encode()
    try:
        state.store.put_bytes(key, data)
        if state.store.get_bytes(key) != data:
            raise RuntimeError("the probe blob read back differs from the one written")
    finally:
        state.store.delete(key)


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else "no message"
