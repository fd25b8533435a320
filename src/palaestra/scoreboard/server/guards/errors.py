"""Every answer that is not a route's own: the problem documents (:mod:`..problems`) of errors, and the
request middleware.

- :func:`install`: the error handlers (a :class:`~..problems.Problem`, an ingest error, a validation
  error, an unknown route, a full disk or database: 507, an outage: 503, a value the database cannot
  store: 400) and :class:`RequestMiddleware`;
- :class:`RequestMiddleware`: every request's ``req_...`` id and access line (:mod:`..core.logs`), and
  an unexpected error answered with a 500 problem and logged once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palaestra.scoreboard.protocol import NO_PARAM, REQUEST_ID_HEADER
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.logs import ACCESS_LOGGER
from palaestra.scoreboard.server.evaluations.ingest import IngestError
from palaestra.scoreboard.server.guards.outage import (
    UNAVAILABLE_DETAIL,
    database_unavailable,
    unavailable_response,
)
from palaestra.scoreboard.server.problems import (
    Problem,
    error_response,
    problem_body_for,
    problem_response,
    request_id,
    storage_full,
    storage_full_detail,
)

__all__ = ["RequestMiddleware", "install"]

logger = logging.getLogger("palaestra.scoreboard")
access_logger = logging.getLogger(ACCESS_LOGGER)


def _validation_detail(exc: RequestValidationError) -> tuple[str, str]:
    errors = exc.errors()
    if not errors:
        return "The request is invalid.", NO_PARAM
    err = errors[0]
    loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path", "header")]
    param = loc[0] if loc else NO_PARAM
    where = ".".join(loc)
    msg = str(err.get("msg", "invalid"))
    if err.get("type") == "extra_forbidden":
        msg = f"Additional properties are not allowed ({where!r} was unexpected)"
        return msg, param
    if err.get("type") == "missing":
        return f"Missing required parameter {where!r}.", param
    if err.get("type") in ("json_invalid", "model_attributes_type", "dict_type") and not where:
        return "The request body must be a JSON object.", NO_PARAM
    return (f"Invalid parameter {where!r}: {msg}" if where else msg), param


def install(app: FastAPI) -> None:
    """Add the request middleware and the error handlers to ``app``."""

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> JSONResponse:
        return error_response(request, exc.status, exc.detail, exc.param, exc.headers)

    @app.exception_handler(IngestError)
    async def _ingest_error(request: Request, exc: IngestError) -> JSONResponse:
        return error_response(request, exc.status, exc.detail, exc.param)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail, param = _validation_detail(exc)
        return error_response(request, 400, detail, param)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"There is no {request.method} {request.url.path} in this API (see /openapi.json)."
            if request.url.path.startswith("/v1/v1/"):
                detail += " The client's server URL ends in /v1: drop the trailing /v1 (it adds /v1 itself)."
        if exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path} (see /openapi.json)."
        return error_response(request, exc.status_code, detail, headers=getattr(exc, "headers", None))

    async def _storage_fault(request: Request, exc: Exception) -> JSONResponse:
        """507 for a full disk or database; 400 for a value the database cannot store (PostgreSQL's
        data exceptions: a NUL character in a string, a number out of range); any other fault goes on
        to :class:`RequestMiddleware` (a 500, logged once)."""
        which = storage_full(exc)
        if which is not None:
            # one line, no traceback: the cause is known, and a full disk fails every request alike
            logger.error(
                "Storage full (%s) in %s %s (%s): %s",
                which,
                request.method,
                request.url.path,
                request_id(request),
                exc,
            )
            return error_response(request, 507, storage_full_detail(which))
        if database_unavailable(exc):
            return _unavailable(request.scope, request_id(request), exc)
        if isinstance(exc, sa.exc.DataError):
            reason = str(exc.orig or exc).strip().splitlines()[0]
            return error_response(
                request, 400, f"The request holds a value the server cannot store: {reason}."
            )
        raise exc

    app.add_exception_handler(OSError, _storage_fault)
    app.add_exception_handler(sa.exc.DBAPIError, _storage_fault)
    app.add_exception_handler(sa.exc.TimeoutError, _storage_fault)  # the connection pool's

    app.add_middleware(RequestMiddleware)


#: The answer to an unexpected error (the details are in the log, under the request id).
UNEXPECTED_DETAIL = (
    "The server failed to handle this request; it has been logged under the request id. "
    "Try again, and report it if it keeps happening."
)
#: The answer to a request still running when the server's graceful shutdown ran out of time.
CUT_OFF_DETAIL = "The server is shutting down and could not finish this request in time; send it again."


class RequestMiddleware:
    """Every request: a ``req_...`` id (``request.state.request_id`` and the ``request-id`` header),
    one access line, and an unexpected error answered with a 500 problem and logged once, with its
    traceback (handled here, it does not reach uvicorn, which would log it again)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = new_id("request", 10)
        scope.setdefault("state", {})["request_id"] = rid
        header = (REQUEST_ID_HEADER.encode(), rid.encode())
        started = time.perf_counter()
        status = 0
        outcome = "-"

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers: list[Any] = list(message.get("headers", []))
                headers.append(header)
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except asyncio.CancelledError:
            # uvicorn cancels what still runs when --graceful-timeout is over: an expected end, one
            # access line (below) and a 503 if it can still be sent, no traceback.
            if not status:
                await _answer_quietly(
                    problem_response(503, CUT_OFF_DETAIL, rid), scope, receive, send_with_id
                )
        except ClientDisconnect:
            outcome = "client gone"  # it went away mid-request: nobody to answer, nothing failed
        except Exception as e:
            if database_unavailable(e):  # raised where no exception handler sees it (a middleware)
                if not status:
                    await _answer_quietly(_unavailable(scope, rid, e), scope, receive, send_with_id)
                return
            logger.exception("Unexpected error in %s %s (%s)", scope["method"], scope["path"], rid)
            if not status:
                await _answer_quietly(
                    problem_response(500, UNEXPECTED_DETAIL, rid), scope, receive, send_with_id
                )
        finally:
            client = scope.get("client")
            access_logger.info(
                '%s "%s %s" %s %.1f ms %s',
                client[0] if client else "-",
                scope["method"],
                _shown_path(scope),
                status or outcome,
                (time.perf_counter() - started) * 1000,
                rid,
            )


def _unavailable(scope: Scope, rid: str, exc: BaseException) -> Any:
    """The 503 of a database outage, logged in one line (no traceback: every request fails alike)."""
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    logger.error(
        "Database unavailable in %s %s (%s): %s", scope["method"], scope["path"], rid, reason[0] if reason else exc
    )
    return unavailable_response(scope, rid, problem_body_for(503, UNAVAILABLE_DETAIL, rid))


async def _answer_quietly(response: JSONResponse, scope: Scope, receive: Receive, send: Send) -> None:
    """Send ``response`` unless the connection is gone already (then there is no one to answer)."""
    try:
        await response(scope, receive, send)
    except (OSError, RuntimeError, asyncio.CancelledError):
        pass


def _shown_path(scope: Scope) -> str:
    """The path and (up to 200 characters of) the query string."""
    query = scope.get("query_string", b"").decode("latin-1")
    path = str(scope.get("path", ""))
    return f"{path}?{query[:200]}" if query else path
