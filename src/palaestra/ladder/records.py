"""A played game as palaestra records it (:class:`GameRecord`), and its two file formats.

* **Go: SGF** (FF[4], :mod:`palaestra.ladder.sgf`). Root: ``GM[1]``, ``SZ``, ``KM``, ``RU[Tromp-Taylor]``
  (area scoring, nothing removed as dead), ``PB``/``PW`` (the players' ladder names), ``RE``, ``DT``,
  ``AP``; a forfeit's cause in the root's ``C``. Moves ``;B[..]`` / ``;W[..]`` alternate from black,
  a pass is ``B[]`` (``[tt]`` is read as a pass on boards up to 19x19).
  ``RE``: ``B+3.5`` (the count), ``B+R`` (resignation), ``B+T`` (the loser ran out of time), ``B+F``
  (forfeit: the loser's engine crashed or chose an illegal move), ``0`` (a draw: a repeated position,
  or a count of exactly zero).
* **Hex: JSON** (``.hex.json``)::

    {"format": "palaestra.hex-game", "version": 1, "game": "Hex", "board_size": 9, "swap": false,
     "black": "mcts:100", "white": "random", "moves": ["e5", "c3", ...],
     "result": {"winner": "black", "reason": "connection", "note": ""}, "date": "2026-12-01"}

  Moves are cells ``a1`` (column letter, row number from the top; ``i`` is a column), or ``swap``.
  ``reason``: ``connection``, ``resignation``, ``time`` or ``forfeit``.

The moves are palaestra's move names (``D4``/``pass`` for Go, ``c3``/``swap`` for Hex); a
resignation or forfeit is the result, never a move.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from palaestra._version import __version__
from palaestra.envs.board.rules import GTP_COLUMNS
from palaestra.errors import Error
from palaestra.ladder import sgf

__all__ = [
    "HEX_FORMAT",
    "REASONS_WITHOUT_BOARD_END",
    "GameRecord",
    "RecordError",
    "dump_record",
    "from_hex_json",
    "from_sgf",
    "load_record",
    "record_suffix",
    "to_hex_json",
    "to_sgf",
]

HEX_FORMAT = "palaestra.hex-game"
#: Results that the board does not decide: the loser is the player to move when it happened.
REASONS_WITHOUT_BOARD_END = ("resignation", "time", "forfeit")
_RE_CODES = {"resignation": "R", "time": "T", "forfeit": "F"}
_RE_REASONS = {"R": "resignation", "RESIGN": "resignation", "T": "time", "TIME": "time", "F": "forfeit",
               "FORFEIT": "forfeit"}  # fmt: skip
_RE_SCORE = re.compile(r"^([BW])\+(\d+(?:\.\d+)?)$")


class RecordError(Error):
    """A game record that cannot be read: the message names the problem."""


@dataclasses.dataclass
class GameRecord:
    """One game: who played, the rules, the moves and the result.

    ``winner`` is ``'black'``, ``'white'`` or None (a draw); ``reason`` says how it ended (``score``
    for a counted Go game, ``draw``, ``connection`` for Hex, or one of
    :data:`REASONS_WITHOUT_BOARD_END`); ``score`` is a counted Go game's margin from black's side.
    """

    game: str  # "Go" or "Hex"
    board_size: int
    black: str
    white: str
    moves: list[str]
    winner: str | None
    reason: str
    komi: float = 0.0
    swap: bool = False
    score: float | None = None
    note: str = ""
    date: str = ""

    def loser(self) -> str | None:
        """The losing colour, or None for a draw."""
        return None if self.winner is None else "white" if self.winner == "black" else "black"

    def result_text(self) -> str:
        """The result in SGF's words (``B+R``, ``W+3.5``, ``0``), for both games."""
        if self.winner is None:
            return "0"
        side = "B" if self.winner == "black" else "W"
        if self.reason in _RE_CODES:
            return f"{side}+{_RE_CODES[self.reason]}"
        if self.score is not None:
            return f"{side}+{abs(self.score):g}"
        return f"{side}+"


