"""Accounts of the web pages: passwords, sign-in sessions, invite links and CSRF tokens.

- **Passwords** are hashed with argon2id (``argon2-cffi``'s ``PasswordHasher``, RFC 9106 parameters);
  a hash made with older parameters is redone at the next sign-in. A password is set by the
  admin (``palaestra users create NAME --password``) or by the user through a one-time invite link
  (``--invite``).
- **Sessions** are rows of ``web_sessions``, server-side: the cookie holds 256 random bits, the table
  their sha256 (a stolen database yields no cookie). Signing out deletes the row, which a signed
  cookie could not undo; a session expires ``session_ttl_s`` after sign-in, however active.
- **Failed sign-ins** are counted per client address and per (address, user name) in the database,
  shared by every server process (:mod:`palaestra.scoreboard.server.accounts.sign_in_limits`), so a password
  cannot be guessed at argon2's full speed, and nobody can lock its owner out by failing as them.
- **CSRF tokens** are ``HMAC(server secret, the session's token)``: tied to the session (a new
  sign-in makes new ones) and kept nowhere. Signed-out forms (sign-in, invite) use a random
  pre-session cookie instead of the session's token.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

import sqlalchemy as sa

from palaestra.errors import ConfigurationError
from palaestra.scoreboard.server.core.clock import SYSTEM_CLOCK, Clock
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.tables.accounts import Invite, User, WebSession

__all__ = [
    "MIN_PASSWORD_LENGTH",
    "SignedIn",
    "accept_invite",
    "authenticate",
    "check_password",
    "create_invite",
    "csrf_token",
    "end_session",
    "invited_user",
    "session_user",
    "set_password",
    "start_session",
    "valid_csrf_token",
]

MIN_PASSWORD_LENGTH = 8
#: argon2 hashes longer inputs fine, but a megabyte of "password" is an attack on the CPU, not a password
MAX_PASSWORD_LENGTH = 1024


@dataclass(frozen=True)
class SignedIn:
    """The user a browser is signed in as."""

    user_seq: int
    name: str


def _token_hash(token: str) -> str:
    """sha256 of a random token: enough for 256 random bits (argon2 is for what people choose)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@functools.cache
def _hasher() -> object:
    from argon2 import PasswordHasher

    return PasswordHasher()


def check_password(password: str) -> str:
    """``password`` if it may be one; :class:`ConfigurationError` naming the rule it breaks."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ConfigurationError(f"A password needs at least {MIN_PASSWORD_LENGTH} characters.")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise ConfigurationError(f"A password has at most {MAX_PASSWORD_LENGTH} characters.")
    return password


def _hash_password(password: str) -> str:
    return str(_hasher().hash(check_password(password)))  # type: ignore[attr-defined]


@functools.cache
def _decoy_hash() -> str:
    """A hash to check against when the user does not exist, so that the answer takes as long."""
    return str(_hasher().hash(secrets.token_urlsafe(16)))  # type: ignore[attr-defined]


def set_password(db: Database, name: str, password: str) -> None:
    """Set user ``name``'s password (:class:`ConfigurationError` if there is no such user)."""
    password_hash = _hash_password(password)
    with db.write() as session:
        user = session.scalar(sa.select(User).where(User.name == name))
        if user is None:
            raise ConfigurationError(f"No user {name!r}: create it with `palaestra users create {name}`.")
        user.password_hash = password_hash
        # a new password signs out every browser signed in with the old one
        session.execute(sa.delete(WebSession).where(WebSession.user_seq == user.seq))


def authenticate(db: Database, name: str, password: str) -> SignedIn | None:
    """The user if ``password`` is ``name``'s, else None (the same work either way)."""
    from argon2.exceptions import InvalidHashError, VerificationError

    hasher = _hasher()
    with db.read() as session:
        row = session.execute(
            sa.select(User.seq, User.name, User.password_hash).where(User.name == name)
        ).first()
    stored = row.password_hash if row is not None and row.password_hash else None
    try:
        hasher.verify(stored or _decoy_hash(), password)  # type: ignore[attr-defined]
    except (VerificationError, InvalidHashError):
        return None
    if row is None or stored is None:
        return None
    if hasher.check_needs_rehash(stored):  # type: ignore[attr-defined]
        with db.write() as session:
            session.execute(
                sa.update(User).where(User.seq == row.seq).values(password_hash=_hash_password(password))
            )
    return SignedIn(row.seq, row.name)


# -- sessions ------------------------------------------------------------------------------------------


