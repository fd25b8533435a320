"""Pictures of Go and Hex boards: text with coordinates (``ansi``), numpy images (``rgb_array``) and a
pygame window (``human``).

Images are drawn with numpy only: the geometry of a board size (which pixel belongs to which point's
stone, the grid, the hexagons) is computed once and cached, so a frame costs a few array lookups.
Frame sides are multiples of 16 pixels, which video encoders like.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from palaestra.envs.board.rules import COLOR_NAMES, GTP_COLUMNS, HEX_COLUMNS, BoardGame
from palaestra.errors import DependencyNotInstalled

WOOD = (220, 179, 92)
TAN = (230, 200, 150)
INK = (30, 30, 30)
BLACK_STONE = (25, 25, 25)
WHITE_STONE = (245, 245, 245)
STONE_EDGE = (90, 90, 90)
BLACK_EDGE = (60, 60, 60)
WHITE_EDGE = (250, 250, 250)
MARK = (220, 40, 40)
BACKGROUND = (200, 200, 200)


@dataclass(frozen=True)
class BoardView:
    """What a picture shows: the planes, whose turn it is, the last move, the result if over."""

    kind: str
    board_size: int
    planes: np.ndarray
    to_play: int | None
    last_move: tuple[int, str] | None  # (colour, move as text)
    last_cell: int | None  # the env action of the last stone placed, if it was a stone
    moves: int
    result: str | None

    @classmethod
    def of(cls, game: BoardGame, state: Any, planes: np.ndarray, outcome: str | None = None) -> BoardView:
        """The view of an OpenSpiel ``state`` of ``game``; ``outcome`` marks a game that ended off the
        board (a resignation, an illegal move)."""
        history = state.history()
        last_move = last_cell = None
        if history:
            action = game.from_engine[history[-1]]
            last_move = ((len(history) - 1) % 2, game.action_to_string(action))
            if action < game.num_cells:
                last_cell = action
        result = outcome
        to_play: int | None = None
        if outcome is not None:
            pass
        elif state.is_terminal():
            winner = game.winner(state)
            result = "draw" if winner is None else f"{COLOR_NAMES[winner]} wins"
        else:
            to_play = state.current_player()
        return cls(game.kind, game.board_size, planes, to_play, last_move, last_cell, len(history), result)


def _header(view: BoardView) -> str:
    status = (
        f"To play: {COLOR_NAMES[view.to_play]}" if view.to_play is not None else f"Game over: {view.result}"
    )
    last = f", last: {COLOR_NAMES[view.last_move[0]]} {view.last_move[1]}" if view.last_move else ""
    return f"{status} (move {view.moves}{last})\n"


def ansi(view: BoardView) -> str:
    """The board as text: Go with GTP coordinates (X black, O white), Hex as a sheared rhombus (B, W)."""
    n = view.board_size
    black, white = view.planes[0] > 0, view.planes[1] > 0
    lines = [_header(view).rstrip("\n")]
    if view.kind == "Go":
        columns = "    " + " ".join(GTP_COLUMNS[:n])
        lines.append(columns)
        for i in range(n):
            cells = ["X" if black[i, j] else "O" if white[i, j] else "." for j in range(n)]
            if view.last_cell is not None and view.last_cell // n == i:
                j = view.last_cell % n
                cells[j] = cells[j].lower() if cells[j] != "." else cells[j]
            lines.append(f"{n - i:>3} " + " ".join(cells) + f" {n - i}")
        lines.append(columns)
        lines.append("X black, O white (x/o: the last stone played)")
    else:
        lines.append("    " + " ".join(HEX_COLUMNS[:n]))
        for r in range(n):
            cells = ["B" if black[r, c] else "W" if white[r, c] else "." for c in range(n)]
            lines.append(" " * r + f"{r + 1:>3} " + " ".join(cells) + f" {r + 1}")
        lines.append(" " * (n - 1) + "    " + " ".join(HEX_COLUMNS[:n]))
        lines.append("B black joins top and bottom, W white joins left and right")
    return "\n".join(lines) + "\n"


def _round16(value: float) -> int:
    return math.ceil(value / 16.0) * 16


@dataclass(frozen=True)
class _Layout:
    background: np.ndarray  # (H, W, 3) uint8
    disc_pixels: np.ndarray  # flat pixel indices inside a stone
    disc_cells: np.ndarray  # the cell of each of those pixels
    ring_pixels: np.ndarray  # flat pixel indices on a stone's rim
    ring_cells: np.ndarray
    mark_pixels: np.ndarray  # flat pixel indices of the last-move mark
    mark_cells: np.ndarray


def _stone_pixels(
    distance: np.ndarray, cell: np.ndarray, radius: float, mark: float
) -> tuple[np.ndarray, ...]:
    flat_distance, flat_cell = distance.ravel(), cell.ravel()
    on_board = flat_cell >= 0
    disc = np.flatnonzero(on_board & (flat_distance <= radius - 1.5))
    ring = np.flatnonzero(on_board & (flat_distance > radius - 1.5) & (flat_distance <= radius))
    dot = np.flatnonzero(on_board & (flat_distance <= mark))
    return disc, flat_cell[disc], ring, flat_cell[ring], dot, flat_cell[dot]


@functools.lru_cache(maxsize=8)
def _go_layout(n: int) -> _Layout:
    step = max(12, 480 // (n + 1))
    size = _round16((n + 1) * step)
    margin = (size - (n - 1) * step) / 2.0
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float64)
    pi, pj = np.rint((ys - margin) / step), np.rint((xs - margin) / step)
    distance = np.hypot(ys - (margin + pi * step), xs - (margin + pj * step))
    inside = (pi >= 0) & (pi < n) & (pj >= 0) & (pj < n)
    cell = np.where(inside, pi * n + pj, -1).astype(np.int64)
    image = np.empty((size, size, 3), np.uint8)
    image[:] = WOOD
    low, high = round(margin), round(margin + (n - 1) * step)
    for k in range(n):
        at = round(margin + k * step)
        image[at : at + 1, low : high + 1] = INK
        image[low : high + 1, at : at + 1] = INK
    star = {9: (2, 4, 6), 13: (3, 6, 9), 19: (3, 9, 15)}.get(n, ())
    hoshi = np.zeros((size, size), bool)
    for i in star:
        for j in star:
            if n == 9 and (i == 4) != (j == 4):
                continue
            hoshi |= np.hypot(ys - (margin + i * step), xs - (margin + j * step)) <= max(2.0, step * 0.1)
    image[hoshi] = INK
    return _Layout(image, *_stone_pixels(distance, cell, step * 0.47, step * 0.15))


@functools.lru_cache(maxsize=8)
def _hex_layout(n: int) -> _Layout:
    width = max(12, int(600 / (1.5 * n + 1)))
    height = width * math.sqrt(3) / 2
    radius = width / math.sqrt(3)
    image_w = _round16(width * (1.5 * n - 0.5) + 2 * width)
    image_h = _round16(height * (n - 1) + 2 * radius + 2 * width)
    mx = (image_w - width * (1.5 * n - 1.5)) / 2.0  # x of cell (0, 0)'s centre, so the board is centred
    my = (image_h - height * (n - 1)) / 2.0
    ys, xs = np.mgrid[0:image_h, 0:image_w].astype(np.float64)
    rf = (ys - my) / height
    cf = (xs - mx) / width - rf / 2.0
    # Round axial coordinates to the nearest hexagon centre (cube rounding): the hexagon under each pixel.
    cx, cz = cf, rf
    cy = -cx - cz
    rx, ry, rz = np.rint(cx), np.rint(cy), np.rint(cz)
    dx, dy, dz = np.abs(rx - cx), np.abs(ry - cy), np.abs(rz - cz)
    fix_x = (dx > dy) & (dx > dz)
    fix_z = ~fix_x & (dz >= dy)
    rx = np.where(fix_x, -ry - rz, rx)
    rz = np.where(fix_z, -rx - ry, rz)
    row, col = rz.astype(np.int64), rx.astype(np.int64)
    inside = (row >= 0) & (row < n) & (col >= 0) & (col < n)
    cell = np.where(inside, row * n + col, -1)
    distance = np.hypot(xs - (mx + (col + row / 2.0) * width), ys - (my + row * height))
    image = np.empty((image_h, image_w, 3), np.uint8)
    image[:] = BACKGROUND
    image[((row == -1) | (row == n)) & (col >= -1) & (col <= n) & ~((row == -1) & (col == -1))] = BLACK_EDGE
    image[((col == -1) | (col == n)) & (row >= 0) & (row < n)] = WHITE_EDGE
    image[inside] = TAN
    label = np.where(inside, cell, -1 - ((row + 2) * (n + 4) + col + 2))
    outline = np.zeros((image_h, image_w), bool)
    outline[:, :-1] |= label[:, :-1] != label[:, 1:]
    outline[:-1, :] |= label[:-1, :] != label[1:, :]
    image[outline & (inside | np.roll(inside, 1, 0) | np.roll(inside, 1, 1))] = STONE_EDGE
    return _Layout(image, *_stone_pixels(distance, cell, width * 0.38, width * 0.12))


def rgb_array(view: BoardView) -> np.ndarray:
    """The board as an (H, W, 3) uint8 image; the last stone played has a red mark."""
    layout = _go_layout(view.board_size) if view.kind == "Go" else _hex_layout(view.board_size)
    image = layout.background.copy()
    flat = image.reshape(-1, 3)
    colour_of_cell = np.zeros(view.board_size**2, np.int8)  # 0 empty, 1 black, 2 white
    colour_of_cell[view.planes[0].ravel() > 0] = 1
    colour_of_cell[view.planes[1].ravel() > 0] = 2
    for pixels, cells, palette in (
        (layout.disc_pixels, layout.disc_cells, (BLACK_STONE, WHITE_STONE)),
        (layout.ring_pixels, layout.ring_cells, (BLACK_STONE, STONE_EDGE)),
    ):
        colours = colour_of_cell[cells]
        for value, rgb in ((1, palette[0]), (2, palette[1])):
            flat[pixels[colours == value]] = rgb
    if view.last_cell is not None:
        flat[layout.mark_pixels[layout.mark_cells == view.last_cell]] = MARK
    return image


class HumanWindow:
    """A pygame window that shows frames (``render_mode='human'``)."""

    def __init__(self, title: str) -> None:
        try:
            import pygame
        except ImportError as exc:
            raise DependencyNotInstalled(
                f"render_mode='human' needs pygame ({exc}): pip install pygame-ce (or gymnasium[classic-control])"
            ) from exc
        self._pygame = pygame
        self.title = title
        self._screen: Any = None
        self._clock: Any = None

    def show(self, frame: np.ndarray, fps: float) -> None:
        """Draw ``frame`` and wait so that frames come at most ``fps`` a second."""
        pygame = self._pygame
        if self._screen is None:
            pygame.display.init()
            pygame.display.set_caption(self.title)
            self._screen = pygame.display.set_mode((frame.shape[1], frame.shape[0]))
            self._clock = pygame.time.Clock()
        surface = pygame.surfarray.make_surface(np.ascontiguousarray(frame.swapaxes(0, 1)))
        self._screen.blit(surface, (0, 0))
        pygame.event.pump()
        pygame.display.flip()
        self._clock.tick(fps)

    def close(self) -> None:
        """Close the window."""
        if self._screen is not None:
            self._pygame.display.quit()
            self._screen = None


__all__ = ["BoardView", "HumanWindow", "ansi", "rgb_array"]
