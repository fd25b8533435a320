"""Read-only archive mode (``palaestra server --read-only``, ``PALAESTRA_READ_ONLY=1``): a frozen board.

- Every page, every ``/v1`` read and every download serves as before.
- Every write (a request with any method but GET, HEAD and OPTIONS: files, uploads, evaluations,
  benchmark runs, algorithms, sign-in and sign-out, key changes, invites) is answered by
  :class:`ReadOnlyMiddleware` with one problem document, :data:`READ_ONLY_DETAIL`, status
  :data:`READ_ONLY_STATUS`, before any handler runs; a browser's form gets the same words as a page.
- The server itself writes nothing either: no migration on start, no periodic gc, no upload secret
  created, no env picture cached, no rate-limit counter, and a health probe that only reads
  (:func:`probe_database`, :func:`probe_store`); ``palaestra server gc`` refuses to run.

Why 403: gym 0.9.4's client retries only connection errors and shows any HTTP error's ``detail``
once (``APIError``); palaestra's client retries 429 and the 5xx that may pass, so a 503 would keep it
retrying for its whole budget. 403 says "understood, and refused" to both, at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from palaestra.scoreboard.protocol import API_PREFIX
from palaestra.scoreboard.server.core import migrate

if TYPE_CHECKING:
    from palaestra.scoreboard.server.core.database import Database
    from palaestra.scoreboard.server.core.storage import BlobStore

__all__ = [
    "READ_ONLY_DETAIL",
    "READ_ONLY_STATUS",
    "ReadOnlyMiddleware",
    "mode_name",
    "probe_database",
    "probe_store",
]

READ_ONLY_STATUS = 403
READ_ONLY_DETAIL = (
    "This scoreboard is a read-only archive: it serves its pages, its /v1 reads and its downloads, "
    "and stores nothing new. Nothing of this request was stored; upload to a scoreboard that accepts uploads."
)
#: Methods that read: everything else is refused.
READING_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def mode_name(read_only: bool) -> Literal["read-only", "read-write"]:
    """The mode ``/v1/health`` reports: ``read-only`` or ``read-write``."""
    return "read-only" if read_only else "read-write"


class ReadOnlyMiddleware:
    """Answer every request that would write with the read-only problem, before routing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in READING_METHODS:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        response = _refusal_page(request) if _wants_page(request) else _refusal_problem(request)
        await response(scope, receive, send)


def _wants_page(request: Request) -> bool:
    """A browser's form (a page's POST, asking for HTML), not an API client."""
    return not request.url.path.startswith(API_PREFIX + "/") and "text/html" in request.headers.get("accept", "")


def _refusal_problem(request: Request) -> Response:
    from palaestra.scoreboard.server.problems import error_response

    return error_response(request, READ_ONLY_STATUS, READ_ONLY_DETAIL)


def _refusal_page(request: Request) -> Response:
    from palaestra.scoreboard.server.web.render import render

    return render(
        request, "error.html", status_code=READ_ONLY_STATUS, title="Read-only archive", message=READ_ONLY_DETAIL
    )


def probe_database(db: Database) -> None:
    """The read-only probe: the database answers, at the schema this server serves."""
    current = migrate.current_revision(db.engine)
    if current != migrate.SCHEMA_HEAD:
        raise RuntimeError(f"the schema revision read is {current}, not {migrate.SCHEMA_HEAD}")
    with db.connect() as conn:
        conn.scalar(sa.text("SELECT 1"))


def probe_store(store: BlobStore) -> None:
    """The read-only probe: the blob store answers a read (of a key no blob has)."""
    store.size("health/read-only-probe")
