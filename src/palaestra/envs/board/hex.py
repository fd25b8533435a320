"""``HexEnv``: Hex against an opponent (random by default), with the 2017 gym interface on Gymnasium.

Black (first to move) joins the top and bottom rows, white the left and right columns; a cell touches
its left, right, upper, lower, upper-right and lower-left neighbours (as in 2017). Hex has no draws.
With ``swap=True`` the second player may answer black's first stone with the swap (pie rule).
"""

from __future__ import annotations

from palaestra.envs.board.env import BoardGameEnv
from palaestra.envs.board.opponents import Opponent, Policy
from palaestra.envs.board.rules import HexGame
from palaestra.errors import Error


class HexEnv(BoardGameEnv):
    """Hex on an N x N rhombus.

    Args:
        player_color: ``'black'`` (moves first; joins top and bottom) or ``'white'`` (left and right).
        opponent: ``'random'``, ``'mcts:SIMS'``, an :class:`~palaestra.envs.board.opponents.Opponent`
            or a callable ``policy(observation[, action_mask]) -> action``.
        observation_type: ``'numpy3c'`` (the only one, as in 2017): float32 planes (3, N, N), black,
            white, empty.
        illegal_move_mode: ``'lose'`` (the game ends, reward -1) or ``'raise'``.
        board_size: N (9 and 11 are registered).
        swap: allow the swap (pie rule) as the second move.
        render_mode: ``'ansi'``, ``'rgb_array'``, ``'human'`` or None.

    Actions: ``r*N + c`` for row r (0 = top) and column c; resign ``N*N``; swap ``N*N + 1`` (only
    with ``swap=True``).
    """

    def __init__(
        self,
        player_color: str = "black",
        opponent: str | Opponent | Policy = "random",
        observation_type: str = "numpy3c",
        illegal_move_mode: str = "lose",
        board_size: int = 9,
        swap: bool = False,
        render_mode: str | None = None,
    ) -> None:
        if observation_type != "numpy3c":
            raise Error(f"observation_type must be 'numpy3c' for Hex, not {observation_type!r}")
        self.observation_type = observation_type
        super().__init__(HexGame(board_size, swap), player_color, opponent, illegal_move_mode, render_mode)
        self.board_size = board_size
        self.swap = bool(swap)

    @property
    def resign_action(self) -> int:
        """The resign action, N*N."""
        return self.board_size**2
