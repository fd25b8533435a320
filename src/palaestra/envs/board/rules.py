"""The rules of Go and Hex, played by OpenSpiel's C++ engine (``pyspiel``), in the 2017 gym encoding.

OpenSpiel was chosen by measurement (see ``bench/board_games.py`` and docs): driven from Python it plays
about 300,000 random 9x9 Go moves a second, a pure-Python engine about 3,000. This module is the one
place that knows how OpenSpiel numbers things; everything above it (the Gymnasium envs, the
PettingZoo AEC envs, the opponents) speaks the 2017 gym encoding:

* observation: float32 planes ``(3, N, N)``: black, white, empty; row 0 is the top row.
* Go actions: ``i * N + j`` for the point in row ``i`` (0 = top, labelled N) and column ``j`` (0 = A),
  pass ``N*N``, resign ``N*N + 1``.
* Hex actions: ``r * N + c``, resign ``N*N``, and with the swap rule swap ``N*N + 1``.

OpenSpiel numbers Go points from the bottom row (``a1`` = 0), so Go actions and planes are flipped
vertically here; Hex cells need no translation.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from palaestra.errors import Error
from palaestra.extras import require

BLACK = 0
WHITE = 1
COLOR_NAMES = ("black", "white")
BOOL = np.dtype(np.bool_)
#: What an opponent returns to resign; never an engine action.
RESIGN = -1
#: What a board core's ``play_random()`` returns when the game ended with the agent's move; when it
#: ended with the opponent's reply ``r``: ``ENDED_AFTER_REPLY - r`` (the values of ``_goboard.c``).
ENDED_AFTER_MOVE = -1
ENDED_AFTER_REPLY = -2
#: The events of a board core's ``step_random()``: the agent resigned, or chose an illegal move
#: (nothing was played), or the game ended.
STEP_RESIGNED = 1
STEP_ILLEGAL = 2
STEP_ENDED = 3
GTP_COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # GTP skips I
HEX_COLUMNS = "abcdefghijklmnopqrstuvwxy"  # Hex notation keeps i


def import_pyspiel() -> Any:
    """Import OpenSpiel's Python module, or say how to install it."""
    require("board", "palaestra's Go and Hex (OpenSpiel's rules engine)")
    import pyspiel

    return pyspiel


def parse_color(player_color: str) -> int:
    """``'black'`` -> 0, ``'white'`` -> 1; anything else is an error naming the choices."""
    if player_color == "black":
        return BLACK
    if player_color == "white":
        return WHITE
    raise Error(f"player_color must be 'black' or 'white', not {player_color!r}")


