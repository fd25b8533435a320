"""The ladders' tables (migration ``0006_ladder``), on :mod:`.base`'s ``Base``:

- ``ladder_matches``: an accepted match upload (its ladder, its uploader, its digest: one match per upload);
- ``ladder_games``: its games, checked by replay, with their record's text (a few kB: kept in the row);
- ``ladder_ratings``: each ladder's ratings, derived again after games are added (in the background:
  :mod:`..ladders.work`), so that pages and ``/v1`` read them instead of rating on every request;
- ``ladder_matches.verified`` / ``.agent_job_id`` (migration ``0016_verified_ladder_matches``): a match
  the server played itself with an uploaded agent (:mod:`..agents.worker`);
- ``ladder_players`` (migration ``0012_ladder_trust``): which account owns a player name (the first
  to upload a game of it; :mod:`..ladders.trust`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from palaestra.scoreboard.server.tables.base import Base, utcnow

__all__ = ["LadderGame", "LadderMatch", "LadderPlayer", "LadderRating"]

#: The rated games with a digest (a game imported from an export older than 0012 has none: "").
_RATED = sa.text("unrated IS NULL AND digest != ''")


class LadderMatch(Base):
    __tablename__ = "ladder_matches"
    __table_args__ = (sa.UniqueConstraint("user_seq", "digest"),)

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), index=True)
    ladder: Mapped[str] = mapped_column(sa.String(60), index=True)
    game: Mapped[str] = mapped_column(sa.String(10))
    board_size: Mapped[int] = mapped_column(sa.Integer)
    komi: Mapped[float | None] = mapped_column(sa.Float, nullable=True)
    players: Mapped[list[Any]] = mapped_column()
    #: sha256 of the upload (its match document and game texts): the same folder uploaded again by the
    #: same user is the same match, answered again, never counted twice
    digest: Mapped[str] = mapped_column(sa.String(64))
    created: Mapped[datetime] = mapped_column(default=utcnow)
    #: the server played it (an uploaded agent against the anchors, migration 0016): nobody uploaded
    #: its games, and ``agent_job_id`` is the job that played them
    verified: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    agent_job_id: Mapped[str | None] = mapped_column(sa.String(40), default=None, index=True)


class LadderGame(Base):
    __tablename__ = "ladder_games"
    # a game's content is rated once per ladder: a second copy (another upload, another user) is
    # stored unrated, and two concurrent uploads of it cannot both be rated
    __table_args__ = (
        sa.Index(
            "ux_ladder_games_rated_digest", "ladder", "digest", unique=True,
            sqlite_where=_RATED, postgresql_where=_RATED,
        ),
    )  # fmt: skip

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)
    match_seq: Mapped[int] = mapped_column(sa.ForeignKey("ladder_matches.seq", ondelete="CASCADE"), index=True)
    ladder: Mapped[str] = mapped_column(sa.String(60), index=True)
    number: Mapped[int] = mapped_column(sa.Integer)
    file_name: Mapped[str] = mapped_column(sa.String(100))
    black: Mapped[str] = mapped_column(sa.String(100), index=True)
    white: Mapped[str] = mapped_column(sa.String(100), index=True)
    winner: Mapped[str | None] = mapped_column(sa.String(5), nullable=True)
    reason: Mapped[str] = mapped_column(sa.String(20))
    result: Mapped[str] = mapped_column(sa.String(20))
    score: Mapped[float | None] = mapped_column(sa.Float, nullable=True)
    moves: Mapped[list[Any]] = mapped_column()
    record: Mapped[str] = mapped_column(sa.Text)
    #: sha256 of the game's content (ladder, players, moves, result; :func:`palaestra.ladder.rated.game_digest`),
    #: not of its file: the same game re-uploaded in other bytes has the same digest
    digest: Mapped[str] = mapped_column(sa.String(64), default="")
    #: why the game does not count for the ratings (None: it counts); shown on its page and in /v1
    unrated: Mapped[str | None] = mapped_column(sa.String(300), nullable=True, default=None)


class LadderRating(Base):
    __tablename__ = "ladder_ratings"
    __table_args__ = (sa.PrimaryKeyConstraint("ladder", "player"),)

    ladder: Mapped[str] = mapped_column(sa.String(60))
    player: Mapped[str] = mapped_column(sa.String(100))
    rating: Mapped[float] = mapped_column(sa.Float)
    low: Mapped[float] = mapped_column(sa.Float)
    high: Mapped[float] = mapped_column(sa.Float)
    games: Mapped[int] = mapped_column(sa.Integer)
    points: Mapped[float] = mapped_column(sa.Float)
    anchored: Mapped[bool] = mapped_column(sa.Boolean)
    is_anchor: Mapped[bool] = mapped_column(sa.Boolean)


class LadderPlayer(Base):
    """A player name and the account that owns it: only that account (or an operator) uploads its games."""

    __tablename__ = "ladder_players"

    name: Mapped[str] = mapped_column(sa.String(100), primary_key=True)
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq", ondelete="CASCADE"), index=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
