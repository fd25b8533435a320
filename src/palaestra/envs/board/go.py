"""``GoEnv``: Go against an opponent (GNU Go by default), with the 2017 gym interface on Gymnasium.

Rules (see :class:`~palaestra.envs.board.rules.GoGame`): area scoring, Tromp-Taylor (stones plus
empty regions that reach only one colour; no dead-stone removal, so the game is played out until dead
stones are captured: GNU Go is run with ``--capture-all-dead``), komi 7.5 by default, suicide illegal,
simple ko illegal, a repeated whole-board position (positional superko) ends the game as a draw, two
consecutive passes end the game, and so does the move limit (``max_moves``, default 2·N², then scored).

With ``scoring='engine'`` a GTP opponent counts the finished game instead (GTP ``final_score``: area
scoring after removing the stones it judges dead), as the 2017 ``Go9x9-v0`` and ``Go19x19-v0`` let
Pachi decide (see :data:`~palaestra.envs.board.opponents.PACHI_2017` and docs/board-games.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from palaestra.envs.board.env import BoardGameEnv
from palaestra.envs.board.opponents import GTPOpponent, Opponent, Policy
from palaestra.envs.board.rules import BLACK, COLOR_NAMES, WHITE, GoGame
from palaestra.errors import Error

#: Komi used when none is given: the usual komi for area scoring (Chinese rules, CGOS, OpenSpiel,
#: PettingZoo); the half point means a game scored on the board cannot be drawn.
DEFAULT_KOMI = 7.5
#: ``scoring`` values: palaestra's own count of the board, or the GTP opponent's ``final_score``.
SCORING_RULES = ("tromp-taylor", "engine")


class GoEnv(BoardGameEnv):
    """Go on an N x N board.

    Args:
        player_color: ``'black'`` (moves first) or ``'white'``.
        opponent: ``'gnugo[:LEVEL]'``, ``'random'``, ``'mcts:SIMS'``, ``'pachi:ENGINE:TIMESTR'``,
            ``'gtp:COMMAND'``, an :class:`~palaestra.envs.board.opponents.Opponent` or a callable.
        observation_type: ``'image3c'`` (the only one, as in 2017): float32 planes (3, N, N), black,
            white, empty, row 0 at the top.
        illegal_move_mode: ``'lose'`` (the game ends, reward -1) or ``'raise'``
            (:class:`~palaestra.errors.IllegalMove`).
        board_size: N (9, 13 and 19 are registered).
        komi: points added to white's area.
        max_moves: moves (passes included) after which the game ends and is scored; default 2·N².
        scoring: ``'tromp-taylor'`` (count the board as it stands) or ``'engine'`` (a GTP opponent
            counts it with ``final_score``, removing the stones it judges dead; other opponents cannot
            count, and the board is counted). It decides games that end by two passes or the move
            limit; ``info['score']`` is the count, from black's side.
        render_mode: ``'ansi'``, ``'rgb_array'``, ``'human'`` or None.

    Actions: ``i*N + j`` for row i (0 = top, labelled N) and column j (0 = A); pass ``N*N``;
    resign ``N*N + 1``.
    """

    def __init__(
        self,
        player_color: str = "black",
        opponent: str | Opponent | Policy = "gnugo",
        observation_type: str = "image3c",
        illegal_move_mode: str = "lose",
        board_size: int = 9,
        komi: float = DEFAULT_KOMI,
        max_moves: int | None = None,
        scoring: str = "tromp-taylor",
        render_mode: str | None = None,
    ) -> None:
        if observation_type != "image3c":
            raise Error(f"observation_type must be 'image3c' for Go, not {observation_type!r}")
        if scoring not in SCORING_RULES:
            raise Error(f"scoring must be 'tromp-taylor' or 'engine', not {scoring!r}")
        self.observation_type = observation_type
        super().__init__(
            GoGame(board_size, komi, max_moves), player_color, opponent, illegal_move_mode, render_mode
        )
        self.board_size = board_size
        self.komi = float(komi)
        self.scoring = scoring
        # Only an engine can count: gym.make("Go9x9-v0", opponent="random") counts the board.
        self._engine_counts = scoring == "engine" and isinstance(self.opponent, GTPOpponent)

    @property
    def pass_action(self) -> int:
        """The pass action, N*N."""
        return self.board_size**2

    @property
    def resign_action(self) -> int:
        """The resign action, N*N + 1."""
        return self.board_size**2 + 1

    def _result(self, reply: int | None) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        observation, reward, terminated, info = super()._result(reply)
        if terminated and self._engine_counts:
            counted = count_by_engine(self.opponent, self.state, self._end_info, self._player)
            if counted is not None:
                reward = counted
                info.update(self._end_info)
        return observation, reward, terminated, info


def count_by_engine(opponent: Any, state: Any, ending: dict[str, Any], player: int) -> float | None:
    """Have the GTP ``opponent`` count a game that ended on the board (two passes, the move limit):
    ``ending``'s ``winner`` and ``score`` become the engine's, and the agent's reward is returned. A
    game that ended otherwise (resignation, an illegal move, superko) keeps its result: None."""
    if ending.get("reason") not in ("two passes", "move limit"):
        return None
    assert isinstance(opponent, GTPOpponent)
    score = opponent.final_score(state)
    winner = BLACK if score > 0 else WHITE if score < 0 else None
    ending.update(winner=None if winner is None else COLOR_NAMES[winner], score=score)
    return 0.0 if winner is None else 1.0 if winner == player else -1.0
