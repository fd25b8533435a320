"""Jinja2 rendering of the web pages: one environment, autoescaping on, a few formatting filters.

Every user-supplied string reaches the HTML through autoescaping; a URL that a user supplied (a
writeup) is only made a link when it is ``http(s)``. Responses carry a Content-Security-Policy that
allows scripts from this server only, so even a string that escaped escaping could not run.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jinja2
import orjson
from fastapi import Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from palaestra.scoreboard.server.core.deps import state_of
from palaestra.scoreboard.server.web import assets, signin
from palaestra.solved_stats import short_mean_label

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

#: Scripts only from this server ('wasm-unsafe-eval' for asciinema-player's terminal emulator),
#: no inline scripts, no plugins, no framing; JSON data blocks are not scripts and still work.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; media-src 'self' blob:; worker-src 'self' blob:; connect-src 'self'; "
    "font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
#: A page for one browser (a signed-in user's, or with a form's CSRF token): no shared cache keeps it.
PRIVATE_HEADERS = {"Cache-Control": "no-store"}


#: Groups thousands in every number on the pages, in tables and (static/common.js) in charts alike.
THOUSANDS_SEPARATOR = "\u2009"  # a thin space: neither a decimal point nor a comma in any locale


def fmt_number(value: Any, digits: int = 2) -> str:
    """A number for a page: integers whole, floats with ``digits`` decimals (trailing zeros kept),
    thousands grouped by :data:`THOUSANDS_SEPARATOR` (``static/common.js`` formats the charts' ticks
    the same way)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}".replace(",", THOUSANDS_SEPARATOR)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if abs(x) >= 1e6:
        return f"{x:.4g}"
    return f"{x:,.{digits}f}".replace(",", THOUSANDS_SEPARATOR)


#: What must not appear raw in a <script type="application/json"> block (as jinja's htmlsafe_json_dumps).
_HTML_UNSAFE = ((b"&", b"\\u0026"), (b"<", b"\\u003c"), (b">", b"\\u003e"), (b"'", b"\\u0027"))


def json_block(value: Any) -> Markup:
    """``value`` as JSON that is safe inside a ``<script type="application/json">`` block: the pages'
    one way to hand data to their charts. orjson writes the compare page's ten curves in 12 ms where
    the ``tojson`` filter took 144 ms (bench/web_pages.py)."""
    data = orjson.dumps(value)
    for raw, escaped in _HTML_UNSAFE:
        data = data.replace(raw, escaped)
    return Markup(data.decode())


def fmt_iso(value: datetime | None) -> str:
    return value.isoformat() if value is not None else ""


def fmt_day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else ""


def safe_url(value: Any) -> str | None:
    """``value`` if it is an absolute http(s) URL (so it may be a link), else ``None``."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.scheme.lower() in ("http", "https") and parts.netloc and not any(c in text for c in "\r\n\t "):
        return text
    return None


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    env.filters["num"] = fmt_number
    env.filters["iso"] = fmt_iso
    env.filters["day"] = fmt_day
    env.filters["safe_url"] = safe_url
    env.filters["json_block"] = json_block
    env.globals["asset"] = assets.asset_url
    env.globals["vendor"] = assets.vendor_url
    env.globals["short_mean_label"] = short_mean_label
    return env


ENVIRONMENT = _environment()


def render(
    request: Request, template: str, status_code: int = 200, forms: bool = False, **context: Any
) -> HTMLResponse:
    """Render ``template`` with ``context`` as an HTML response, adding ``vendor_available``, ``nav``,
    the signed-in ``user`` and, for a signed-in user or a page with ``forms``, the ``csrf_token`` of
    its forms (a signed-out browser gets a pre-session cookie for it)."""
    context.setdefault("nav", "envs")
    context.setdefault("vendor_available", assets.vendor_available())
    context["read_only"] = state_of(request).config.read_only
    context["request_path"] = request.url.path
    context["request_target"] = _return_target(request)
    user = context["user"] = signin.signed_in(request)
    new_seed = None
    context["csrf_token"] = ""
    if forms or user is not None:
        context["csrf_token"], new_seed = signin.form_token(request)
    html = ENVIRONMENT.get_template(template).render(**context)
    headers = SECURITY_HEADERS if user is None and not forms else {**SECURITY_HEADERS, **PRIVATE_HEADERS}
    response = HTMLResponse(html, status_code=status_code, headers=headers)
    if new_seed is not None:
        signin.set_form_cookie(request, response, new_seed)
    return response


def _return_target(request: Request) -> str:
    """Where the header's "Sign in" link brings the reader back to: this page; on the sign-in page
    itself, the page it was opened for (its link once nested a sign-in page in its own ``next=``)."""
    if request.url.path == "/login":
        return signin.local_path(request.query_params.get("next"), "/")
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")
