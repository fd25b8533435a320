"""Which checked games count for a ladder's ratings, and a game's identity by its content.

A game that the rules confirm (:func:`palaestra.ladder.replay.replay`) is stored; it counts for the
ratings only if it is plausible as a contest (:func:`unrated_reason` says why not otherwise):

* it placed at least :func:`minimum_stones` stones (a quarter of the board's points: 21 on 9x9,
  91 on 19x19; passes place none), or
* it is a Hex game won by a connection (the board itself decided it), or
* it is a shorter Go game (ended by resignation, time or forfeit, or by two passes) in which each
  player placed at least as many stones as the board is wide, and whose final position the server's
  own count confirms: the winner leads the Tromp-Taylor count, komi included. (A lone first stone
  owns every empty point in that count, and komi alone wins two passes for white: those are the
  shortcuts the stones per player rule out.)

A resignation after one move is a legal game, but it says nothing about who is stronger, and forty
of them could move a rating by a thousand points: such games are shown, marked, and not rated.
These rules stop cheap games, not a forger who generates long ones: what stops forgery is who may
upload games of which player (:mod:`palaestra.scoreboard.server.ladders.trust`).

:func:`game_digest` identifies a game by what was played (the ladder, the players, the moves, the
result), not by its file's bytes, so that the same game uploaded again, by anyone, in any file, is
recognised and counted once.
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np

from palaestra.envs.board.rules import area_score
from palaestra.ladder.records import GameRecord
from palaestra.ladder.replay import Replayed

__all__ = ["game_digest", "minimum_stones", "unrated_reason"]


def minimum_stones(board_size: int) -> int:
    """The stones a game must place to count for the ratings without the board's confirmation."""
    return math.ceil(board_size * board_size / 4)


def _stones_placed(record: GameRecord) -> int:
    return sum(1 for move in record.moves if move.lower() not in ("pass", "swap"))


def _count_confirms(record: GameRecord, planes: np.ndarray) -> bool:
    """Whether a short Go game's final position confirms its recorded winner (see the module docstring)."""
    each = [record.moves[side::2] for side in (0, 1)]
    if record.winner is None or any(sum(m.lower() != "pass" for m in moves) < record.board_size for moves in each):
        return False
    lead = area_score(planes, record.komi)
    return lead > 0 if record.winner == "black" else lead < 0


def unrated_reason(record: GameRecord, replayed: Replayed) -> str | None:
    """None if the checked game counts for the ratings, else why it does not (see the module docstring)."""
    placed, needed = _stones_placed(record), minimum_stones(record.board_size)
    if placed >= needed or (record.game == "Hex" and record.reason == "connection"):
        return None
    short = (
        f"{placed} stones placed, fewer than the {needed} that a game on a {record.board_size}x"
        f"{record.board_size} board needs to count for the ratings"
    )
    if record.game == "Go":
        if _count_confirms(record, replayed.planes):
            return None
        return f"{short}, and the count of its final position does not confirm its result"
    return short


def game_digest(ladder: str, record: GameRecord) -> str:
    """sha256 of the game's content: the ladder, the players, the moves and the result."""
    content = [ladder, record.black, record.white, [m.lower() for m in record.moves], record.winner, record.reason]
    return hashlib.sha256(json.dumps(content, separators=(",", ":")).encode("utf-8")).hexdigest()
