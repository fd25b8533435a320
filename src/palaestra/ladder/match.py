"""Matches: N games between two players, colours alternating, each game written to a match folder.

A match folder holds one record per game (``game-0001.sgf`` for Go, ``game-0001.hex.json`` for
Hex; :mod:`palaestra.ladder.records`) and ``match.json``, rewritten atomically after every game, so a
match stopped at any moment leaves a folder that uploads, missing at most the game in progress::

    {"format": "palaestra.match", "version": 1, "env_id": "Go9x9-v0", "game": "Go", "board_size": 9,
     "komi": 7.5, "swap": false, "move_time": 10.0, "seed": 0,
     "players": [{"name": "gnugo:1", "spec": "gnugo:1"}, {"name": "random", "spec": "random"}],
     "games": [{"file": "game-0001.sgf", "black": "gnugo:1", "white": "random", "result": "B+R",
                "reason": "resignation", "moves": 41, "seconds": 0.8}, ...],
     "palaestra": "0.x"}

The rules are the env's (``Go9x9-v0``: its board size and komi, or ``komi=``), always counted on
the board (Tromp-Taylor), since whoever checks a game replays it without the players. A player that
does not answer within ``move_time`` seconds loses that game on time; one that crashes or answers
an illegal move loses it by forfeit; the match goes on with the next game. A Python policy that
hangs cannot be stopped (its thread is left behind); it loses on time and a fresh instance plays on.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium

from palaestra._version import __version__
from palaestra.durable import write_atomically
from palaestra.envs.board.opponents import Opponent
from palaestra.envs.board.rules import BLACK, COLOR_NAMES, RESIGN, BoardGame, GoGame, HexGame
from palaestra.errors import EngineError, Error, IllegalMove
from palaestra.ladder.players import PlayerSpec, make_player
from palaestra.ladder.records import GameRecord, dump_record, record_suffix

__all__ = ["MATCH_FILE", "MATCH_FORMAT", "MatchRules", "play_game", "play_match", "rules_of_env"]

MATCH_FILE = "match.json"
MATCH_FORMAT = "palaestra.match"
#: Seconds a move when none is given: GNU Go's level 10 on 19x19 needs a few.
DEFAULT_MOVE_TIME = 30.0


class MoveTimeout(Error):
    """A player did not answer within the time per move."""


@dataclasses.dataclass(frozen=True)
class MatchRules:
    """The rules of a match, from its env id."""

    env_id: str
    game: str
    board_size: int
    komi: float = 0.0
    swap: bool = False

    def make(self) -> BoardGame:
        return GoGame(self.board_size, self.komi) if self.game == "Go" else HexGame(self.board_size, self.swap)


def rules_of_env(env_id: str, komi: float | None = None) -> MatchRules:
    """The rules of a registered board-game env (``Go9x9-v0``, ``Hex11x11-v0``...), komi overridable."""
    import palaestra.envs  # registers the board games

    spec = gymnasium.registry.get(env_id)
    entry = str(spec.entry_point) if spec is not None else ""
    if spec is None or not entry.startswith("palaestra.envs.board."):
        raise Error(f"{env_id!r} is not a board-game env: use {', '.join(palaestra.envs.BOARD_GAME_IDS)}")
    kwargs = spec.kwargs
    size = int(kwargs.get("board_size", 9))
    if entry.endswith(":GoEnv"):
        return MatchRules(env_id, "Go", size, float(kwargs.get("komi", 7.5) if komi is None else komi))
    if komi is not None:
        raise Error("komi is a Go rule; Hex has none")
    return MatchRules(env_id, "Hex", size, swap=bool(kwargs.get("swap", False)))


class _Side:
    """One player during a match: its opponent object, remade after a hang or crash."""

    def __init__(self, player: PlayerSpec, rules: BoardGame, move_time: float) -> None:
        self.player = player
        self.rules = rules
        self.move_time = move_time
        self.opponent: Opponent = make_player(player, rules, move_time)
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    def start(self, color: int, seed: int) -> None:
        self.opponent.bind(self.rules, color)
        self.opponent.reset(seed)

    def act(self, state: Any) -> int:
        if not self.player.in_process:
            return self.opponent.act(state)  # the GTP client times the engine and stops it
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=self.player.name)
        future = self._executor.submit(self.opponent.act, state.clone())
        try:
            return future.result(timeout=self.move_time)
        except concurrent.futures.TimeoutError:
            self._executor.shutdown(wait=False)  # the stuck thread cannot be stopped: left behind
            self._executor = None
            self.opponent = make_player(self.player, self.rules, self.move_time)
            raise MoveTimeout(f"{self.player.name} did not move within {self.move_time:g} s") from None

    def close(self) -> None:
        self.opponent.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False)


def play_game(rules: BoardGame, black: _Side, white: _Side, seed: int) -> GameRecord:
    """One game, black first; a player's failure ends it as that player's loss (time or forfeit)."""
    sides = (black, white)
    black.start(BLACK, seed)
    white.start(1 - BLACK, seed + 1)
    state = rules.new_state()
    moves: list[str] = []
    ending: tuple[str | None, str, str] | None = None
    while not state.is_terminal():
        to_move = state.current_player()
        side = sides[to_move]
        winner = COLOR_NAMES[1 - to_move]
        try:
            engine_action = side.act(state)
        except MoveTimeout as exc:
            ending = (winner, "time", str(exc))
        except EngineError as exc:
            ending = (winner, "time" if "did not answer" in str(exc) else "forfeit", str(exc))
            side.opponent.close()
        except (IllegalMove, Error) as exc:
            ending = (winner, "forfeit", f"{side.player.name}: {exc}")
        except Exception as exc:  # a Python policy's own bug forfeits its game, never the match
            ending = (winner, "forfeit", f"{side.player.name} raised {type(exc).__name__}: {exc}")
        else:
            if engine_action == RESIGN:
                ending = (winner, "resignation", "")
            elif not 0 <= engine_action < len(rules.from_engine) or not state.legal_actions_mask()[engine_action]:
                ending = (winner, "forfeit", f"{side.player.name} chose an illegal move ({engine_action})")
        if ending is not None:
            break
        state.apply_action(engine_action)
        moves.append(rules.action_to_string(rules.from_engine[engine_action]))
    record = GameRecord(
        game=rules.kind, board_size=rules.board_size, black=black.player.name, white=white.player.name,
        moves=moves, winner=None, reason="", komi=getattr(rules, "komi", 0.0),
        swap=bool(getattr(rules, "swap", False)), date=datetime.date.today().isoformat(),
    )  # fmt: skip
    if ending is not None:
        record.winner, record.reason, record.note = ending
        return record
    planes = rules.make_observer().planes(state)
    end = rules.describe_end(state, planes)
    record.winner = end["winner"]
    record.reason = "connection" if rules.kind == "Hex" else "score" if end["winner"] else "draw"
    record.score = end.get("score")
    return record


@dataclasses.dataclass
class GameSummary:
    """A line of ``match.json``'s games."""

    file: str
    black: str
    white: str
    result: str
    reason: str
    moves: int
    seconds: float


