"""``/v1/ladders``, ``/v1/ladder_matches``, ``/v1/ladder_games``: the board-game ladders.

=========================================  =====================================================
``POST /v1/ladder_matches``                a match folder (:class:`~palaestra.scoreboard.protocol.ladder.MatchUpload`):
                                           its player names checked (:mod:`..ladders.trust`), every
                                           game replayed and checked in a worker process, all stored
                                           or none, the ladder rated again in the background
``GET  /v1/ladder_matches/{id}``           a match and its games
``GET  /v1/ladder_games/{id}``             a game; ``/record``: its SGF (or Hex JSON) file
``GET  /v1/ladders``                       the ladders (one per game, board size and komi)
``GET  /v1/ladders/{ladder}/ratings``      its ratings, with 95 % intervals and game counts
                                           (``?verified=1``: the server-played players only)
``GET  /v1/ladders/{ladder}/players/{name}``  a player: rating, head-to-head results, latest games
=========================================  =====================================================
"""

from __future__ import annotations

from concurrent.futures.process import BrokenProcessPool

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response
from pydantic import ValidationError

from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol import ladder as lp
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.api.common import base_url
from palaestra.scoreboard.server.api.deps import CurrentUser, State
from palaestra.scoreboard.server.core.answers import answer
from palaestra.scoreboard.server.core.deps import run_blocking
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.ladders import service as ladders
from palaestra.scoreboard.server.ladders.checks import (
    CheckedMatch,
    check_in_worker,
    checked_or_problem,
    match_players,
)
from palaestra.scoreboard.server.ladders.trust import check_player_names, check_upload_rate
from palaestra.scoreboard.server.problems import Problem, not_found

__all__ = ["router"]

router = APIRouter(tags=["ladders"])


async def _upload_body(request: Request, state: ServerState) -> lp.MatchUpload:
    data = await request.body()  # held to MAX_MATCH_BODY_BYTES by the body-limit middleware
    return await run_blocking(state, _parse_upload, data, small=len(data) < 65536)  # 4 MB: some 40 ms


def _parse_upload(data: bytes) -> lp.MatchUpload:
    try:
        document = protocol.parse_json(data, "The match upload")
    except protocol.JSONInputError as exc:
        raise Problem(400, str(exc)) from None
    if not isinstance(document, dict):
        raise Problem(400, "The match upload must be a JSON object {match, games}.")
    try:
        return lp.MatchUpload.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise Problem(400, f"The match upload is invalid at {where!r}: {first.get('msg')}.") from None


@router.post(lp.LADDER_MATCHES_PATH, status_code=201, response_model=lp.MatchObject)
async def create_match(request: Request, principal: CurrentUser, state: State) -> Response:
    """Check every game of the match by replaying it, then store them all (or, on a problem, none).
    The same upload again by the same user answers the match stored the first time (200), so that a
    retried upload never counts its games twice. Nothing large runs on the event loop: the rate and
    the names are small queries (``run_blocking``), the body is parsed and the answer written in a
    thread, the games replayed in a worker process, the ladder rated again in the background worker
    (the answer waits for it, not the other requests)."""
    await run_blocking(state, check_upload_rate, state, principal.user_seq)
    upload = await _upload_body(request, state)
    players = match_players(upload)
    await run_blocking(state, _check_names, state, principal, players)
    try:
        checked = checked_or_problem(await state.ladder_work.run(check_in_worker, upload))
    except BrokenProcessPool:
        raise Problem(
            503, "The process checking this upload stopped before it finished (killed, or crashed on one of its "
            "games); nothing of the upload was stored. Send it again; if it stops again, one of its games is "
            "the cause: upload the games in smaller matches to find it.",
        ) from None
    match_id, created = await run_blocking(state, _store, state, principal, checked, small=False)
    if created:
        work, url = state.ladder_work, state.config.database_url
        await work.rerate(checked.ladder, lambda ladder: work.call(ladders.rerate_in_worker, url, ladder))
    base = base_url(state, request)
    return await run_blocking(state, _match_answer, state, match_id, base, 201 if created else 200, small=False)


def _match_answer(state: ServerState, match_id: str, base: str, status: int) -> Response:
    """The stored match as the answer, read and serialised in a thread (1,000 games: some 3 MB of JSON)."""
    with state.db.read() as session:
        body = ladders.match_object(session, match_id, base)
    assert body is not None
    return answer(body, status)


def _check_names(state: ServerState, principal: Principal, players: list[str]) -> None:
    with state.db.read() as session:
        check_player_names(session, principal, players)


def _store(state: ServerState, principal: Principal, checked: CheckedMatch) -> tuple[str, bool]:
    """Store the match; a name claimed or a game rated by a concurrent upload meanwhile: once more,
    from the start (its names checked again: the other upload may own them now)."""
    for attempt in range(2):
        try:
            with state.db.write() as session:
                check_player_names(session, principal, checked.players)
                return ladders.store_match(session, principal, checked)
        except sa.exc.IntegrityError:
            if attempt:
                raise
    raise AssertionError("unreachable")


@router.get(f"{lp.LADDER_MATCHES_PATH}/{{match_id}}", response_model=lp.MatchObject)
def get_match(match_id: str, request: Request, state: State) -> Response:
    with state.db.read() as session:
        body = ladders.match_object(session, match_id, base_url(state, request))
    if body is None:
        raise not_found("ladder match", match_id)
    return answer(body)


@router.get("/ladder_games/{game_id}", response_model=lp.GameObject)
def get_game(game_id: str, request: Request, state: State) -> Response:
    with state.db.read() as session:
        found = ladders.find_game(session, game_id)
    if found is None:
        raise not_found("ladder game", game_id)
    return answer(ladders.game_object(found[0], found[1], base_url(state, request)))


@router.get("/ladder_games/{game_id}/record")
def get_game_record(game_id: str, state: State) -> Response:
    """The game's record as uploaded: SGF for Go, the Hex JSON record for Hex."""
    with state.db.read() as session:
        found = ladders.find_game(session, game_id)
    if found is None:
        raise not_found("ladder game", game_id)
    game = found[0]
    sgf = game.file_name.endswith(".sgf")
    media = "application/x-go-sgf" if sgf else "application/json"
    name = f"{game.id}{'.sgf' if sgf else '.hex.json'}"
    return Response(game.record, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.get("/ladders", response_model=protocol.ListPage[lp.LadderObject])
def list_ladders(request: Request, state: State) -> Response:
    base = base_url(state, request)
    with state.db.read() as session:
        data = ladders.ladder_objects(session, base)
    return answer(protocol.ListPage[lp.LadderObject](url=f"{protocol.API_PREFIX}/ladders", data=data))


@router.get("/ladders/{ladder}/ratings", response_model=lp.RatingsObject)
def get_ratings(ladder: str, state: State, verified: bool = False) -> Response:
    """``?verified=1``: only the players whose every rated game the server played (and the anchor)."""
    with state.db.read() as session:
        body = ladders.ratings_object(session, ladder, verified_only=verified)
    if body is None:
        raise not_found("ladder", ladder)
    return answer(body)


@router.get("/ladders/{ladder}/players/{name:path}", response_model=lp.PlayerObject)
def get_player(ladder: str, name: str, request: Request, state: State) -> Response:
    with state.db.read() as session:
        body = ladders.player_object(session, ladder, name, base_url(state, request))
    if body is None:
        raise not_found("ladder player", name)
    return answer(body)
