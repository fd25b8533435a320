"""The wire schemas of the board-game ladders (``/v1/ladders``, ``/v1/ladder_matches``,
``/v1/ladder_games``), shared by the client and the server; next to :mod:`palaestra.scoreboard.protocol`,
whose conventions they follow (requests forbid unknown fields, answers allow them).

A match upload is its folder in one JSON body: ``match.json``'s document and every game file's
text by name. A ladder is named by its rules: ``Go9x9-komi7.5``, ``Hex11x11`` (``-swap`` with the pie rule).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from palaestra.scoreboard.protocol import Request, Response

__all__ = [
    "LADDER_MATCHES_PATH",
    "MAX_MATCH_BODY_BYTES",
    "GameObject",
    "LadderObject",
    "MatchObject",
    "MatchUpload",
    "PlayerObject",
    "RatingObject",
    "RatingsObject",
    "ladder_name",
]

LADDER_MATCHES_PATH = "/ladder_matches"
#: The largest match upload: some 400 19x19 games.
MAX_MATCH_BODY_BYTES = 4 * 1024 * 1024
#: The most games in one upload.
MAX_MATCH_GAMES = 1000


def ladder_name(game: str, board_size: int, komi: float = 0.0, swap: bool = False) -> str:
    """The ladder of a game's rules: ``Go9x9-komi7.5``, ``Hex9x9``, ``Hex9x9-swap``."""
    name = f"{game}{board_size}x{board_size}"
    if game == "Go":
        return f"{name}-komi{komi:g}"
    return f"{name}-swap" if swap else name


class MatchUpload(Request):
    """``POST /v1/ladder_matches``: a match folder."""

    match: dict[str, Any] = Field(description="the folder's match.json document")
    games: dict[str, str] = Field(description="file name -> the game record's text (SGF or Hex JSON)")

    @classmethod
    def from_folder(cls, folder: str | os.PathLike[str]) -> MatchUpload:
        """The upload of a match folder (``palaestra match``'s, or the board's own agent matches)."""
        from palaestra.ladder.match import read_match

        document = read_match(folder)
        games = {}
        for entry in document.get("games", []):
            name = str(entry.get("file", ""))
            games[name] = (Path(folder) / name).read_text(encoding="utf-8")
        return cls(match=document, games=games)


class GameObject(Response):
    object: Literal["ladder_game"] = "ladder_game"
    id: str
    match: str
    ladder: str
    number: int
    black: str
    white: str
    winner: str | None
    reason: str
    result: str
    score: float | None = None
    moves: list[str]
    record_url: str
    web_url: str
    rated: bool = Field(True, description="whether the game counts for the ladder's ratings")
    unrated_reason: str | None = Field(None, description="why it does not count (too short, a copy of a rated game)")


class MatchObject(Response):
    object: Literal["ladder_match"] = "ladder_match"
    id: str
    ladder: str
    owner: str
    players: list[str]
    games: list[GameObject]
    created: str
    web_url: str
    verified: bool = Field(False, description="the server played this match itself (an uploaded agent against the anchors)")
    agent_job_id: str | None = Field(None, description="the agent job that played it, when verified")


class RatingObject(Response):
    object: Literal["ladder_rating"] = "ladder_rating"
    player: str
    rating: float
    low: float
    high: float
    games: int
    points: float
    anchored: bool
    is_anchor: bool
    verified: bool = Field(False, description="every rated game of this player was played by the server itself")


class RatingsObject(Response):
    object: Literal["ladder_ratings"] = "ladder_ratings"
    ladder: str
    anchor: str | None
    games: int = Field(description="the games the ratings are derived from")
    unrated_games: int = Field(0, description="the ladder's games stored but not rated (each game says why)")
    ratings: list[RatingObject]


class LadderObject(Response):
    object: Literal["ladder"] = "ladder"
    id: str
    game: str
    board_size: int
    komi: float | None
    games: int
    players: int
    web_url: str


class PlayerObject(Response):
    object: Literal["ladder_player"] = "ladder_player"
    ladder: str
    name: str
    rating: RatingObject | None
    head_to_head: dict[str, dict[str, float]] = Field(description="opponent -> {games, points}")
    games: list[GameObject]
