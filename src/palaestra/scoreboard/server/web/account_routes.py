"""The account pages: sign in and out, an invite link's password form, and ``/settings/profile``.

======================================================  ================================================
``GET|POST /login``                                      the sign-in form (``?next=`` a path to go back to)
``POST /logout``                                         sign out (the session row is deleted)
``GET|POST /invite/{token}``                             set a password once, with an admin's invite link
``GET /settings/profile``                                the signed-in user's API keys (signed out: to
                                                         the sign-in page and back; the 2017 client's hint)
``POST /settings/profile/keys``                          create a key (shown once, on the answer)
``POST /settings/profile/keys/{key_id}/revoke``          revoke one of the user's keys
======================================================  ================================================

Every POST takes :data:`~.signin.CsrfChecked`; the work itself is :mod:`..accounts.sessions` and :mod:`..accounts.auth`.
"""

from __future__ import annotations

import math
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from palaestra.errors import ConfigurationError
from palaestra.scoreboard.server.accounts import auth, sign_in_limits
from palaestra.scoreboard.server.accounts import sessions as accounts
from palaestra.scoreboard.server.core.deps import state_of
from palaestra.scoreboard.server.web import signin
from palaestra.scoreboard.server.web.render import render
from palaestra.scoreboard.server.web.signin import CsrfChecked

router = APIRouter(include_in_schema=False)

PROFILE_PATH = "/settings/profile"


def _shown_wait(seconds: float) -> str:
    """``"42 seconds"`` or ``"15 minutes"``."""
    if seconds < 120:
        whole = max(1, math.ceil(seconds))
        return f"{whole} second{'' if whole == 1 else 's'}"
    return f"{math.ceil(seconds / 60)} minutes"


def _see_other(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303)


def _login_page(
    request: Request, next_path: str, status_code: int = 200, error: str | None = None
) -> HTMLResponse:
    return render(
        request,
        "login.html",
        status_code=status_code,
        forms=True,
        nav="signin",
        next_path=next_path,
        error=error,
    )


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = PROFILE_PATH) -> Response:
    next_path = signin.local_path(next, PROFILE_PATH)
    if signin.signed_in(request) is not None:
        return _see_other(next_path)
    return _login_page(request, next_path)


@router.post("/login", response_class=HTMLResponse)
def login(
    request: Request,
    _: CsrfChecked,
    name: str = Form(""),
    password: str = Form(""),
    next: str = Form(PROFILE_PATH),
) -> Response:
    state = state_of(request)
    next_path = signin.local_path(next, PROFILE_PATH)
    name = name.strip()
    address = request.client.host if request.client else "an unknown address"
    # per address and per (address, name), never per name alone: failures elsewhere hold no one back
    wait = sign_in_limits.sign_in_wait(state.db, address, name, state.clock)
    if wait:
        held = _login_page(
            request,
            next_path,
            429,
            f"Too many failed sign-ins from your address ({address}): try again in {_shown_wait(wait)}. "
            "Other addresses are not held back; a forgotten password is reset by the server's operator "
            "(`palaestra users create NAME --invite`).",
        )
        held.headers["Retry-After"] = str(max(1, math.ceil(wait)))
        return held
    user = accounts.authenticate(state.db, name, password) if name and password else None
    if user is None:
        sign_in_limits.note_failed_sign_in(state.db, address, name, state.clock)
        return _login_page(
            request,
            next_path,
            401,
            "Wrong user name or password. (A user without a password signs in once the server's "
            "operator sets one: `palaestra users create NAME --password` or `--invite`.)",
        )
    sign_in_limits.clear_failed_sign_ins(state.db, address, name)
    response = _see_other(next_path)
    signin.set_session_cookie(
        request, response, accounts.start_session(state.db, user, state.config.session_ttl_s, state.clock)
    )
    return response


@router.post("/logout")
def logout(request: Request, _: CsrfChecked) -> Response:
    token = request.cookies.get(signin.SESSION_COOKIE)
    if token:
        accounts.end_session(state_of(request).db, token)
    response = _see_other("/")
    signin.clear_session_cookie(request, response)
    return response


# -- invites ---------------------------------------------------------------------------------------------


def _invite_gone(request: Request) -> HTMLResponse:
    return render(
        request,
        "error.html",
        status_code=404,
        title="Invite link not valid",
        message="This invite link is unknown, was used already or has expired. Ask the server's operator "
        "for a new one (`palaestra users create NAME --invite`).",
    )


@router.get("/invite/{token}", response_class=HTMLResponse)
def invite_page(request: Request, token: str) -> HTMLResponse:
    state = state_of(request)
    user = accounts.invited_user(state.db, token, state.clock)
    if user is None:
        return _invite_gone(request)
    return render(request, "invite.html", forms=True, nav="signin", invited=user, error=None)


@router.post("/invite/{token}", response_class=HTMLResponse)
def accept_invite(
    request: Request, token: str, _: CsrfChecked, password: str = Form(""), password_again: str = Form("")
) -> Response:
    state = state_of(request)
    invited = accounts.invited_user(state.db, token, state.clock)
    if invited is None:
        return _invite_gone(request)
    error = None
    if password != password_again:
        error = "The two passwords differ; type the same password twice."
    else:
        try:
            user = accounts.accept_invite(state.db, token, password, state.clock)
        except ConfigurationError as e:
            error = str(e)
        else:
            if user is None:
                return _invite_gone(request)
            response = _see_other(PROFILE_PATH)
            signin.set_session_cookie(
                request, response, accounts.start_session(state.db, user, state.config.session_ttl_s, state.clock)
            )
            return response
    return render(
        request, "invite.html", status_code=400, forms=True, nav="signin", invited=invited, error=error
    )


# -- the profile -----------------------------------------------------------------------------------------


def _profile(
    request: Request, user: accounts.SignedIn, new_key: tuple[str, str] | None = None
) -> HTMLResponse:
    return render(
        request,
        "profile.html",
        nav="profile",
        keys=auth.user_keys(state_of(request).db, user.user_seq),
        new_key=new_key,
        server_url=state_of(request).config.base_url(str(request.base_url)),
    )


def _to_sign_in(request: Request) -> RedirectResponse:
    return _see_other("/login?" + urlencode({"next": request.url.path}))


@router.get(PROFILE_PATH, response_class=HTMLResponse)
def profile_page(request: Request) -> Response:
    user = signin.signed_in(request)
    if user is None:
        return _to_sign_in(request)
    return _profile(request, user)


@router.post(f"{PROFILE_PATH}/keys", response_class=HTMLResponse)
def create_key(request: Request, _: CsrfChecked) -> Response:
    user = signin.signed_in(request)
    if user is None:
        return _see_other("/login?" + urlencode({"next": PROFILE_PATH}))
    # answered with the page itself (not a redirect): the key is on this answer only, never stored
    return _profile(request, user, new_key=auth.create_key(state_of(request).db, user.user_seq))


@router.post(PROFILE_PATH + "/keys/{key_id}/revoke")
def revoke_key(request: Request, key_id: str, _: CsrfChecked) -> Response:
    user = signin.signed_in(request)
    if user is None:
        return _see_other("/login?" + urlencode({"next": PROFILE_PATH}))
    state = state_of(request)
    if not auth.revoke_user_key(state.db, user.user_seq, key_id):
        return render(
            request,
            "error.html",
            status_code=404,
            title="No such key",
            message=f"You have no active API key {key_id!r} (it may be revoked already).",
        )
    auth.forget_key(state, key_id)
    return _see_other(PROFILE_PATH)


__all__ = ["PROFILE_PATH", "router"]