def record_suffix(game: str) -> str:
    """The file suffix of a record of ``game``."""
    return ".sgf" if game == "Go" else ".hex.json"


# -- Go: SGF ---------------------------------------------------------------------------------------
def _sgf_point(move: str, size: int) -> str:
    if move.lower() == "pass":
        return ""
    column, row = GTP_COLUMNS.index(move[0].upper()), int(move[1:])
    return chr(ord("a") + column) + chr(ord("a") + size - row)


def _move_of_point(point: str, size: int, where: str) -> str:
    if point == "" or (point == "tt" and size <= 19):
        return "pass"
    if len(point) != 2 or not all("a" <= c < chr(ord("a") + size) for c in point):
        raise RecordError(f"{where}: {point!r} is not a point on a {size}x{size} board")
    column, row = ord(point[0]) - ord("a"), ord(point[1]) - ord("a")
    return f"{GTP_COLUMNS[column]}{size - row}"


def to_sgf(record: GameRecord) -> str:
    """The SGF text of a Go game."""
    root: dict[str, list[str]] = {
        "FF": ["4"], "GM": ["1"], "CA": ["UTF-8"], "AP": [f"palaestra:{__version__}"],
        "SZ": [str(record.board_size)], "KM": [f"{record.komi:g}"], "RU": ["Tromp-Taylor"],
        "PB": [record.black], "PW": [record.white], "RE": [record.result_text()],
    }  # fmt: skip
    if record.date:
        root["DT"] = [record.date]
    if record.note:
        root["C"] = [record.note]
    nodes = [root]
    for index, move in enumerate(record.moves):
        nodes.append({"BW"[index % 2]: [_sgf_point(move, record.board_size)]})
    return sgf.dumps(nodes)


def _one(root: sgf.Node, name: str, default: str | None = None) -> str:
    values = root.get(name)
    if not values:
        if default is None:
            raise RecordError(f"The SGF root has no {name} property")
        return default
    return values[0]


def _parse_result(text: str) -> tuple[str | None, str, float | None]:
    word = text.strip().upper()
    if word in ("0", "DRAW", "JIGO"):
        return None, "draw", None
    match = _RE_SCORE.match(word)
    if match:
        return ("black" if match.group(1) == "B" else "white"), "score", float(match.group(2))
    side, plus, code = word.partition("+")
    if side in ("B", "W") and plus and not code:  # FF[4]: a win "without a score", the board decides
        return ("black" if side == "B" else "white"), "score", None
    if side in ("B", "W") and code in _RE_REASONS:
        return ("black" if side == "B" else "white"), _RE_REASONS[code], None
    raise RecordError(
        f"RE[{text}] is not a result palaestra reads: B+3.5, B+ (no score), W+R (resignation), B+T (time), "
        "B+F (forfeit) or 0"
    )


def from_sgf(data: str | bytes) -> GameRecord:
    """The Go game in SGF ``data`` (untrusted: see :mod:`palaestra.ladder.sgf` for the limits)."""
    nodes = sgf.loads(data)
    root = nodes[0]
    if _one(root, "GM", "1") != "1":
        raise RecordError(f"GM[{_one(root, 'GM')}] is not Go (GM[1])")
    try:
        size = int(_one(root, "SZ", "19"))
        komi = float(_one(root, "KM", "0"))
    except ValueError as exc:
        raise RecordError(f"SZ or KM is not a number: {exc}") from None
    if not 2 <= size <= 19:  # OpenSpiel's Go rules play up to 19x19
        raise RecordError(f"SZ[{size}]: palaestra plays Go from 2x2 to 19x19")
    for setup in ("AB", "AW", "AE", "HA"):
        if setup in root:
            raise RecordError(f"The SGF root sets up stones ({setup}); ladder games start on an empty board")
    winner, reason, score = _parse_result(_one(root, "RE"))
    if reason == "score" and score is not None:
        score = score if winner == "black" else -score
    moves: list[str] = []
    for index, node in enumerate(nodes[1:], start=1):
        color = "B" if len(moves) % 2 == 0 else "W"
        other = "W" if color == "B" else "B"
        if other in node:
            raise RecordError(f"Move {len(moves) + 1} (node {index}) is played by {other}; moves alternate from black")
        if color not in node:
            if any(name in node for name in ("AB", "AW", "AE")):
                raise RecordError(f"Node {index} sets up stones; ladder games have moves only")
            continue  # a node without a move (a comment): skipped
        moves.append(_move_of_point(node[color][0], size, f"Move {len(moves) + 1} ({color})"))
    return GameRecord(
        game="Go", board_size=size, black=_one(root, "PB", "black"), white=_one(root, "PW", "white"),
        moves=moves, winner=winner, reason=reason, komi=komi, score=score, note=_one(root, "C", ""),
        date=_one(root, "DT", ""),
    )  # fmt: skip


