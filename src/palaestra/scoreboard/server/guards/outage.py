"""A database outage is a 503 with ``Retry-After``, on every route, never a 500.

:func:`database_unavailable` (from :mod:`..core.outages`) tells an outage (the database cannot be reached, refuses connections,
was shut down, is locked past the busy timeout, cannot be opened or read, or the connection pool is
exhausted) from a fault of the request or of the code (those stay 400s and 500s). A full database is
not an outage but a 507 (:func:`..problems.storage_full`, checked first).

:func:`unavailable_response` is the answer: the JSON problem of the API for ``/v1`` and for clients
that do not ask for HTML, the scoreboard's error page for browsers. Either carries ``Retry-After``
(:data:`RETRY_AFTER_S`), which the upload client honours within its retry budget.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import HTMLResponse, Response

from palaestra.scoreboard.server.core.outages import database_unavailable

__all__ = ["RETRY_AFTER_S", "UNAVAILABLE_DETAIL", "database_unavailable", "unavailable_response"]

logger = logging.getLogger("palaestra.scoreboard")

#: Seconds a client is asked to wait before sending the request again.
RETRY_AFTER_S = 5
UNAVAILABLE_DETAIL = (
    "The scoreboard's database is unavailable just now: nothing of this request was stored. "
    f"Send it again in a few seconds (Retry-After: {RETRY_AFTER_S})."
)


def unavailable_response(scope: Any, rid: str, problem_body: dict[str, Any]) -> Response:
    """The 503 of an outage: ``problem_body`` as JSON, or the error page for a browser's page request."""
    headers = {"Retry-After": str(RETRY_AFTER_S)}
    if _wants_page(scope):
        return HTMLResponse(_page(), status_code=503, headers=headers)
    from fastapi.responses import JSONResponse

    return JSONResponse(problem_body, status_code=503, headers=headers)


def _wants_page(scope: Any) -> bool:
    path = str(scope.get("path", ""))
    if path.startswith("/v1/") or path == "/v1":
        return False
    accept = next((v for k, v in scope.get("headers", []) if k == b"accept"), b"")
    return b"text/html" in accept


def _page() -> str:
    """The error page, rendered without the database (no signed-in user, no form token)."""
    from palaestra.scoreboard.server.web import assets
    from palaestra.scoreboard.server.web.render import ENVIRONMENT

    return ENVIRONMENT.get_template("error.html").render(
        title="Temporarily unavailable",
        message=UNAVAILABLE_DETAIL,
        nav="envs",
        vendor_available=assets.vendor_available(),
        request_path="/",
        request_target="/",
        user=None,
        csrf_token="",
        read_only=False,  # the header's sign-in link; a read-only archive's outage page keeps it
    )