class BoardGame:
    """One game's rules: an OpenSpiel game plus the 2017 encoding of observations and actions."""

    kind: str = ""
    board_size: int
    num_actions: int
    resign_action: int
    pass_action: int | None = None
    swap_action: int | None = None

    def __init__(self, spiel_game: Any, board_size: int, to_engine: Sequence[int], mask_order: Sequence[int]):
        self.spiel_game = spiel_game
        self.board_size = board_size
        self.num_cells = board_size * board_size
        #: env action -> engine action (RESIGN for resign).
        self.to_engine: list[int] = list(to_engine)
        #: engine action -> env action.
        self.from_engine: list[int] = [0] * spiel_game.num_distinct_actions()
        for action, engine_action in enumerate(self.to_engine):
            if engine_action != RESIGN:
                self.from_engine[engine_action] = action
        # mask[env action] = engine_legal[mask_index[env action]], where engine_legal is the engine's
        # legal mask with one extra always-true entry at its end for resign (see engine_legal()).
        index = np.array(mask_order, dtype=np.intp)
        #: Puts engine_legal() in env-action order (one numpy fancy index); None when it already is.
        self.mask_index: np.ndarray | None = None if (index == np.arange(len(index))).all() else index
        #: Whether the legal moves are exactly the empty cells (plus resign): Hex without the swap rule,
        #: which has no suicide, no ko and no swap. The env then reads them off the observation.
        self.empty_is_legal = False
        self._flip = False
        self._initial_state = spiel_game.new_initial_state()

    # -- engine states ---------------------------------------------------------------------------
    def new_state(self) -> Any:
        """A fresh engine state (black to play)."""
        # A copy of one kept initial state: for Go 9x9 about 1.5 us against 7 us for
        # new_initial_state(), which builds the board's tables again.
        return self._initial_state.clone()

    def board_core(
        self, num_boards: int, legal: bytearray, planes: np.ndarray, env_order: bool = False
    ) -> Any | None:
        """A board core in C that keeps ``num_boards`` boards' legal rows (``legal``: one row of
        ``num_distinct_actions() + 1`` bytes per board, resign last) and planes (``planes``: one row
        per board, the three planes first) up to date move by move, in the engine's order or with
        ``env_order`` in the env's; or None where there is none (see :meth:`GoGame.board_core`)."""
        return None

    def describe_core_end(self, core: Any, board: int, planes: np.ndarray) -> tuple[dict[str, Any], float]:
        """:meth:`describe_end` and black's return of a game that ``core`` (:meth:`board_core`'s) saw end
        on ``board``, whose final planes are ``planes``, without its engine state."""
        raise NotImplementedError

    def make_observer(self) -> Observer:
        """A reusable observation buffer bound to this game."""
        return Observer(self)

    def legal_mask(self, state: Any) -> np.ndarray:
        """A new bool array over env actions: True where the player to move may play (resign included)."""
        return self.mask_of(self.engine_legal(state))

    @staticmethod
    def engine_legal(state: Any) -> list[int]:
        """0/1 per engine action, then a 1 for resign: index it with ``to_engine[action]`` (resign's
        RESIGN, -1, reads that last entry). All 0 but resign's once the game is over."""
        engine_mask: list[int] = state.legal_actions_mask()
        engine_mask.append(1)
        return engine_mask

    def mask_of(self, engine_legal: Sequence[int]) -> np.ndarray:
        """The writable bool array over env actions of :meth:`engine_legal` (a new one every time)."""
        mask = np.frombuffer(bytearray(engine_legal), BOOL)
        # Fancy indexing copies, so the array is the caller's own either way (bytearray is writable).
        return mask if self.mask_index is None else mask[self.mask_index]

    def no_moves_mask(self) -> np.ndarray:
        """The mask of a finished game: nothing is legal."""
        return np.zeros(self.num_actions, dtype=np.bool_)

    def is_legal(self, state: Any, action: int) -> bool:
        """Whether env ``action`` is legal for the player to move (resign always is, before the end)."""
        if not 0 <= action < self.num_actions or state.is_terminal():
            return False
        engine_action = self.to_engine[action]
        return engine_action == RESIGN or bool(state.legal_actions_mask()[engine_action])

    # -- names -------------------------------------------------------------------------------------
    def action_to_string(self, action: int) -> str:
        """A human-readable move: ``'D4'``, ``'pass'``, ``'resign'`` (Go) or ``'c3'`` (Hex)."""
        raise NotImplementedError

    def string_to_action(self, text: str) -> int:
        """The inverse of :meth:`action_to_string` (case-insensitive)."""
        for action in range(self.num_actions):
            if self.action_to_string(action).lower() == text.strip().lower():
                return action
        raise Error(f"{text!r} is not a {self.kind} move on a {self.board_size}x{self.board_size} board")

    # -- results -----------------------------------------------------------------------------------
    def end_reason(self, state: Any) -> str:
        """Why a terminal state ended (no resignations: the engine never sees those)."""
        raise NotImplementedError

    def winner(self, state: Any) -> int | None:
        """BLACK, WHITE or None (a draw) of a terminal state."""
        black_return = state.returns()[BLACK]
        if black_return > 0:
            return BLACK
        if black_return < 0:
            return WHITE
        return None

    def describe_end(self, state: Any, planes: np.ndarray) -> dict[str, Any]:
        """The ``info`` keys of a finished game: ``winner``, ``reason`` (and ``score`` for Go)."""
        winner = self.winner(state)
        return {"winner": None if winner is None else COLOR_NAMES[winner], "reason": self.end_reason(state)}


class Observer:
    """Fills OpenSpiel's observation buffer in place and hands out 2017-style ``(3, N, N)`` copies."""

    def __init__(self, game: BoardGame) -> None:
        from open_spiel.python.observation import make_observation

        observation = make_observation(game.spiel_game)
        self._observation = observation
        #: Fills the buffer from ``(state, player)``: the C++ method itself, one call less.
        self.set_from = observation._observation.set_from
        #: The whole buffer, flat (OpenSpiel's planes in its order: Go's rows bottom first, and a 4th plane).
        self.tensor = observation.tensor
        n = game.board_size
        planes = observation.tensor[: 3 * n * n].reshape(3, n, n)
        #: The buffer as 2017 planes (a view: copy it before handing it out).
        self.view = planes[:, ::-1, :] if game._flip else planes
        #: The buffer's empty plane, flat, in engine cell order (a view).
        self.empty = observation.tensor[2 * n * n : 3 * n * n]

    def planes(self, state: Any) -> np.ndarray:
        """A new float32 array ``(3, N, N)``: black, white, empty; row 0 at the top."""
        self.set_from(state, 0)
        return self.view.copy()


