"""What the differential tests of palaestra's two board cores (``_goboard.c``, ``_hexboard.c``) share:
a game played on OpenSpiel and on a core at once, compared after every move, and a deep equality of
what two envs returned."""

from __future__ import annotations

from typing import Any

import numpy as np

from palaestra.envs.board.rules import BLACK, GoGame, HexGame


class GoPair:
    """One game played on OpenSpiel and on the core at once; every move compares the two."""

    def __init__(self, game: GoGame) -> None:
        self.game = game
        self.cells = game.num_cells
        self.legal = bytearray(self.cells + 2)
        self.planes = np.zeros(4 * self.cells, np.float32)
        self.core = game.board_core(1, self.legal, self.planes)
        assert self.core is not None
        self.observer = game.make_observer()
        self.state = game.new_state()
        self.captures = 0
        self.kos = 0
        self.compare()

    def play(self, engine_action: int) -> None:
        cells = self.cells
        mover = len(self.state.history()) % 2
        stones_before = self.planes[:cells] + self.planes[cells : 2 * cells]
        theirs_before = self.planes[(1 - mover) * cells : (2 - mover) * cells].copy()
        self.state.apply_action(engine_action)
        over = self.core.play(0, engine_action)
        assert over == self.state.is_terminal()
        stones_after = self.planes[:cells] + self.planes[cells : 2 * cells]
        emptied = np.flatnonzero(stones_before > stones_after)
        self.captures += len(emptied)
        taken_in_their_eye = len(emptied) == 1 and self.in_their_eye(engine_action, theirs_before)
        if engine_action < cells and taken_in_their_eye and not over:
            self.kos += 1  # OpenSpiel's ko: the one stone taken may not be retaken at once
            assert not self.legal[emptied[0]]
        self.compare()

    def in_their_eye(self, point: int, theirs: np.ndarray) -> bool:
        """Whether every neighbour of ``point`` held a stone of the other colour or was off the board."""
        n = self.game.board_size
        row, column = divmod(point, n)
        around = ((row - 1, column), (row + 1, column), (row, column - 1), (row, column + 1))
        return all(not (0 <= r < n and 0 <= c < n) or theirs[r * n + c] for r, c in around)

    def compare(self) -> None:
        self.observer.set_from(self.state, 0)
        np.testing.assert_array_equal(self.planes[: 3 * self.cells], self.observer.tensor[: 3 * self.cells])
        assert self.core.to_play(0) == len(self.state.history()) % 2
        assert self.core.history(0) == self.state.history()
        if self.state.is_terminal():
            assert self.legal == bytes(self.cells + 2)  # nothing is legal, resign neither
            assert self.core.end_reason(0) == self.game.end_reason(self.state)
            planes = self.observer.view.copy()
            info, black_return = self.game.describe_board_end(
                self.core.end_reason(0), self.core.superko(0), planes
            )
            assert info == self.game.describe_end(self.state, planes)
            assert black_return == self.state.returns()[BLACK]
        else:
            assert self.legal == bytes([*self.state.legal_actions_mask(), 1])
            assert self.core.end_reason(0) is None


class HexPair:
    """One game played on OpenSpiel and on the core at once; every move compares the two."""

    def __init__(self, game: HexGame) -> None:
        self.game = game
        self.cells = game.num_cells
        self.legal = bytearray(self.cells + 1)
        self.planes = np.zeros(3 * self.cells, np.float32)
        self.core = game.board_core(1, self.legal, self.planes)
        assert self.core is not None
        self.observer = game.make_observer()
        self.state = game.new_state()
        self.compare()

    def play(self, engine_action: int) -> None:
        self.state.apply_action(engine_action)
        over = self.core.play(0, engine_action)
        assert over == self.state.is_terminal()
        self.compare()

    def compare(self) -> None:
        self.observer.set_from(self.state, 0)
        np.testing.assert_array_equal(self.planes, self.observer.tensor[: 3 * self.cells])
        assert self.core.to_play(0) == len(self.state.history()) % 2
        assert self.core.history(0) == self.state.history()
        assert self.core.is_over(0) == self.state.is_terminal()
        if self.state.is_terminal():
            assert self.legal == bytes(self.cells + 1)  # nothing is legal, resign neither
            winner = self.core.winner(0)
            assert winner == self.game.winner(self.state)
            assert winner == (len(self.state.history()) - 1) % 2  # the last mover joined its edges
            planes = self.observer.view.copy()
            info, black_return = self.game.describe_core_end(self.core, 0, planes)
            assert info == self.game.describe_end(self.state, planes)
            assert black_return == self.state.returns()[BLACK]
        else:
            assert self.legal == bytes([*self.state.legal_actions_mask(), 1])
            assert self.core.winner(0) is None


def assert_same(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        if a.dtype == object:  # the vector env's info values: None, str or final observations
            assert_same(list(a), list(b))
        else:
            np.testing.assert_array_equal(a, b)
    else:
        assert type(a) is type(b) and a == b


PAIRS = {"go": GoPair, "hex": HexPair}
