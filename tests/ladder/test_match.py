"""`palaestra match`: games written as records, colours alternating, failing players forfeit, the match goes on."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from palaestra.cli import main
from palaestra.errors import Error
from palaestra.ladder.match import match_games, play_match, read_match, rules_of_env
from palaestra.ladder.players import parse_player
from palaestra.ladder.replay import replay
from tests.envs.conftest import FAKE_ENGINE

GO9 = rules_of_env("Go9x9-v0", komi=7.5)


def _fake(mode: str) -> str:
    return f"gtp:{shlex.join([sys.executable, str(FAKE_ENGINE), mode])}"


def test_colours_alternate_and_every_game_is_recorded(go_match: Path) -> None:
    document = read_match(go_match)
    assert [g["black"] for g in document["games"]] == ["gnugo:0", "random", "gnugo:0", "random"]
    assert document["komi"] == 7.5 and document["board_size"] == 9
    assert all(record.winner for _, record in match_games(go_match))
    assert sorted(p.name for p in go_match.iterdir()) == [*(f"game-000{i}.sgf" for i in range(1, 5)), "match.json"]


def test_a_crashing_engine_forfeits_each_game_and_the_match_carries_on(tmp_path: Path) -> None:
    crash = parse_player(f"crasher={_fake('always-die')}")
    summaries = play_match(GO9, crash, parse_player("random"), 2, tmp_path / "m", move_time=5)
    assert [s.reason for s in summaries] == ["forfeit", "forfeit"]
    records = [record for _, record in match_games(tmp_path / "m")]
    assert [r.loser() for r in records] == ["black", "white"]  # the crasher, black then white
    assert "crasher died" in records[0].note
    for record in records:
        assert replay(record).reason == "forfeit"  # the moves before the forfeit are legal


def test_a_hanging_engine_loses_on_time(tmp_path: Path) -> None:
    summaries = play_match(GO9, parse_player(f"hang={_fake('slow')}"), parse_player("random"), 1, tmp_path / "m", 1.0)
    assert summaries[0].reason == "time" and summaries[0].result == "W+T"


def test_python_policies_play_and_their_failures_forfeit(tmp_path: Path) -> None:
    good = parse_player("good=python:tests.ladder.policies:first_legal")
    summaries = play_match(GO9, good, parse_player("random"), 2, tmp_path / "ok", move_time=5)
    assert all(s.moves > 2 for s in summaries)
    for policy, reason, note in (("raises", "forfeit", "ZeroDivisionError"), ("occupied", "forfeit", "not a legal move"),
                                 ("sleeps", "time", "did not move within 0.5 s")):  # fmt: skip
        folder = tmp_path / policy
        play_match(GO9, parse_player(f"python:tests.ladder.policies:{policy}"), good, 1, folder, move_time=0.5)
        (_, record), = match_games(folder)
        assert (record.reason, record.winner) == (reason, "white"), policy
        assert note in record.note


def test_hex_match_with_mcts_writes_hex_records(tmp_path: Path) -> None:
    play_match(rules_of_env("Hex9x9-v0"), parse_player("mcts:20"), parse_player("random"), 2, tmp_path / "h")
    games = match_games(tmp_path / "h")
    assert [name for name, _ in games] == ["game-0001.hex.json", "game-0002.hex.json"]
    for _, record in games:
        assert replay(record).reason == "connection"
    assert json.loads((tmp_path / "h" / "game-0001.hex.json").read_text())["format"] == "palaestra.hex-game"


def test_the_command_shows_progress_and_prints_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cli"
    assert main(["match", "Hex9x9-v0", "mcts:10", "random", "--games", "2", "--out", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(folder)
    assert "game 1/2: mcts:10 (B) - random (W) " in err and "game 2/2: random (B) - mcts:10 (W)" in err


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["match", "CartPole-v1", "random", "random"], "not a board-game env"),
        (["match", "Go9x9-v0", "random", "random"], "Both players are named 'random'"),
        (["match", "Hex9x9-v0", "gnugo", "random"], "plays Go only"),
        (["match", "Go9x9-v0", "python:nowhere.at_all:f", "random"], "cannot import 'nowhere.at_all'"),
    ],
)
def test_bad_matches_are_refused_naming_the_problem(
    argv: list[str], problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--out", str(tmp_path / "x")]) == 1
    assert problem in capsys.readouterr().err


def test_a_used_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("x")
    with pytest.raises(Error, match="not empty"):
        play_match(GO9, parse_player("random"), parse_player("mcts:5"), 1, tmp_path)


def test_the_anchors_command_plays_every_pair_of_calibration_players(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "anchors"
    argv = ["anchors", "Hex9x9-v0", "--games", "1", "--players", "random", "mcts:5", "mcts:20", "--out", str(out)]
    assert main(argv) == 0
    folders = capsys.readouterr().out.split()
    assert folders == [str(out / "random-vs-mcts5"), str(out / "random-vs-mcts20"), str(out / "mcts5-vs-mcts20")]
    assert all(len(read_match(folder)["games"]) == 1 for folder in folders)


@pytest.mark.parametrize("env_id", ["Go13x13-v0", "Go19x19-v0"])
def test_the_larger_boards_play_and_replay(env_id: str, tmp_path: Path) -> None:
    play_match(rules_of_env(env_id, komi=7.5), parse_player("random"), parse_player("other=random"), 1, tmp_path / "m")
    ((_, record),) = match_games(tmp_path / "m")
    assert record.board_size == int(env_id[2:4])
    assert replay(record).winner == record.winner


def test_two_gtp_engines_play_each_other(tmp_path: Path, gnugo: str) -> None:
    summaries = play_match(GO9, parse_player("gnugo:0"), parse_player("gnugo:1"), 1, tmp_path / "m", move_time=30)
    ((_, record),) = match_games(tmp_path / "m")
    assert summaries[0].reason in ("score", "resignation") and replay(record).winner == record.winner
