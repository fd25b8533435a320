"""The ladder pages: the ladders, a ladder (ratings with intervals, head-to-head, latest games), a
player, and a game with its board viewer (``static/ladder-viewer.js``: SVG, buttons and keys).

They read what :mod:`palaestra.scoreboard.server.ladders.service` reads for ``/v1``, so a page and its API
answer cannot disagree. A game page's positions are derived from the stored moves by the rules
(:func:`board_positions`), once per view; the record itself is downloaded from ``/v1``.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from palaestra.ladder.records import load_record
from palaestra.ladder.replay import make_rules
from palaestra.scoreboard.server.api.common import base_url
from palaestra.scoreboard.server.core.deps import state_of
from palaestra.scoreboard.server.ladders import service as ladders
from palaestra.scoreboard.server.web.render import render
from palaestra.scoreboard.server.web.services import database

__all__ = ["board_positions", "ladder_links", "router"]

router = APIRouter(include_in_schema=False)


def _not_found(request: Request, what: str) -> HTMLResponse:
    return render(request, "error.html", status_code=404, title="Not found", message=what)


def board_positions(file_name: str, text: str) -> tuple[int, list[str]]:
    """The board size and every position of a stored game, from the empty board to the last move:
    one string a position, a character a point in row order (``.`` empty, ``b`` black, ``w`` white)."""
    record = load_record(file_name, text)
    rules = make_rules(record)
    observer = rules.make_observer()
    state = rules.new_state()
    positions = []

    def position() -> str:
        planes = observer.planes(state)
        cells = ["." for _ in range(rules.num_cells)]
        for index in planes[0].ravel().nonzero()[0]:
            cells[index] = "b"
        for index in planes[1].ravel().nonzero()[0]:
            cells[index] = "w"
        return "".join(cells)

    positions.append(position())
    for move in record.moves:
        state.apply_action(rules.to_engine[rules.string_to_action(move)])
        positions.append(position())
    return rules.board_size, positions


_BOARD_ENV = re.compile(r"^(Go|Hex)(\d+)x\2-v\d+$")


def ladder_links(session: Session, env_id: str | None, algorithm: str | None) -> list[tuple[str, str]]:
    """(ladder, player page URL) of an evaluation of a board-game env (``Go9x9-v0``) whose algorithm
    is rated, under the same name, on a ladder of that game and board size."""
    match = _BOARD_ENV.match(env_id or "")
    if match is None or not algorithm:
        return []
    entries = ladders.ladder_entries(session, algorithm, match.group(1), int(match.group(2)))
    return [(ladder, f"/ladders/{quote(ladder)}/players/{quote(algorithm)}") for ladder in entries]


@router.get("/ladders", response_class=HTMLResponse)
def ladders_page(request: Request) -> HTMLResponse:
    with database(request).read() as session:
        rows = ladders.ladder_objects(session, "")
    return render(request, "ladders.html", nav="ladders", ladders=rows)


@router.get("/ladders/games/{game_id}", response_class=HTMLResponse)
def game_page(request: Request, game_id: str) -> HTMLResponse:
    with database(request).read() as session:
        found = ladders.find_game(session, game_id)
    if found is None:
        return _not_found(request, f"No ladder game {game_id!r}.")
    game, match_id = found
    size, positions = board_positions(game.file_name, game.record)
    view = ladders.game_object(game, match_id, base_url(state_of(request), request))
    data = {"game": "Go" if game.file_name.endswith(".sgf") else "Hex", "size": size, "positions": positions,
            "moves": list(game.moves)}  # fmt: skip
    return render(request, "ladder_game.html", nav="ladders", game=view, data=data)


@router.get("/ladders/{ladder}", response_class=HTMLResponse)
def ladder_page(request: Request, ladder: str, verified: str = Query("", max_length=2)) -> HTMLResponse:
    """A ladder's ratings, head-to-head table and latest games; ``verified=1``: the ratings of the
    players the board played itself only (beside the anchor)."""
    verified_only = verified == "1"
    with database(request).read() as session:
        ratings = ladders.ratings_object(session, ladder, verified_only=verified_only)
        if ratings is None:
            return _not_found(request, f"No ladder {ladder!r}: no games have been uploaded to it.")
        any_verified = verified_only or any(r.verified for r in ratings.ratings)
        table = ladders.head_to_head(session, ladder)
        recent = ladders.recent_games(session, ladder, "")
    players = [r.player for r in ratings.ratings]
    return render(
        request, "ladder.html", nav="ladders", ladder=ladder, ratings=ratings, players=players, table=table,
        recent=recent, verified_only=verified_only, any_verified=any_verified,
    )  # fmt: skip


@router.get("/ladders/{ladder}/players/{name:path}", response_class=HTMLResponse)
def player_page(request: Request, ladder: str, name: str) -> HTMLResponse:
    with database(request).read() as session:
        player = ladders.player_object(session, ladder, name, "")
    if player is None:
        return _not_found(request, f"No player {name!r} on the ladder {ladder!r}.")
    return render(request, "ladder_player.html", nav="ladders", ladder=ladder, player=player)
