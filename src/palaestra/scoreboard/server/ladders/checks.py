"""Checking a match upload before anything of it is stored: every game parsed (SGF is untrusted input:
:mod:`palaestra.ladder.sgf`'s limits) and replayed through the rules (:func:`palaestra.ladder.replay.replay`).
The server never runs a player; it only replays moves.

A problem is a :class:`~palaestra.scoreboard.server.problems.Problem` naming the game file (and the
move): 400 for what cannot be read (malformed SGF or JSON, a game of other rules than the match's),
422 for a game the rules refuse (an illegal move, a result that is not the rules' result).

Each checked game carries its content's digest and, when it does not count for the ratings, why
(:mod:`palaestra.ladder.rated`). The server runs this in a worker process (:mod:`.work`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from typing import Any

from palaestra.envs.board.rules import import_pyspiel
from palaestra.errors import DependencyNotInstalled, Error
from palaestra.ladder.match import MATCH_FORMAT
from palaestra.ladder.rated import game_digest, unrated_reason
from palaestra.ladder.records import GameRecord, load_record
from palaestra.ladder.replay import GameRejected, replay
from palaestra.scoreboard.protocol.ladder import MAX_MATCH_GAMES, MatchUpload, ladder_name
from palaestra.scoreboard.server.problems import Problem

__all__ = ["CheckedGame", "CheckedMatch", "check_in_worker", "check_match", "checked_or_problem", "match_players"]

logger = logging.getLogger("palaestra.scoreboard")


@dataclasses.dataclass
class CheckedGame:
    number: int
    file_name: str
    record: GameRecord
    text: str
    #: :func:`palaestra.ladder.rated.game_digest`
    digest: str = ""
    #: why the game does not count for the ratings; None: it counts
    unrated: str | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # A checked match comes back from the checking process pickled: 1,000 games of 600 moves are
        # 600,000 small strings, unpickled in one call that holds the interpreter for 50 ms while
        # every request waits. The moves travel as one string per game instead, split on arrival.
        moves = self.record.moves
        fields = (self.number, self.file_name, self.record, self.text, self.digest, self.unrated)
        if any("\n" in move for move in moves):  # no move is written so; kept whole if one were
            return CheckedGame, fields
        fields = (self.number, self.file_name, dataclasses.replace(self.record, moves=[]), *fields[3:])
        return _unpack_game, (fields, "\n".join(moves) if moves else None)


def _unpack_game(fields: tuple[Any, ...], moves: str | None) -> CheckedGame:
    game = CheckedGame(*fields)
    game.record.moves = [] if moves is None else moves.split("\n")
    return game


@dataclasses.dataclass
class CheckedMatch:
    digest: str
    ladder: str
    game: str
    board_size: int
    komi: float | None
    players: list[str]
    games: list[CheckedGame]


#: The largest board of each game (OpenSpiel's Go stops at 19x19).
_LARGEST = {"Go": 19, "Hex": 25}


def _rules(document: dict[str, Any]) -> tuple[str, int, float, bool]:
    if document.get("format") != MATCH_FORMAT:
        raise Problem(400, f"match is not a palaestra match document (format {MATCH_FORMAT!r}).", "match")
    game, size, swap = (document.get(k) for k in ("game", "board_size", "swap"))
    komi = document.get("komi", 0.0)
    if game not in _LARGEST or not isinstance(size, int) or isinstance(size, bool) or not 2 <= size <= _LARGEST[game]:
        raise Problem(
            400, f"match: game {game!r} on a {size!r} board is not a ladder (Go from 2x2 to 19x19, the "
            "largest board OpenSpiel's Go rules play; Hex from 2x2 to 25x25).", "match",
        )  # fmt: skip
    if not isinstance(komi, (int, float)) or isinstance(komi, bool) or komi != komi or abs(komi) > 1000:
        raise Problem(400, f"match: komi {komi!r} is not a number.", "match")
    return game, size, float(komi), bool(swap)


def _listed_files(document: dict[str, Any], upload: MatchUpload) -> list[str]:
    entries = document.get("games")
    if not isinstance(entries, list) or not entries:
        raise Problem(400, "match: games must list the match's game files.", "match")
    if len(entries) > MAX_MATCH_GAMES:
        raise Problem(413, f"match: {len(entries)} games; at most {MAX_MATCH_GAMES} in one upload.", "match")
    names = [entry.get("file") if isinstance(entry, dict) else None for entry in entries]
    for name in names:
        if not isinstance(name, str) or name not in upload.games:
            raise Problem(400, f"match.json lists the game file {name!r}, which the upload does not hold.", "games")
    unlisted = sorted(set(upload.games) - set(names))
    if unlisted:
        raise Problem(400, f"The upload holds game files that match.json does not list: {unlisted[:5]}.", "games")
    return names  # type: ignore[return-value]


def _read(name: str, text: str) -> GameRecord:
    try:
        return load_record(name, text.encode("utf-8"))
    except Error as exc:
        raise Problem(400, f"{name}: {exc}", "games") from None
    except Exception:  # malformed input must never be a 500: say which game could not be read
        logger.exception("reading the uploaded game %s", name)
        raise Problem(400, f"{name}: the game record could not be read.", "games") from None


def upload_digest(upload: MatchUpload) -> str:
    """sha256 of the upload's content (its JSON with sorted keys)."""
    canonical = json.dumps(upload.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _require_rules() -> None:
    try:
        import_pyspiel()
    except DependencyNotInstalled as exc:
        raise Problem(503, f"This server cannot check board games: {exc}") from None


def match_players(upload: MatchUpload) -> list[str]:
    """The two player names of the match document (a 400 unless there are two, different)."""
    listed = upload.match.get("players")
    players = [p.get("name") for p in listed if isinstance(p, dict)] if isinstance(listed, list) else []
    if len(players) != 2 or players[0] == players[1]:
        raise Problem(400, "match: players must name the match's two players.", "match")
    names = [p for p in players if isinstance(p, str)]
    if len(names) != 2:
        raise Problem(400, f"match: the players' names must be strings, not {players!r}.", "match")
    return names


def check_match(upload: MatchUpload) -> CheckedMatch:
    """The match, every game read and replayed, or a Problem naming the first game at fault."""
    _require_rules()
    document = upload.match
    game, size, komi, swap = _rules(document)
    players = match_players(upload)
    ladder = ladder_name(game, size, komi, swap)
    checked = []
    for number, name in enumerate(_listed_files(document, upload), start=1):
        record = _read(name, upload.games[name])
        if record.game != game or record.board_size != size or (game == "Go" and record.komi != komi) or (
            game == "Hex" and record.swap != swap
        ):
            raise Problem(400, f"{name}: its rules are not the match's ({game} {size}x{size}, komi {komi:g}).", "games")
        if {record.black, record.white} != set(players):
            raise Problem(400, f"{name}: played by {record.black} and {record.white}, not by {players}.", "games")
        try:
            replayed = replay(record)
        except GameRejected as exc:
            raise Problem(422, f"{name}: {exc}; nothing of this upload was stored.", "games") from None
        checked.append(CheckedGame(number, name, record, upload.games[name], game_digest(ladder, record),
                                   unrated_reason(record, replayed)))  # fmt: skip
    return CheckedMatch(upload_digest(upload), ladder, game, size, komi if game == "Go" else None, players, checked)


def check_in_worker(upload: MatchUpload) -> CheckedMatch | tuple[int, str, str]:
    """:func:`check_match` for a worker process: a Problem comes back as (status, detail, param), since
    an exception with constructor arguments of its own does not survive pickling."""
    try:
        return check_match(upload)
    except Problem as problem:
        return problem.status, problem.detail, problem.param


def checked_or_problem(result: CheckedMatch | tuple[int, str, str]) -> CheckedMatch:
    """What :func:`check_in_worker` returned: the checked match, or its Problem raised again."""
    if isinstance(result, tuple):
        raise Problem(*result)
    return result