# -- Hex: JSON -------------------------------------------------------------------------------------
def to_hex_json(record: GameRecord) -> str:
    """The JSON text of a Hex game (the module docstring's format)."""
    document = {
        "format": HEX_FORMAT, "version": 1, "game": "Hex", "board_size": record.board_size,
        "swap": record.swap, "black": record.black, "white": record.white, "moves": record.moves,
        "result": {"winner": record.winner, "reason": record.reason, "note": record.note},
        "date": record.date,
    }  # fmt: skip
    return json.dumps(document, indent=1) + "\n"


def from_hex_json(data: str | bytes, max_bytes: int = sgf.MAX_BYTES) -> GameRecord:
    """The Hex game in JSON ``data`` (untrusted: size, types and fields are checked)."""
    if len(data) > max_bytes:
        raise RecordError(f"The Hex record is {len(data)} bytes; at most {max_bytes} are accepted")
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"The Hex record is not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != HEX_FORMAT:
        raise RecordError(f"Not a Hex record: a JSON object with \"format\": {HEX_FORMAT!r} is expected")
    result = document.get("result")
    moves = document.get("moves")
    size = document.get("board_size")
    if not isinstance(result, dict) or not isinstance(moves, list) or not all(isinstance(m, str) for m in moves):
        raise RecordError("A Hex record needs \"moves\" (a list of strings) and \"result\" (an object)")
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 25:
        raise RecordError(f"board_size {size!r} is not a Hex size (an int from 1 to 25)")
    winner, reason = result.get("winner"), result.get("reason")
    if winner not in ("black", "white") or reason not in ("connection", *REASONS_WITHOUT_BOARD_END):
        raise RecordError(
            f"result {result!r}: winner must be 'black' or 'white' (Hex has no draws), reason one of "
            f"connection, {', '.join(REASONS_WITHOUT_BOARD_END)}"
        )
    fields = {name: document.get(name, "") for name in ("black", "white", "date")}
    if not all(isinstance(value, str) for value in fields.values()):
        raise RecordError("black, white and date must be strings")
    return GameRecord(
        game="Hex", board_size=size, moves=moves, winner=winner, reason=reason,
        swap=bool(document.get("swap", False)), note=str(result.get("note", "")), **fields,
    )  # fmt: skip


def dump_record(record: GameRecord) -> str:
    """The file text of ``record`` in its game's format."""
    return to_sgf(record) if record.game == "Go" else to_hex_json(record)


def load_record(name: str, data: str | bytes) -> GameRecord:
    """The game in file ``name`` (``.sgf`` or ``.hex.json``); RecordError (or SGFError) otherwise."""
    if name.endswith(".sgf"):
        return from_sgf(data)
    if name.endswith(".hex.json"):
        return from_hex_json(data)
    raise RecordError(f"{name}: a game record is a .sgf (Go) or .hex.json (Hex) file")


def as_dict(record: GameRecord) -> dict[str, Any]:
    """The record's fields (for JSON answers)."""
    return dataclasses.asdict(record)
