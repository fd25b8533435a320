"""The scoreboard's web pages: environments, leaderboards, evaluations, users, algorithms, benchmarks,
search, and the account pages (sign-in, ``/settings/profile``).

The app factory calls :func:`include`: the pages' routers (:mod:`.routes`, :mod:`.account_routes`),
the 403 page of a refused form (:class:`.signin.CsrfRefused`) and the static files. Pages are
server-rendered (Jinja2, autoescaped); the charts (uPlot) and terminal player (asciinema-player) are
npm packages from ``web/package.json``, built into ``static/vendor/`` when palaestra is packaged (setup.py).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse

from palaestra.scoreboard.server.web import (
    account_routes,
    agent_pages,
    benchmark_routes,
    downloads,
    ladder_pages,
    live_pages,
    routes,
)
from palaestra.scoreboard.server.web.assets import mount_static, vendor_available
from palaestra.scoreboard.server.web.render import render
from palaestra.scoreboard.server.web.signin import CsrfRefused

__all__ = ["include", "mount_static", "vendor_available"]

CSRF_REFUSAL = (
    "This form did not come from a page of this scoreboard opened in this browser session: its "
    "security (CSRF) token is missing or is not your session's, for instance after you signed in or "
    "out in another tab. Nothing was changed. Go back, reload the page and send the form again."
)


def include(app: FastAPI) -> None:
    """Add the pages, their 403 answer to a form without its CSRF token, and the static files to ``app``."""
    app.include_router(routes.router)
    app.include_router(downloads.router)
    app.include_router(benchmark_routes.router)
    app.include_router(account_routes.router)
    app.include_router(ladder_pages.router)
    app.include_router(live_pages.router)
    app.include_router(agent_pages.router)

    @app.exception_handler(CsrfRefused)
    async def _csrf_refused(request: Request, exc: CsrfRefused) -> HTMLResponse:
        return render(request, "error.html", status_code=403, title="Form refused", message=CSRF_REFUSAL)

    mount_static(app)
