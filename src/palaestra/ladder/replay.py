"""Replaying a recorded game through palaestra's rules, to check it (the scoreboard's judge).

:func:`replay` plays every move of a :class:`~palaestra.ladder.records.GameRecord` on OpenSpiel's
rules (the envs' rules: :class:`~palaestra.envs.board.rules.GoGame` with the record's komi and the
default move limit, 2·N², or :class:`~palaestra.envs.board.rules.HexGame`), and accepts it only if

* every move is a legal move for the player to move, and none comes after the end;
* a game that ended on the board (two passes, the move limit, a repeated position, a connection)
  ends exactly at its last move, and its recorded winner (and, for Go, its count) is the rules';
* a game that ended otherwise (resignation, time, forfeit) is not over on the board, and its loser
  is the player to move: palaestra's matches end a game so only on the mover's turn.

Anything else is a :class:`GameRejected` naming the move. Nothing here runs a player's code.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from palaestra.envs.board.rules import COLOR_NAMES, BoardGame, GoGame, HexGame, area_score
from palaestra.errors import Error
from palaestra.ladder.records import REASONS_WITHOUT_BOARD_END, GameRecord

__all__ = ["GameRejected", "Replayed", "make_rules", "replay"]


class GameRejected(Error):
    """A game whose moves or result the rules do not confirm; ``move`` is the 1-based move number
    at fault (None when the result, not a move, is wrong)."""

    def __init__(self, message: str, move: int | None = None) -> None:
        super().__init__(message)
        self.move = move


@dataclasses.dataclass
class Replayed:
    """What the replay found: the moves as env actions, the final planes, and the rules' ending."""

    actions: list[int]
    planes: np.ndarray
    winner: str | None
    reason: str
    score: float | None


def make_rules(record: GameRecord) -> BoardGame:
    """The rules a record is played under."""
    if record.game == "Go":
        return GoGame(record.board_size, record.komi)
    if record.game == "Hex":
        return HexGame(record.board_size, record.swap)
    raise GameRejected(f"{record.game!r} is not a game palaestra plays (Go or Hex)")


def replay(record: GameRecord) -> Replayed:
    """Check ``record`` against the rules (see the module docstring); its :class:`Replayed`."""
    try:
        rules = make_rules(record)
    except GameRejected:
        raise
    except Error as exc:
        raise GameRejected(str(exc)) from None
    state = rules.new_state()
    actions = []
    for number, move in enumerate(record.moves, start=1):
        color = COLOR_NAMES[state.current_player()] if not state.is_terminal() else None
        if color is None:
            raise GameRejected(f"move {number} ({move}) comes after the game ended", number)
        try:
            action = rules.string_to_action(move)
        except Error:
            raise GameRejected(f"move {number} ({move!r}) is not a move of this game", number) from None
        if action == rules.resign_action or not rules.is_legal(state, action):
            raise GameRejected(
                f"move {number} ({move}, {color}) is illegal: the point is taken, or it is a ko "
                "recapture or a suicide",
                number,
            )
        state.apply_action(rules.to_engine[action])
        actions.append(action)
    planes = rules.make_observer().planes(state)
    ending = _ending(rules, state, planes, record)
    return Replayed(actions, planes, *ending)


def _ending(rules: BoardGame, state: Any, planes: np.ndarray, record: GameRecord) -> tuple[str | None, str, float | None]:
    claimed = f"the record says {record.result_text()} ({record.reason})"
    if record.reason in REASONS_WITHOUT_BOARD_END:
        if state.is_terminal():
            raise GameRejected(f"the game ended on the board at its last move, but {claimed}")
        to_move = COLOR_NAMES[state.current_player()]
        if record.loser() != to_move:
            raise GameRejected(f"{claimed}, but a game ends so only on the loser's turn, and {to_move} was to move")
        return record.winner, record.reason, None
    if not state.is_terminal():
        raise GameRejected(f"the game is not over after its {len(record.moves)} moves, but {claimed}")
    end = rules.describe_end(state, planes)
    score = area_score(planes, rules.komi) if isinstance(rules, GoGame) else None
    if end["winner"] != record.winner:
        rules_result = "a draw" if end["winner"] is None else f"a win for {end['winner']}"
        raise GameRejected(f"the rules make it {rules_result} ({end['reason']}), but {claimed}")
    if record.score is not None and score is not None and end["reason"] != "superko" and record.score != score:
        raise GameRejected(f"the board counts {score:+g} from black's side, but {claimed}")
    return end["winner"], end["reason"], score