class GoGame(BoardGame):
    """Go: area (Tromp-Taylor) scoring with komi, suicide illegal, simple ko illegal, and a whole-board
    repetition (positional superko) ending the game as a draw; two passes or the move limit end it."""

    kind = "Go"

    def __init__(self, board_size: int = 9, komi: float = 7.5, max_moves: int | None = None) -> None:
        if not isinstance(board_size, int) or not 2 <= board_size <= 19:  # OpenSpiel's Go stops at 19x19
            raise Error(f"board_size must be an int from 2 to 19 for Go, not {board_size!r}")
        if not math.isfinite(float(komi)):
            raise Error(f"komi must be a finite number, not {komi!r}")
        n = board_size
        self.komi = float(komi)
        self.max_moves = int(max_moves) if max_moves is not None else 2 * n * n
        if self.max_moves < 2:
            raise Error(f"max_moves must be at least 2, not {max_moves!r}")
        pyspiel = import_pyspiel()
        spiel_game = pyspiel.load_game(
            "go", {"board_size": n, "komi": self.komi, "max_game_length": self.max_moves}
        )
        cells = n * n
        to_engine = [(n - 1 - a // n) * n + a % n for a in range(cells)] + [cells, RESIGN]
        mask_order = [*to_engine[:-1], cells + 1]
        super().__init__(spiel_game, n, to_engine, mask_order)
        self._flip = True
        self.num_actions = cells + 2
        self.pass_action = cells
        self.resign_action = cells + 1

    def board_core(
        self, num_boards: int, legal: bytearray, planes: np.ndarray, env_order: bool = False
    ) -> Any | None:
        """palaestra's Go board core (``_goboard.c``, OpenSpiel's rules reimplemented): None where the
        extension was not built, or when the environment variable ``PALAESTRA_GO_CORE`` is ``0``
        (then the envs ask OpenSpiel for every legal mask and plane: the same games, slower)."""
        if os.environ.get("PALAESTRA_GO_CORE", "1") == "0":
            return None
        try:
            from palaestra.envs.board._goboard import GoBoards
        except ImportError:
            return None
        rows = planes.reshape(num_boards, -1)
        return GoBoards(num_boards, self.board_size, self.max_moves, legal, rows, rows.shape[1], env_order)

    def describe_core_end(self, core: Any, board: int, planes: np.ndarray) -> tuple[dict[str, Any], float]:
        return self.describe_board_end(core.end_reason(board) or "", core.superko(board), planes)

    def action_to_string(self, action: int) -> str:
        n = self.board_size
        if action == self.pass_action:
            return "pass"
        if action == self.resign_action:
            return "resign"
        if not 0 <= action < n * n:
            raise Error(f"{action} is not a Go action on {n}x{n} (0..{self.num_actions - 1})")
        return f"{GTP_COLUMNS[action % n]}{n - action // n}"

    def string_to_action(self, text: str) -> int:
        word = text.strip().upper()
        n = self.board_size
        if word == "PASS":
            return self.num_cells
        if word == "RESIGN":
            return self.resign_action
        if len(word) >= 2 and word[0] in GTP_COLUMNS[:n] and word[1:].isdigit():
            column, row = GTP_COLUMNS.index(word[0]), int(word[1:])
            if 1 <= row <= n:
                return (n - row) * n + column
        raise Error(f"{text!r} is not a point on a {n}x{n} Go board (columns A-{GTP_COLUMNS[n - 1]}, no I)")

    def end_reason(self, state: Any) -> str:
        history = state.history()
        if len(history) >= 2 and history[-1] == history[-2] == self.num_cells:
            return "two passes"
        if len(history) >= self.max_moves:
            return "move limit"
        return "superko"

    def describe_end(self, state: Any, planes: np.ndarray) -> dict[str, Any]:
        info = super().describe_end(state, planes)
        info["score"] = area_score(planes, self.komi)
        return info

    def describe_board_end(
        self, reason: str, superko: bool, planes: np.ndarray
    ) -> tuple[dict[str, Any], float]:
        """:meth:`describe_end` and black's return of a game that ended on the board (``reason``:
        :meth:`end_reason`'s; ``superko``: whether its last move repeated a position, which can also
        be the move limit's) without its engine state, as OpenSpiel scores it: a superko is a draw,
        otherwise the area score decides (the board core's games: tests/envs/test_go_core.py)."""
        score = area_score(planes, self.komi)
        winner = None if superko or score == 0 else BLACK if score > 0 else WHITE
        info = {"winner": None if winner is None else COLOR_NAMES[winner], "reason": reason, "score": score}
        return info, 0.0 if winner is None else 1.0 if winner == BLACK else -1.0


def area_score(planes: np.ndarray, komi: float) -> float:
    """Tromp-Taylor area score from black's side: black area - white area - komi.

    A point counts for a colour if it holds that colour's stone or is empty and reaches only that
    colour's stones. No stone is removed as dead: the game is played until dead stones are captured.
    Computed on bitboards (Python ints, bit ``i*N + j`` for point (i, j)), in microseconds.
    """
    n = planes.shape[-1]
    cells = n * n
    board = (1 << cells) - 1
    # All three planes packed by one numpy call into one int, then cut into one int each.
    packed = int.from_bytes(np.packbits(planes[:3] > 0, bitorder="little").tobytes(), "little")
    black, white, empty = packed & board, packed >> cells & board, packed >> 2 * cells & board
    first_column = board // ((1 << n) - 1)  # bits 0, n, 2n, ...: the sum of a geometric series
    not_first, not_last = board & ~first_column, board & ~(first_column << (n - 1))

    def reaches(stones: int) -> int:
        # Empty points connected to ``stones`` through empty points (a point in the last column
        # has no right-hand neighbour, one in the first column no left-hand one).
        reached, frontier = 0, stones
        while True:
            sideways = (frontier & not_last) << 1 | (frontier & not_first) >> 1
            grown = (sideways | frontier << n | frontier >> n) & empty & ~reached
            if not grown:
                return reached
            reached |= grown
            frontier = grown

    black_reach, white_reach = reaches(black), reaches(white)
    black_area = black.bit_count() + (black_reach & ~white_reach).bit_count()
    white_area = white.bit_count() + (white_reach & ~black_reach).bit_count()
    return float(black_area - white_area) - komi


class HexGame(BoardGame):
    """Hex: black joins the top and bottom rows, white the left and right columns; no draws.

    With ``swap=True`` the second player's first move may be the swap: black's stone is mirrored in
    the long diagonal and becomes white, and black moves again (the pie rule, as OpenSpiel plays it).
    """

    kind = "Hex"

    def __init__(self, board_size: int = 9, swap: bool = False) -> None:
        if not isinstance(board_size, int) or not 1 <= board_size <= 25:
            raise Error(f"board_size must be an int from 1 to 25 for Hex, not {board_size!r}")
        n = board_size
        cells = n * n
        self.swap = bool(swap)
        pyspiel = import_pyspiel()
        spiel_game = pyspiel.load_game("hex", {"board_size": n, "plain_obs_tensor": True, "swap": self.swap})
        to_engine = [*range(cells), RESIGN]
        mask_order = [*range(cells), cells + (1 if self.swap else 0)]
        if self.swap:
            to_engine.append(cells)
            mask_order.append(cells)
        super().__init__(spiel_game, n, to_engine, mask_order)
        self.num_actions = len(to_engine)
        self.resign_action = cells
        self.empty_is_legal = not self.swap
        self.swap_action = cells + 1 if self.swap else None

    def board_core(
        self, num_boards: int, legal: bytearray, planes: np.ndarray, env_order: bool = False
    ) -> Any | None:
        """palaestra's Hex board core (``_hexboard.c``, OpenSpiel's rules without the swap; the engine's
        cell order is the env's): None with the swap rule, on a 1x1 board (whose one stone OpenSpiel
        does not count as a win: the game never ends), where the extension was not built, or when the
        environment variable ``PALAESTRA_HEX_CORE`` is ``0`` (then the env asks OpenSpiel)."""
        if self.swap or self.board_size < 2 or os.environ.get("PALAESTRA_HEX_CORE", "1") == "0":
            return None
        try:
            from palaestra.envs.board._hexboard import HexBoards
        except ImportError:
            return None
        if not hasattr(HexBoards, "step_random"):  # a core compiled before the vector env used it
            return None
        rows = planes.reshape(num_boards, -1)
        return HexBoards(num_boards, self.board_size, legal, rows, rows.shape[1])

    def describe_core_end(self, core: Any, board: int, planes: np.ndarray) -> tuple[dict[str, Any], float]:
        winner = core.winner(board)  # the player who joined its edges: Hex has no draws
        info = {"winner": COLOR_NAMES[winner], "reason": "connection"}
        return info, 1.0 if winner == BLACK else -1.0

    def action_to_string(self, action: int) -> str:
        n = self.board_size
        if action == self.resign_action:
            return "resign"
        if action == self.swap_action:
            return "swap"
        if not 0 <= action < n * n:
            raise Error(f"{action} is not a Hex action on {n}x{n} (0..{self.num_actions - 1})")
        return f"{HEX_COLUMNS[action % n]}{action // n + 1}"

    def end_reason(self, state: Any) -> str:
        return "connection"
