"""Who is signed in, the cookies that say so, and the CSRF check of every form.

- :func:`signed_in`: the user of the request's session cookie (looked up once per request);
- :func:`set_session_cookie` / :func:`clear_session_cookie`: HttpOnly, SameSite=Lax, and Secure when
  the request came over HTTPS (as uvicorn saw it: a proxy's ``X-Forwarded-Proto`` counts only with
  ``palaestra server --trust-proxy``) or the server's ``--public-url`` is an https one;
- :func:`form_token`: the CSRF token the page's forms carry (:func:`.accounts.csrf_token` of the
  session's token, or of a pre-session cookie, :func:`set_form_cookie`, for signed-out forms);
- :data:`CsrfChecked`: the dependency every POST route of the pages takes; a missing or wrong token
  is :class:`CsrfRefused`, answered with a 403 page before the route runs.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import Response

from palaestra.scoreboard.server.accounts import sessions as accounts
from palaestra.scoreboard.server.core.deps import state_of

SESSION_COOKIE = "palaestra_session"
#: the CSRF seed of a browser that is not signed in (for the sign-in and invite forms)
FORM_COOKIE = "palaestra_form"
FORM_COOKIE_MAX_AGE_S = 24 * 3600
CSRF_FIELD = "csrf_token"

__all__ = [
    "CSRF_FIELD",
    "SESSION_COOKIE",
    "CsrfChecked",
    "CsrfRefused",
    "clear_session_cookie",
    "form_token",
    "local_path",
    "set_form_cookie",
    "set_session_cookie",
    "signed_in",
]


class CsrfRefused(Exception):
    """A POST whose CSRF token is missing or is not its session's."""


def signed_in(request: Request) -> accounts.SignedIn | None:
    """The user the request's session cookie signs in, or None (looked up once per request)."""
    if not hasattr(request.state, "signed_in"):
        token = request.cookies.get(SESSION_COOKIE)
        state = state_of(request)
        request.state.signed_in = accounts.session_user(state.db, token, state.clock) if token else None
    user: accounts.SignedIn | None = request.state.signed_in
    return user


def _is_https(request: Request) -> bool:
    """Whether browsers reach this server over HTTPS: the request came so (a trusted proxy's
    ``X-Forwarded-Proto`` included), or the configured public URL says so."""
    public_url = state_of(request).config.public_url or ""
    return request.url.scheme == "https" or public_url.startswith("https://")


def set_session_cookie(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=state_of(request).config.session_ttl_s,
        path="/",
        httponly=True,
        secure=_is_https(request),
        samesite="lax",
    )
    response.delete_cookie(FORM_COOKIE, path="/")


def clear_session_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, secure=_is_https(request), samesite="lax")


def _seed(request: Request) -> str | None:
    """What the browser's CSRF tokens derive from: its session cookie, else its pre-session cookie."""
    return request.cookies.get(SESSION_COOKIE) or request.cookies.get(FORM_COOKIE)


def form_token(request: Request) -> tuple[str, str | None]:
    """``(the CSRF token of this browser's forms, a new pre-session seed or None)``. A signed-out
    browser without a pre-session cookie gets a new seed, which the caller sets with
    :func:`set_form_cookie` on the page it answers."""
    seed = _seed(request)
    new_seed = None
    if seed is None:
        seed = new_seed = secrets.token_urlsafe(32)
    # the server's secret (the upload-signing one; accounts.csrf_token separates the two uses)
    return accounts.csrf_token(state_of(request).signing.keys.current, seed), new_seed


def set_form_cookie(request: Request, response: Response, seed: str) -> None:
    response.set_cookie(
        FORM_COOKIE,
        seed,
        max_age=FORM_COOKIE_MAX_AGE_S,
        path="/",
        httponly=True,
        secure=_is_https(request),
        samesite="lax",
    )


async def _check_csrf(request: Request) -> None:
    form = await request.form()
    token = form.get(CSRF_FIELD)
    seed, sent = _seed(request), token if isinstance(token, str) else None
    # forms served just before a `palaestra server rotate-secret` still pass while the old secret verifies
    if not any(
        accounts.valid_csrf_token(key, seed, sent) for key in state_of(request).signing.verifying_keys()
    ):
        raise CsrfRefused()


#: Add as a parameter (``_: CsrfChecked``) to every POST route of the pages.
CsrfChecked = Annotated[None, Depends(_check_csrf)]


def local_path(target: str | None, default: str = "/") -> str:
    """``target`` if it is a path on this server (``/...``, not ``//host``), else ``default``: where to
    go after signing in, never another site."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return default
    if any(c in target for c in "\r\n\t"):
        return default
    return target
