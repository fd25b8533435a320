"""Users and API keys.

A key is ``pal_`` + 43 URL-safe characters (256 random bits), shown once when it is created and
stored as its sha256 (a slow hash adds nothing for a random 256-bit secret). Writes need
``Authorization: Bearer KEY``; reads are public.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from fastapi import Depends, Request
from sqlalchemy.orm import Session

from palaestra.errors import ConfigurationError
from palaestra.scoreboard.server.accounts import rate_limits
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.deps import get_state, run_blocking, state_of
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.accounts import ApiKey, User
from palaestra.scoreboard.server.tables.base import utcnow

KEY_PREFIX = "pal_"


@dataclass(frozen=True)
class Principal:
    """The authenticated caller."""

    user_seq: int
    user_name: str
    key_id: str
    #: the user is an operator (uploads the ladders' anchor games)
    operator: bool = False


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


# -- user management (used by ``palaestra users``) ---------------------------------------------------


@dataclass(frozen=True)
class KeyInfo:
    user: str
    key_id: str
    prefix: str
    created: datetime
    revoked: datetime | None
    #: whether the key's user has a password (signs in to the web pages)
    password_set: bool = False


def _new_key(session: Session, user_seq: int) -> tuple[str, str]:
    """Add a new key of user ``user_seq`` to ``session``; returns ``(key_id, key)``."""
    key = generate_key()
    key_id = new_id("api_key", 8)
    session.add(ApiKey(id=key_id, user_seq=user_seq, key_hash=hash_key(key), prefix=key[:10]))
    return key_id, key


def create_user(db: Database, name: str, operator: bool = False) -> tuple[str, str]:
    """Create user ``name`` (or add a key to it if it exists), an operator if ``operator`` (an existing
    user becomes one; it never stops being one here); returns ``(key_id, key)``."""
    name = name.strip()
    if not name or len(name) > 100 or any(c.isspace() for c in name):
        raise ConfigurationError(f"Invalid user name {name!r}: use 1-100 characters without spaces")
    for attempt in range(2):
        try:
            with db.write() as session:
                user = session.scalar(sa.select(User).where(User.name == name))
                if user is None:
                    user = User(name=name)
                    session.add(user)
                    session.flush()
                if operator:
                    user.operator = True
                return _new_key(session, user.seq)
        except sa.exc.IntegrityError:
            if attempt:  # the user was created concurrently once already; this is something else
                raise
    raise AssertionError("unreachable")


def create_key(db: Database, user_seq: int) -> tuple[str, str]:
    """A new key of user ``user_seq`` (the profile page's "create"); returns ``(key_id, key)``."""
    with db.write() as session:
        return _new_key(session, user_seq)


def user_keys(db: Database, user_seq: int) -> list[KeyInfo]:
    """User ``user_seq``'s keys, newest first (ids and prefixes, never the keys)."""
    with db.read() as session:
        rows = session.execute(
            sa.select(User.name, ApiKey.id, ApiKey.prefix, ApiKey.created, ApiKey.revoked)
            .join(User, User.seq == ApiKey.user_seq)
            .where(ApiKey.user_seq == user_seq)
            .order_by(ApiKey.created.desc(), ApiKey.id)
        ).all()
    return [KeyInfo(*r) for r in rows]


def revoke_user_key(db: Database, user_seq: int, key_id: str) -> bool:
    """Revoke key ``key_id`` if it is an active key of user ``user_seq``; whether it was."""
    statement = (
        sa.update(ApiKey)
        .where(ApiKey.id == key_id, ApiKey.user_seq == user_seq, ApiKey.revoked.is_(None))
        .values(revoked=utcnow())
    )
    return db.write_one(statement, {}) == 1


def list_keys(db: Database) -> list[KeyInfo]:
    with db.read() as session:
        rows = session.execute(
            sa.select(
                User.name,
                ApiKey.id,
                ApiKey.prefix,
                ApiKey.created,
                ApiKey.revoked,
                User.password_hash.is_not(None),
            )
            .join(ApiKey, ApiKey.user_seq == User.seq, isouter=True)
            .order_by(User.name, ApiKey.created)
        ).all()
    return [KeyInfo(r[0], r[1] or "", r[2] or "", r[3], r[4], bool(r[5])) for r in rows if r[1]]


def revoke(db: Database, name_or_key_id: str) -> list[str]:
    """Revoke one key (by ``key_...`` id or the key itself) or every key of a user; the ids revoked."""
    now = utcnow()
    with db.write() as session:
        query = sa.select(ApiKey).where(ApiKey.revoked.is_(None))
        if name_or_key_id.startswith("key_"):
            query = query.where(ApiKey.id == name_or_key_id)
        elif name_or_key_id.startswith(KEY_PREFIX):
            query = query.where(ApiKey.key_hash == hash_key(name_or_key_id))
        else:
            query = query.join(User, User.seq == ApiKey.user_seq).where(User.name == name_or_key_id)
        keys = list(session.scalars(query))
        for k in keys:
            k.revoked = now
        return [k.id for k in keys]


# -- the request dependency ---------------------------------------------------------------------------


def _profile_url(request: Request) -> str:
    """Where a user manages their keys (the page the 2017 client's hint names, on this server)."""
    return f"{state_of(request).config.base_url(str(request.base_url))}/settings/profile"


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if not header:
        raise Problem(
            401,
            "You must provide an API key: send 'Authorization: Bearer KEY' (palaestra upload reads "
            "PALAESTRA_API_KEY; gym.upload reads OPENAI_GYM_API_KEY). Create one on "
            f"{_profile_url(request)} once signed in, or ask the server's operator "
            "(`palaestra users create NAME`).",
        )
    if scheme.lower() != "bearer" or not token.strip():
        raise Problem(401, "The Authorization header must be 'Bearer KEY'.")
    return token.strip()


_KEY_LOOKUP = (
    sa.select(ApiKey.id, ApiKey.revoked, User.seq, User.name, User.operator)
    .join(User, User.seq == ApiKey.user_seq)
    .where(ApiKey.key_hash == sa.bindparam("key_hash"))
)


def lookup_key(session: Session, key: str) -> Principal | None:
    row = session.execute(_KEY_LOOKUP, {"key_hash": hash_key(key)}).first()
    if row is None or row[1] is not None:
        return None
    return Principal(user_seq=row[2], user_name=row[3], key_id=row[0], operator=bool(row[4]))


#: How long a successful key lookup is reused; a revoked key stops working within this time.
AUTH_CACHE_S = 1.0


def _cached_principal(state: ServerState, key: str) -> Principal | None:
    """The principal of ``key`` if it was looked up less than ``AUTH_CACHE_S`` ago, else None."""
    hit, principal = state.cache.lookup(("principal", hash_key(key)), state.clock.monotonic())
    return principal if hit else None


def _lookup_and_cache(state: ServerState, key: str) -> Principal | None:
    """Look ``key`` up in the database (blocking) and remember a valid one for ``AUTH_CACHE_S``."""
    cache_key = ("principal", hash_key(key))
    now = state.clock.monotonic()
    with state.db.read() as session:
        principal = lookup_key(session, key)
    if principal is None:
        state.cache.discard(cache_key)
    else:
        state.cache.store(cache_key, principal, now + AUTH_CACHE_S)
    return principal


def forget_key(state: ServerState, key_id: str) -> None:
    """Drop ``key_id`` from this server's key cache: a key revoked here stops working at once (on the
    other servers of the database, within :data:`AUTH_CACHE_S`)."""
    state.cache.discard_where("principal", lambda _, principal: principal.key_id == key_id)


async def require_user(request: Request, state: ServerState = Depends(get_state)) -> Principal:
    """The caller's identity; 401 if the key is missing, unknown or revoked (429 once an address sent
    too many of those: :mod:`.rate_limits`).

    ``async`` so that the usual case (a key seen within the last second) costs no thread hop.
    """
    key = _bearer(request)
    principal = _cached_principal(state, key)
    if principal is None:
        # Inline on a local database: a second's worth of requests finding the cache expired at once
        # would otherwise queue for worker threads behind the event loop's hold on the GIL.
        principal = await run_blocking(state, _lookup_and_cache, state, key)
    if principal is None:
        address = request.client.host if request.client else "an unknown address"
        await run_blocking(state, rate_limits.note_invalid_key, state, address)  # 429 after too many
        shown = key[:8] + "..." if len(key) > 8 else "..."
        raise Problem(
            401,
            f"Invalid API key ({shown}): it is unknown to this server or was revoked. Your keys are on "
            f"{_profile_url(request)}; or ask the server's operator (`palaestra users create NAME`).",
        )
    return principal
