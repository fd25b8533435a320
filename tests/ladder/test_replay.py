"""Recorded games replayed through the rules: legal games pass, forged ones are refused naming the move."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import numpy as np
import pytest

from palaestra.ladder.match import match_games
from palaestra.ladder.records import GameRecord, RecordError, from_hex_json, from_sgf, to_hex_json, to_sgf
from palaestra.ladder.replay import GameRejected, replay


def _first_game(folder: Path) -> GameRecord:
    return match_games(folder)[0][1]


def test_every_game_of_a_match_replays_to_its_recorded_result(go_match: Path) -> None:
    for name, record in match_games(go_match):
        replayed = replay(record)
        assert replayed.winner == record.winner, name
        assert replayed.score == record.score, name
        assert len(replayed.actions) == len(record.moves)


def test_sgf_round_trip_keeps_the_game(go_match: Path) -> None:
    record = _first_game(go_match)
    assert from_sgf(to_sgf(record)) == record


def test_gnugo_loads_the_sgf_to_the_same_final_position(go_match: Path, gnugo: str) -> None:
    record = _first_game(go_match)
    final = replay(record).planes
    path = go_match / "game-0001.sgf"
    commands = f"loadsgf {path}\nlist_stones black\nlist_stones white\nquit\n"
    answer = subprocess.run(
        [gnugo, "--mode", "gtp", "--infile", str(path)], input=commands, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    assert "WARNING" not in answer.stderr
    replies = [block.strip("= \n") for block in answer.stdout.split("\n\n") if block.strip()]
    to_move, black, white = replies[0], set(replies[1].split()), set(replies[2].split())
    assert to_move == ("black" if len(record.moves) % 2 == 0 else "white")
    n = record.board_size
    columns = "ABCDEFGHJ"
    for plane, stones in ((0, black), (1, white)):
        ours = {f"{columns[c]}{n - r}" for r, c in zip(*np.nonzero(final[plane]), strict=True)}
        assert ours == stones


def test_an_illegal_move_is_refused_naming_it(go_match: Path) -> None:
    record = _first_game(go_match)
    forged = dataclasses.replace(record, moves=[*record.moves[:4], record.moves[1], *record.moves[5:]])
    with pytest.raises(GameRejected, match=rf"move 5 \({record.moves[1]}, black\) is illegal") as caught:
        replay(forged)
    assert caught.value.move == 5


def test_a_wrong_result_is_refused(go_match: Path) -> None:
    record = _first_game(go_match)
    loser = record.loser()
    assert loser is not None
    with pytest.raises(GameRejected, match=f"the rules make it a win for {record.winner}"):
        replay(dataclasses.replace(record, winner=loser, score=-(record.score or 0)))
    with pytest.raises(GameRejected, match="the board counts"):
        replay(dataclasses.replace(record, score=(record.score or 0) + 1))


def test_a_resignation_needs_an_unfinished_game_and_the_loser_to_move(go_match: Path) -> None:
    record = _first_game(go_match)
    with pytest.raises(GameRejected, match="ended on the board"):
        replay(dataclasses.replace(record, reason="resignation"))
    early = dataclasses.replace(record, moves=record.moves[:10], reason="resignation", score=None)
    mover_loses = dataclasses.replace(early, winner="white")  # black is to move after 10 moves
    assert replay(mover_loses).reason == "resignation"
    with pytest.raises(GameRejected, match="only on the loser's turn"):
        replay(dataclasses.replace(early, winner="black"))


def test_an_unfinished_game_claiming_a_count_is_refused(go_match: Path) -> None:
    record = _first_game(go_match)
    with pytest.raises(GameRejected, match="not over after its 10 moves"):
        replay(dataclasses.replace(record, moves=record.moves[:10]))


def test_hex_records_round_trip_and_replay() -> None:
    record = GameRecord("Hex", 2, "a", "b", ["a1", "b1", "a2"], winner="black", reason="connection")
    text = to_hex_json(record)
    assert from_hex_json(text) == record
    assert replay(record).winner == "black"
    with pytest.raises(GameRejected, match="the rules make it a win for black"):
        replay(dataclasses.replace(record, winner="white"))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("(;GM[1]SZ[9]RE[B+R];B[zz])", "not a point"),
        ("(;GM[1]SZ[9]RE[B+R];W[ee])", "played by W"),
        ("(;GM[1]SZ[9]RE[what])", "not a result"),
        ("(;GM[1]SZ[9]AB[ee]RE[B+R])", "sets up stones"),
        ("(;GM[2]SZ[9]RE[B+R])", "not Go"),
        ("(;GM[1]SZ[99]RE[B+R])", "2x2 to 19x19"),
        ("(;GM[1]SZ[9])", "no RE"),
    ],
)
def test_sgf_that_is_not_a_ladder_game_is_an_error(text: str, problem: str) -> None:
    with pytest.raises(RecordError, match=problem):
        from_sgf(text)


@pytest.mark.parametrize(
    "text",
    ["[]", '{"format": "palaestra.hex-game", "moves": "a1", "result": {}}',
     '{"format": "palaestra.hex-game", "board_size": 9, "moves": [], "result": {"winner": null}}', "not json"],
)  # fmt: skip
def test_hex_json_that_is_not_a_record_is_an_error(text: str) -> None:
    with pytest.raises(RecordError):
        from_hex_json(text)
