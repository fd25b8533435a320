"""Who may upload games under which player names, and how often: the rules that keep ladder ratings
from being forged.

- :func:`check_player_names`: a match's player names are well formed (:func:`name_problem`); the
  anchors' names (:func:`palaestra.ladder.anchors.is_reserved_player`) only with an operator's key;
  a name owned by another account (``ladder_players``) never. Asked before any game is replayed.
- :func:`claim_player_names`: in the transaction that stores a match, its names not yet owned become
  the uploader's (an operator's upload claims none: the server plays other users' agents too).
- :func:`check_upload_rate`: match uploads per user and hour, the same limit as the other uploads
  (``uploads_per_hour``, ``PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR``).

Refusals are problems that name the player, the rule and the way out: 400 for a malformed name,
403 for a name that is someone else's, 429 with ``Retry-After`` for too many uploads.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra.ladder.anchors import is_reserved_player
from palaestra.scoreboard.server.accounts import rate_limits
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.ladders import LadderPlayer

__all__ = [
    "MAX_NAME_LENGTH",
    "check_player_names",
    "check_upload_rate",
    "claim_player_names",
    "name_problem",
]

#: The longest player name (the games' ``black``/``white`` columns).
MAX_NAME_LENGTH = 100


def name_problem(name: object) -> str | None:
    """None if ``name`` may name a ladder player, else the rule it breaks."""
    if not isinstance(name, str) or not name:
        return "a player name must not be empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"a player name has at most {MAX_NAME_LENGTH} characters (this one has {len(name)})"
    if not name.isprintable():
        return "a player name must not hold control characters (NUL, line breaks, tabs, ...)"
    if name != name.strip():
        return "a player name must not begin or end with a space"
    return None


def check_player_names(session: Session, principal: Principal, names: list[str]) -> None:
    """A Problem unless ``principal`` may upload games of every one of ``names``."""
    for name in names:
        problem = name_problem(name)
        if problem is not None:
            raise Problem(400, f"match: the player name {name!r} is refused: {problem}.", "match")
    if principal.operator:
        return
    for name in names:
        if is_reserved_player(name):
            raise Problem(
                403,
                f"match: the player {name!r} is an anchor of the ladders: its games are played or uploaded "
                "by the server's operator only (a key of `palaestra users create NAME --operator`). Name "
                "your own players, e.g. 'mine=python:my.agent:act' in `palaestra match`.",
                "match",
            )
    owners = dict(
        session.execute(
            sa.select(LadderPlayer.name, User.name)
            .join(User, User.seq == LadderPlayer.user_seq)
            .where(LadderPlayer.name.in_(names), LadderPlayer.user_seq != principal.user_seq)
        ).all()
    )
    for name in names:
        if name in owners:
            raise Problem(
                403,
                f"match: the player {name!r} belongs to the user {owners[name]!r}, who first uploaded its "
                "games; only that user uploads games under this name. Give your player another name "
                "(NAME=SPEC in `palaestra match`).",
                "match",
            )


def claim_player_names(session: Session, principal: Principal, names: list[str]) -> None:
    """Make the names of ``names`` that nobody owns yet the uploader's (not an operator's). An anchor's
    name is nobody's: it is in a user's match only when the server played it (an agent's matches)."""
    if principal.operator:
        return
    owned = set(session.scalars(sa.select(LadderPlayer.name).where(LadderPlayer.name.in_(names))))
    for name in names:
        if name not in owned and not is_reserved_player(name):
            session.add(LadderPlayer(name=name, user_seq=principal.user_seq))
    session.flush()  # a name claimed meanwhile by another upload is an IntegrityError here


def check_upload_rate(state: ServerState, user_seq: int) -> None:
    """429 once the user sent ``uploads_per_hour`` match uploads this hour (blocking: a write)."""
    limit = state.config.uploads_per_hour
    if limit <= 0:
        return
    hits, wait = rate_limits.count_hit(
        state.db, f"ladder_match:{user_seq}", rate_limits.UPLOAD_WINDOW_S, state.clock
    )
    if hits > limit:
        raise rate_limits.too_many(
            f"Too many match uploads: this server accepts {limit} uploads per user and hour, and you sent "
            f"{hits - 1} this hour. Try again in {max(1, int(wait))} s, or ask the server's operator to "
            "raise PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR.",
            wait,
        )
