"""ladder trust: operators, owned player names, games identified by content and rated only if plausible

- ``users.operator``: an operator's keys upload the anchors' games;
- ``ladder_players``: a player name and the account that owns it (the first to upload it); the names
  of the games already stored go to their first uploader;
- ``ladder_games.digest`` (the game's content: :func:`palaestra.ladder.rated.game_digest`) and
  ``ladder_games.unrated`` (why a game does not count): the games already stored get their digest,
  a second copy of a game is marked unrated, and so is a game too short to count
  (:func:`palaestra.ladder.rated.unrated_reason`, on the stored record replayed again); then every
  ladder's ratings are derived again.

Revision ID: 0012_ladder_trust
Revises: 0011_nulls_last_indexes
Create Date: 2026-12-05
"""

from __future__ import annotations

import dataclasses
import logging

import sqlalchemy as sa
from alembic import op

revision = "0012_ladder_trust"
down_revision = "0011_nulls_last_indexes"
branch_labels = None
depends_on = None

logger = logging.getLogger("palaestra.scoreboard")
_RATED = sa.text("unrated IS NULL AND digest != ''")


def _backfill(conn: sa.Connection) -> None:
    from palaestra.ladder.rated import game_digest, unrated_reason
    from palaestra.ladder.ratings import DEFAULT_ANCHORS, rate
    from palaestra.ladder.records import load_record
    from palaestra.ladder.replay import replay

    games = sa.table(
        "ladder_games", sa.column("seq"), sa.column("match_seq"), sa.column("ladder"), sa.column("file_name"),
        sa.column("record"), sa.column("black"), sa.column("white"), sa.column("winner"),
        sa.column("digest"), sa.column("unrated"),
    )  # fmt: skip
    matches = sa.table("ladder_matches", sa.column("seq"), sa.column("user_seq"))
    players = sa.table("ladder_players", sa.column("name"), sa.column("user_seq"), sa.column("created"))
    ratings = sa.table(
        "ladder_ratings", *(sa.column(c) for c in ("ladder", "player", "rating", "low", "high", "games",
                                                  "points", "anchored", "is_anchor")),
    )  # fmt: skip
    rows = conn.execute(
        sa.select(games.c.seq, games.c.ladder, games.c.file_name, games.c.record, matches.c.user_seq)
        .join(matches, matches.c.seq == games.c.match_seq)
        .order_by(games.c.seq)
    ).all()
    seen: set[tuple[str, str]] = set()
    owners: dict[str, int] = {}
    for seq, ladder, file_name, text, user_seq in rows:
        record = load_record(file_name, text.encode("utf-8"))
        digest = game_digest(ladder, record)
        if (ladder, digest) in seen:
            reason: str | None = "the same game as one rated before (its players, moves and result)"
        else:
            try:
                reason = unrated_reason(record, replay(record))
            except Exception:
                logger.warning("0012_ladder_trust: game %s could not be replayed; kept rated", seq)
                reason = None
        if reason is None:
            seen.add((ladder, digest))
        conn.execute(sa.update(games).where(games.c.seq == seq).values(digest=digest, unrated=reason))
        for name in (record.black, record.white):
            owners.setdefault(name, user_seq)
    from palaestra.ladder.anchors import is_reserved_player

    now = sa.func.current_timestamp()
    for name, user_seq in owners.items():
        if not is_reserved_player(name):
            conn.execute(sa.insert(players).values(name=name, user_seq=user_seq, created=now))
    points = {"black": 1.0, "white": 0.0, None: 0.5}
    for (ladder,) in conn.execute(sa.select(games.c.ladder).distinct()).all():
        rated = conn.execute(
            sa.select(games.c.black, games.c.white, games.c.winner).where(
                games.c.ladder == ladder, games.c.unrated.is_(None)
            )
        ).all()
        conn.execute(sa.delete(ratings).where(ratings.c.ladder == ladder))
        for r in rate([(b, w, points[winner]) for b, w, winner in rated], DEFAULT_ANCHORS):
            conn.execute(sa.insert(ratings).values(ladder=ladder, **dataclasses.asdict(r)))


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("operator", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.create_table(
        "ladder_players",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("user_seq", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_seq"], ["users.seq"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_index("ix_ladder_players_user_seq", "ladder_players", ["user_seq"])
    with op.batch_alter_table("ladder_games") as batch:
        batch.add_column(sa.Column("digest", sa.String(length=64), server_default="", nullable=False))
        batch.add_column(sa.Column("unrated", sa.String(length=300), nullable=True))
    _backfill(op.get_bind())
    op.create_index(
        "ux_ladder_games_rated_digest", "ladder_games", ["ladder", "digest"], unique=True,
        sqlite_where=_RATED, postgresql_where=_RATED,
    )  # fmt: skip


def downgrade() -> None:
    op.drop_index("ux_ladder_games_rated_digest", table_name="ladder_games")
    with op.batch_alter_table("ladder_games") as batch:
        batch.drop_column("unrated")
        batch.drop_column("digest")
    op.drop_index("ix_ladder_players_user_seq", table_name="ladder_players")
    op.drop_table("ladder_players")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("operator")
