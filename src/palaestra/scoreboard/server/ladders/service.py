"""The ladders' database operations, one place for the API and the pages: storing a checked match
(its names claimed, each game marked unrated when it does not count, a game already rated on the
ladder marked as the copy it is; a match the server played itself with an uploaded agent marked
verified), deriving a ladder's ratings again from its rated games (in the
background: :mod:`.work`), and reading matches, games, ratings, players and head-to-head
results as their ``/v1`` objects (:mod:`palaestra.scoreboard.protocol.ladder`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra.ladder.ratings import DEFAULT_ANCHORS, Rating, rate
from palaestra.scoreboard.protocol import API_PREFIX
from palaestra.scoreboard.protocol import ladder as lp
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.evaluations import scorelog
from palaestra.scoreboard.server.ladders.checks import CheckedMatch
from palaestra.scoreboard.server.ladders.trust import claim_player_names
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.ladders import LadderGame, LadderMatch, LadderRating

__all__ = [
    "derived_ratings",
    "game_object",
    "ladder_objects",
    "match_object",
    "player_object",
    "ratings_object",
    "rerate_in_worker",
    "rerate_ladder",
    "store_match",
    "verified_players",
]

_POINTS = {"black": (1.0, 0.0), "white": (0.0, 1.0), None: (0.5, 0.5)}


def store_match(
    session: Session, principal: Principal, match: CheckedMatch, *, agent_job_id: str | None = None
) -> tuple[str, bool]:
    """Add ``match`` and its games, its player names claimed for the uploader: (its id, True). The same
    upload again by the same user (its digest) adds nothing: (the stored match's id, False). The
    ladder's ratings are the caller's to derive again (:func:`rerate_ladder`).

    ``agent_job_id``: the server played the match itself, for that agent job (:mod:`..agents.worker`),
    with ``principal`` the agent's owner: the match is stored verified; its anchors' names are the
    server's and are not claimed (:func:`~.trust.claim_player_names` claims no reserved name)."""
    known = session.scalar(
        sa.select(LadderMatch.id).where(LadderMatch.user_seq == principal.user_seq, LadderMatch.digest == match.digest)
    )
    if known is not None:
        return known, False
    claim_player_names(session, principal, match.players)
    row = LadderMatch(
        id=new_id("ladder_match"), user_seq=principal.user_seq, ladder=match.ladder, game=match.game,
        board_size=match.board_size, komi=match.komi, players=match.players, digest=match.digest,
        verified=agent_job_id is not None, agent_job_id=agent_job_id,
    )  # fmt: skip
    session.add(row)
    session.flush()
    digests = [game.digest for game in match.games]
    rated_before = dict(
        session.execute(
            sa.select(LadderGame.digest, LadderGame.id).where(
                LadderGame.ladder == match.ladder, LadderGame.digest.in_(digests), LadderGame.unrated.is_(None)
            )
        ).all()
    )
    rows = []
    for game in match.games:
        record = game.record
        unrated = game.unrated
        if unrated is None and game.digest in rated_before:
            unrated = f"the same game (players, moves and result) as {rated_before[game.digest]}, rated already"
        game_id = new_id("ladder_game")
        if unrated is None:
            rated_before[game.digest] = game_id
        rows.append(dict(
            id=game_id, match_seq=row.seq, ladder=match.ladder, number=game.number,
            file_name=game.file_name, black=record.black, white=record.white, winner=record.winner,
            reason=record.reason, result=record.result_text(), score=record.score, moves=record.moves,
            record=game.text, digest=game.digest, unrated=unrated,
        ))  # fmt: skip
    # one executemany INSERT, not an ORM object per game (841 games: 0.40 s of storing -> 0.31 s)
    session.execute(sa.insert(LadderGame), rows)
    scorelog.append_ladder_match(session, row.id)  # in the log exactly when it is on the board
    return row.id, True


def derived_ratings(session: Session, ladder: str) -> list[Rating]:
    """``ladder``'s ratings, derived from all its rated games."""
    rows = session.execute(
        sa.select(LadderGame.black, LadderGame.white, LadderGame.winner).where(
            LadderGame.ladder == ladder, LadderGame.unrated.is_(None)
        )
    ).all()
    return rate([(black, white, _POINTS[winner][0]) for black, white, winner in rows], DEFAULT_ANCHORS)


def rerate_ladder(db: Database, ladder: str) -> None:
    """Derive ``ladder``'s ratings again and store them. The games are read and rated outside the write
    transaction, which only replaces the rows: a reader that counts its hit (a write) never waits for
    the rating (at 100,000 games a concurrent GET / waited some 0.8 s). A match added meanwhile is
    rated by the derivation its own upload asks for, after this one."""
    with db.read() as session:
        ratings = derived_ratings(session, ladder)
    with db.write() as session:
        session.execute(sa.delete(LadderRating).where(LadderRating.ladder == ladder))
        session.add_all(LadderRating(ladder=ladder, **dataclasses.asdict(r)) for r in ratings)
        session.flush()
        scorelog.append_ladder_ratings(session, ladder)  # verify holds the table to the latest such entry


def rerate_in_worker(database_url: str, ladder: str) -> None:
    """:func:`rerate_ladder` in a worker process (:mod:`.work`), on a connection of its own:
    reading 100,000 games is Python's work, and in the server's process it held the GIL from the
    requests (a concurrent GET / waited some 0.8 s; bench/ladder_upload_stall.py)."""
    db = Database(database_url)
    try:
        rerate_ladder(db, ladder)
    finally:
        db.dispose()


def _web(base: str, path: str) -> str:
    return f"{base}{path}"


def game_object(game: LadderGame, match_id: str, base: str) -> lp.GameObject:
    return lp.GameObject(
        id=game.id, match=match_id, ladder=game.ladder, number=game.number, black=game.black,
        white=game.white, winner=game.winner, reason=game.reason, result=game.result, score=game.score,
        moves=list(game.moves), record_url=f"{base}{API_PREFIX}/ladder_games/{game.id}/record",
        web_url=_web(base, f"/ladders/games/{game.id}"), rated=game.unrated is None, unrated_reason=game.unrated,
    )  # fmt: skip


def _games_with_match(query: Any) -> Any:
    return query.add_columns(LadderMatch.id).join(LadderMatch, LadderMatch.seq == LadderGame.match_seq)


def match_object(session: Session, match_id: str, base: str) -> lp.MatchObject | None:
    found = session.execute(
        sa.select(LadderMatch, User.name).join(User, User.seq == LadderMatch.user_seq).where(LadderMatch.id == match_id)
    ).first()
    if found is None:
        return None
    match, owner = found
    games = session.scalars(sa.select(LadderGame).where(LadderGame.match_seq == match.seq).order_by(LadderGame.number))
    return lp.MatchObject(
        id=match.id, ladder=match.ladder, owner=owner, players=list(match.players),
        games=[game_object(g, match.id, base) for g in games], created=match.created.isoformat(),
        web_url=_web(base, f"/ladders/{match.ladder}"), verified=match.verified, agent_job_id=match.agent_job_id,
    )  # fmt: skip


def find_game(session: Session, game_id: str) -> tuple[LadderGame, str] | None:
    """A game and its match's id."""
    found = session.execute(_games_with_match(sa.select(LadderGame)).where(LadderGame.id == game_id)).first()
    return None if found is None else (found[0], found[1])


def _rating_object(row: LadderRating, verified: bool = False) -> lp.RatingObject:
    return lp.RatingObject(
        player=row.player, rating=row.rating, low=row.low, high=row.high, games=row.games, points=row.points,
        anchored=row.anchored, is_anchor=row.is_anchor, verified=verified,
    )  # fmt: skip


def verified_players(session: Session, ladder: str) -> set[str]:
    """The players of ``ladder`` whose every rated game the server played itself (verified matches):
    their ratings come from games nobody uploaded. (An anchor that also played in uploaded matches,
    an operator's calibration games, is not among them.)"""
    rows = session.execute(
        sa.select(LadderGame.black, LadderGame.white, LadderMatch.verified)
        .join(LadderMatch, LadderMatch.seq == LadderGame.match_seq)
        .where(LadderGame.ladder == ladder, LadderGame.unrated.is_(None))
        .distinct()
    ).all()
    played: set[str] = set()
    uploaded: set[str] = set()
    for black, white, verified in rows:
        played.update((black, white))
        if not verified:
            uploaded.update((black, white))
    return played - uploaded


def ratings_object(session: Session, ladder: str, verified_only: bool = False) -> lp.RatingsObject | None:
    """``ladder``'s table of ratings (None: no game on it); ``verified_only``: the players whose every
    rated game the server played (:func:`verified_players`), with the anchor that gives the scale."""
    rows = session.scalars(
        sa.select(LadderRating).where(LadderRating.ladder == ladder).order_by(LadderRating.rating.desc())
    ).all()
    counts = dict(
        session.execute(
            sa.select(LadderGame.unrated.is_(None), sa.func.count()).where(LadderGame.ladder == ladder).group_by(
                LadderGame.unrated.is_(None)
            )
        ).all()
    )
    if not counts:  # no game on this ladder (a ladder whose games are all unrated has no ratings yet)
        return None
    anchor = next((r.player for r in rows if r.is_anchor), None)
    verified = verified_players(session, ladder)
    if verified_only:
        rows = [r for r in rows if r.player in verified or r.is_anchor]
    return lp.RatingsObject(
        ladder=ladder, anchor=anchor, games=counts.get(True, 0), unrated_games=counts.get(False, 0),
        ratings=[_rating_object(r, r.player in verified) for r in rows],
    )  # fmt: skip


def ladder_objects(session: Session, base: str) -> list[lp.LadderObject]:
    rows = session.execute(
        sa.select(LadderMatch.ladder, LadderMatch.game, LadderMatch.board_size, LadderMatch.komi).distinct()
    ).all()
    result = []
    for ladder, game, size, komi in sorted(rows):
        games = session.scalar(sa.select(sa.func.count()).where(LadderGame.ladder == ladder)) or 0
        players = session.scalar(sa.select(sa.func.count()).where(LadderRating.ladder == ladder)) or 0
        result.append(
            lp.LadderObject(
                id=ladder, game=game, board_size=size, komi=komi, games=games, players=players,
                web_url=_web(base, f"/ladders/{ladder}"),
            )
        )
    return result


def head_to_head(session: Session, ladder: str) -> dict[str, dict[str, dict[str, float]]]:
    """player -> opponent -> {games, points} over the ladder's games."""
    table: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(lambda: {"games": 0, "points": 0.0}))
    rows = session.execute(
        sa.select(LadderGame.black, LadderGame.white, LadderGame.winner).where(
            LadderGame.ladder == ladder, LadderGame.unrated.is_(None)
        )
    ).all()
    for black, white, winner in rows:
        black_points, white_points = _POINTS[winner]
        for player, opponent, points in ((black, white, black_points), (white, black, white_points)):
            cell = table[player][opponent]
            cell["games"] += 1
            cell["points"] += points
    return {player: dict(opponents) for player, opponents in table.items()}