def start_session(db: Database, user: SignedIn, ttl_s: int, clock: Clock = SYSTEM_CLOCK) -> str:
    """Sign ``user`` in for ``ttl_s`` seconds; returns the cookie's token. Expired sessions are
    deleted on the way (sign-ins are rare enough to carry the clean-up)."""
    token = secrets.token_urlsafe(32)
    now = clock.now()
    with db.write() as session:
        session.execute(sa.delete(WebSession).where(WebSession.expires <= now))
        session.add(
            WebSession(
                token_hash=_token_hash(token),
                user_seq=user.user_seq,
                created=now,
                expires=now + timedelta(seconds=ttl_s),
            )
        )
    return token


_SESSION_LOOKUP = (
    sa.select(User.seq, User.name, WebSession.expires)
    .join(User, User.seq == WebSession.user_seq)
    .where(WebSession.token_hash == sa.bindparam("token_hash"))
)


def session_user(db: Database, token: str, clock: Clock = SYSTEM_CLOCK) -> SignedIn | None:
    """The user signed in with the cookie ``token``, or None (unknown, signed out or expired)."""
    with db.read() as session:
        row = session.execute(_SESSION_LOOKUP, {"token_hash": _token_hash(token)}).first()
    if row is None or row.expires <= clock.now():
        return None
    return SignedIn(row.seq, row.name)


def end_session(db: Database, token: str) -> None:
    """Sign the browser with cookie ``token`` out (its session row is deleted)."""
    db.write_one(sa.delete(WebSession).where(WebSession.token_hash == _token_hash(token)), {})


# -- invites ---------------------------------------------------------------------------------------------


def create_invite(db: Database, name: str, ttl_s: int, clock: Clock = SYSTEM_CLOCK) -> str:
    """A one-time token with which user ``name`` sets a password within ``ttl_s`` seconds."""
    token = secrets.token_urlsafe(32)
    now = clock.now()
    with db.write() as session:
        user_seq = session.scalar(sa.select(User.seq).where(User.name == name))
        if user_seq is None:
            raise ConfigurationError(f"No user {name!r}: create it with `palaestra users create {name}`.")
        session.add(
            Invite(
                token_hash=_token_hash(token),
                user_seq=user_seq,
                created=now,
                expires=now + timedelta(seconds=ttl_s),
            )
        )
    return token


_INVITE_LOOKUP = (
    sa.select(User.seq, User.name, Invite.expires, Invite.used)
    .join(User, User.seq == Invite.user_seq)
    .where(Invite.token_hash == sa.bindparam("token_hash"))
)


def invited_user(db: Database, token: str, clock: Clock = SYSTEM_CLOCK) -> SignedIn | None:
    """The user an unused, unexpired invite ``token`` is for, else None."""
    with db.read() as session:
        row = session.execute(_INVITE_LOOKUP, {"token_hash": _token_hash(token)}).first()
    if row is None or row.used is not None or row.expires <= clock.now():
        return None
    return SignedIn(row.seq, row.name)


def accept_invite(db: Database, token: str, password: str, clock: Clock = SYSTEM_CLOCK) -> SignedIn | None:
    """Set the invited user's password and use the invite up; None if it is no longer valid."""
    password_hash = _hash_password(password)
    now = clock.now()
    with db.write() as session:
        # the UPDATE claims the invite: of two uses at once, one finds it used
        claim = sa.update(Invite).where(
            Invite.token_hash == _token_hash(token), Invite.used.is_(None), Invite.expires > now
        )
        claimed = cast("sa.CursorResult[Any]", session.execute(claim.values(used=now))).rowcount
        if not claimed:
            return None
        row = session.execute(_INVITE_LOOKUP, {"token_hash": _token_hash(token)}).first()
        assert row is not None
        session.execute(sa.update(User).where(User.seq == row.seq).values(password_hash=password_hash))
        session.execute(sa.delete(WebSession).where(WebSession.user_seq == row.seq))
    return SignedIn(row.seq, row.name)


# -- CSRF ------------------------------------------------------------------------------------------------


def csrf_token(secret: bytes, seed: str) -> str:
    """The token the forms of a browser carry: an HMAC of its session's (or pre-session's) token."""
    return hmac.new(secret, b"csrf:" + seed.encode("utf-8"), hashlib.sha256).hexdigest()


def valid_csrf_token(secret: bytes, seed: str | None, token: str | None) -> bool:
    """Whether ``token`` is the CSRF token of ``seed`` (False without either)."""
    if not seed or not token:
        return False
    return hmac.compare_digest(csrf_token(secret, seed), token)