def play_match(
    rules: MatchRules,
    first: PlayerSpec,
    second: PlayerSpec,
    games: int,
    folder: str | os.PathLike[str],
    move_time: float = DEFAULT_MOVE_TIME,
    seed: int = 0,
    on_game: Callable[[int, GameSummary, dict[str, float]], None] | None = None,
) -> list[GameSummary]:
    """Play ``games`` games (``first`` is black in the odd ones: 1st, 3rd...) into ``folder``.

    ``on_game(number, summary, points)`` is called after each game (``points``: each player's points
    so far, a win 1, a draw 0.5). The folder must be new or empty.
    """
    if games < 1:
        raise Error(f"A match has at least one game, not {games}")
    if first.name == second.name:
        raise Error(f"Both players are named {first.name!r}: give one another name (NAME=SPEC)")
    path = Path(folder)
    if path.exists() and any(path.iterdir()):
        raise Error(f"The match folder {path} is not empty; choose a new folder")
    path.mkdir(parents=True, exist_ok=True)
    board = rules.make()
    sides = [_Side(first, board, move_time), _Side(second, board, move_time)]
    document: dict[str, Any] = {
        "format": MATCH_FORMAT, "version": 1, **dataclasses.asdict(rules), "move_time": move_time,
        "seed": seed, "players": [{"name": p.name, "spec": p.spec} for p in (first, second)],
        "games": [], "palaestra": __version__,
    }  # fmt: skip
    points = {first.name: 0.0, second.name: 0.0}
    summaries: list[GameSummary] = []
    try:
        for number in range(1, games + 1):
            black, white = (sides[0], sides[1]) if number % 2 else (sides[1], sides[0])
            started = time.monotonic()
            record = play_game(board, black, white, seed * 100_003 + number)
            name = f"game-{number:04d}{record_suffix(record.game)}"
            text = dump_record(record).encode()
            _write(path / name, text)
            summary = GameSummary(
                name, record.black, record.white, record.result_text(), record.reason, len(record.moves),
                round(time.monotonic() - started, 3),
            )
            summaries.append(summary)
            if record.winner is None:
                points[record.black] += 0.5
                points[record.white] += 0.5
            else:
                points[record.black if record.winner == "black" else record.white] += 1.0
            document["games"].append(dataclasses.asdict(summary))
            match_text = json.dumps(document, indent=1).encode()
            _write(path / MATCH_FILE, match_text)
            if on_game is not None:
                on_game(number, summary, points)
    finally:
        for side in sides:
            side.close()
    return summaries


def _write(path: Path, data: bytes) -> None:
    write_atomically(path, lambda f: f.write(data))


def read_match(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``match.json`` of a match folder."""
    path = Path(folder) / MATCH_FILE
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise Error(f"{folder} is not a match folder: it has no {MATCH_FILE}") from None
    except ValueError as exc:
        raise Error(f"{path} is not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != MATCH_FORMAT:
        raise Error(f"{path} is not a palaestra match file (format {MATCH_FORMAT!r})")
    return document


def match_games(folder: str | os.PathLike[str]) -> list[tuple[str, GameRecord]]:
    """The games of a match folder, in order: (file name, record)."""
    from palaestra.ladder.records import load_record

    document = read_match(folder)
    games = []
    for entry in document.get("games", []):
        name = str(entry.get("file", ""))
        if os.sep in name or "/" in name or not name:
            raise Error(f"{folder}/{MATCH_FILE} names a game file {name!r} outside the folder")
        games.append((name, load_record(name, (Path(folder) / name).read_bytes())))
    return games


def rated_games(records: list[GameRecord]) -> list[tuple[str, str, float]]:
    """The (black, white, black's points) of each game, for :func:`palaestra.ladder.ratings.rate`."""
    points = {"black": 1.0, "white": 0.0, None: 0.5}
    return [(r.black, r.white, points[r.winner]) for r in records]