def player_object(session: Session, ladder: str, name: str, base: str, limit: int = 100) -> lp.PlayerObject | None:
    rating = session.get(LadderRating, (ladder, name))
    if rating is None:
        return None
    games = session.execute(
        _games_with_match(sa.select(LadderGame))
        .where(LadderGame.ladder == ladder, sa.or_(LadderGame.black == name, LadderGame.white == name))
        .order_by(LadderGame.seq.desc())
        .limit(limit)
    ).all()
    return lp.PlayerObject(
        ladder=ladder, name=name, rating=_rating_object(rating, name in verified_players(session, ladder)),
        head_to_head=head_to_head(session, ladder).get(name, {}),
        games=[game_object(g, match_id, base) for g, match_id in games],
    )  # fmt: skip


def recent_games(session: Session, ladder: str, base: str, limit: int = 50) -> list[lp.GameObject]:
    """The ladder's latest games, newest first."""
    rows = session.execute(
        _games_with_match(sa.select(LadderGame)).where(LadderGame.ladder == ladder).order_by(LadderGame.seq.desc()).limit(limit)
    ).all()
    return [game_object(g, match_id, base) for g, match_id in rows]


def ladder_entries(session: Session, player: str, game: str, board_size: int) -> list[str]:
    """The ladders of ``game`` and ``board_size`` on which ``player`` (by name) is rated."""
    prefix = f"{game}{board_size}x{board_size}"
    rows = session.scalars(
        sa.select(LadderRating.ladder).where(LadderRating.player == player, LadderRating.ladder.like(f"{prefix}%"))
    ).all()
    return [ladder for ladder in rows if ladder == prefix or ladder.startswith(prefix + "-")]
