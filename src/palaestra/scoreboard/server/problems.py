"""Error answers as the 2017 client parses them, and the ``request-id`` of every request.

Every non-2xx answer is JSON ``{"detail": ..., "type": ..., "status": ..., "request_id": ...}``
(:class:`palaestra.scoreboard.protocol.ErrorBody`) with a ``request-id`` header; ``type`` names the
offending parameter (the 2017 client shows it as ``InvalidRequestError.param``) or is
``"about:blank"``. A full disk or database is a 507 that says so (:func:`storage_full`); a database
outage is a 503 with ``Retry-After`` (:mod:`.guards.outage`). A handler raises :class:`Problem` (or
ingest raises :class:`~palaestra.scoreboard.server.evaluations.ingest.IngestError`); the error handlers
of :mod:`.guards.errors` turn either into that answer, and so every validation error and unexpected
exception.

This module is the document only, on the lowest floor, so that every floor can raise a problem.
"""

from __future__ import annotations

import errno
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from palaestra.scoreboard.protocol import NO_PARAM

TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
    507: "Insufficient Storage",
}

#: errno values of a full disk (or a full quota), as writes of blobs and temporary files raise them
STORAGE_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
#: SQLSTATE of PostgreSQL's disk_full
_PG_DISK_FULL = "53100"


def storage_full(exc: BaseException) -> str | None:
    """Which storage ``exc`` (or an exception it wraps) says is full: ``"disk"`` (a blob or temporary
    file could not be written), ``"database"`` (SQLite's "database or disk is full", PostgreSQL's
    disk_full), or ``None`` if it is some other failure."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in STORAGE_FULL_ERRNOS:
            return "disk"
        if "database or disk is full" in str(current) or getattr(current, "sqlstate", None) == _PG_DISK_FULL:
            return "database"
        current = getattr(current, "orig", None) or current.__cause__ or current.__context__
    return None


def storage_full_detail(which: str) -> str:
    where = "its database's disk" if which == "database" else "its disk for uploads"
    return (
        f"The server's storage is full ({where} has no space left): nothing of this request was stored. "
        "Retrying will not help until the server's operator makes room."
    )


class Problem(Exception):
    """Raise in a handler to answer ``status`` with ``detail`` (and ``param`` as the error ``type``)."""

    def __init__(
        self, status: int, detail: str, param: str = NO_PARAM, headers: dict[str, str] | None = None
    ):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.param = param
        self.headers = headers or {}


def request_id(request: Request) -> str:
    rid = request.scope.get("state", {}).get("request_id")
    return str(rid) if rid else ""


def problem_body(request: Request, status: int, detail: str, param: str = NO_PARAM) -> dict[str, Any]:
    """The error document (:class:`~palaestra.scoreboard.protocol.ErrorBody`) of an answer."""
    return problem_body_for(status, detail, request_id(request), param)


def problem_body_for(status: int, detail: str, rid: str, param: str = NO_PARAM) -> dict[str, Any]:
    return {
        "detail": detail,
        "type": param,
        "status": status,
        "title": TITLES.get(status, "Error"),
        "request_id": rid or None,
    }


def error_response(
    request: Request, status: int, detail: str, param: str = NO_PARAM, headers: dict[str, str] | None = None
) -> JSONResponse:
    return problem_response(status, detail, request_id(request), param, headers)


def problem_response(
    status: int, detail: str, rid: str, param: str = NO_PARAM, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(problem_body_for(status, detail, rid, param), status_code=status, headers=headers)


def not_found(kind: str, object_id: str, param: str = NO_PARAM) -> Problem:
    """The 404 of a ``kind`` (``"file"``, ``"benchmark run"``) that does not exist, or is not the caller's."""
    return Problem(404, f"No such {kind}: {object_id!r}.", param)
