"""The accounts' tables: ``users`` (with an argon2 password hash once they have a password),
``api_keys`` (hashed keys; a key is shown once, at creation), ``web_sessions`` (signed-in browsers)
and ``invites`` (one-time links to set a password). What they mean is :mod:`..accounts.sessions` and :mod:`..accounts.auth`.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from palaestra.scoreboard.server.tables.base import Base, utcnow

__all__ = ["ApiKey", "Invite", "User", "WebSession"]


class User(Base):
    __tablename__ = "users"

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(sa.String(100), unique=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    #: argon2 hash of the user's password (:mod:`..accounts.sessions`); None: no password, no sign-in
    password_hash: Mapped[str | None] = mapped_column(sa.String(200), default=None)
    #: an operator's keys may upload the ladders' anchor games (``palaestra users create NAME --operator``)
    operator: Mapped[bool] = mapped_column(sa.Boolean, default=False, server_default=sa.false())


class WebSession(Base):
    """A signed-in browser: the cookie holds a random token, the table its sha256 (:mod:`..accounts.sessions`)."""

    __tablename__ = "web_sessions"

    token_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq", ondelete="CASCADE"), index=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    expires: Mapped[datetime] = mapped_column(index=True)


class Invite(Base):
    """A one-time link with which a user sets a password (``palaestra users create NAME --invite``)."""

    __tablename__ = "invites"

    token_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq", ondelete="CASCADE"), index=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    expires: Mapped[datetime] = mapped_column()
    used: Mapped[datetime | None] = mapped_column(default=None)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)  # key_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq", ondelete="CASCADE"), index=True)
    #: sha256 hex of the key (keys are 256-bit random, so a fast hash is the right one)
    key_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    #: the first characters of the key, to recognise it in ``palaestra users list``
    prefix: Mapped[str] = mapped_column(sa.String(16))
    created: Mapped[datetime] = mapped_column(default=utcnow)
    revoked: Mapped[datetime | None] = mapped_column(default=None)

