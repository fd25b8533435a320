"""Match uploads on a real server: checked by replay, all stored or none, rated; forged games refused."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from palaestra.ladder.match import MATCH_FILE, read_match
from palaestra.ladder.records import from_sgf, to_sgf
from palaestra.scoreboard.client import ScoreboardClient
from palaestra.scoreboard.protocol import ladder as lp
from tests.ladder.conftest import TOURNAMENT
from tests.scoreboard.server_helpers import ScoreboardServer

LADDER = "Go9x9-komi7.5"
#: The tournament (tests/ladder/conftest.py) plays 12 games with GNU Go: some 20 s.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoreboardServer]:
    """A server whose key is an operator's: the tournament's players are the ladders' anchors."""
    started = ScoreboardServer(tmp_path_factory.mktemp("ladder-server")).start()
    started.api_key = started.create_user("operator", operator=True)
    yield started
    started.stop()


def _body(folder: Path) -> dict[str, Any]:
    document = read_match(folder)
    games = {g["file"]: (folder / g["file"]).read_text() for g in document["games"]}
    return {"match": document, "games": games}


def _games_stored(server: ScoreboardServer) -> int:
    with server.client() as client:
        ladders = client.get("/v1/ladders").json()["data"]
    return sum(ladder["games"] for ladder in ladders)


def test_a_tournament_is_uploaded_checked_and_rated_in_order(server: ScoreboardServer, tournament: list[Path]) -> None:
    env = {"PALAESTRA_SERVER": server.url, "PALAESTRA_API_KEY": server.api_key}
    server.env.update(env)
    for count, folder in enumerate(tournament, start=1):
        out = server.palaestra("upload", str(folder)).stdout.splitlines()
        assert out[0] == f"4 games checked and added to the ladder {LADDER}"
        assert out[-1].startswith("match_")
        with server.client() as client:
            ratings = client.get(f"/v1/ladders/{LADDER}/ratings").json()
        lp.RatingsObject.model_validate(ratings)
        assert ratings["games"] == 4 * count
    assert [r["player"] for r in ratings["ratings"]] == list(TOURNAMENT)
    assert ratings["anchor"] == "gnugo:0" and all(r["games"] == 8 for r in ratings["ratings"])
    with server.client() as client:
        player = client.get(f"/v1/ladders/{LADDER}/players/mcts:50").json()
        ladders = client.get("/v1/ladders").json()["data"]
    assert player["head_to_head"]["gnugo:0"]["games"] == 4
    assert len(player["games"]) == 8
    assert ladders == [
        {**ladders[0], "id": LADDER, "game": "Go", "board_size": 9, "komi": 7.5, "games": 12, "players": 3}
    ]


def test_gnugo_loads_the_downloaded_sgf(server: ScoreboardServer, tournament: list[Path], gnugo: str, tmp_path: Path) -> None:
    with ScoreboardClient(server.url, server.api_key) as client:
        match = client.upload_match(tournament[0])
    record_url = match.games[0].record_url
    response = httpx.get(record_url, timeout=30)
    assert response.headers["content-type"].startswith("application/x-go-sgf")
    path = tmp_path / "downloaded.sgf"
    path.write_bytes(response.content)
    done = subprocess.run(
        [gnugo, "--mode", "gtp", "--infile", str(path)], input="quit\n", capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "WARNING" not in done.stderr
    assert from_sgf(response.content).moves == match.games[0].moves


def _forge(folder: Path, tmp_path: Path, change: Any) -> Path:
    forged = tmp_path / "forged"
    forged.mkdir()
    for item in folder.iterdir():
        (forged / item.name).write_bytes(item.read_bytes())
    change(forged)
    return forged


def _post(server: ScoreboardServer, body: Any) -> httpx.Response:
    with server.client() as client:
        return client.post("/v1/ladder_matches", content=json.dumps(body) if not isinstance(body, bytes) else body)


def _edit_game(number: int, edit: Any) -> Any:
    def change(folder: Path) -> None:
        path = folder / f"game-{number:04d}.sgf"
        record = from_sgf(path.read_bytes())
        edit(record)
        path.write_text(to_sgf(record))

    return change


def test_an_illegal_move_is_refused_naming_game_and_move_and_nothing_is_stored(
    server: ScoreboardServer, tournament: list[Path], tmp_path: Path
) -> None:
    before = _games_stored(server)

    def replay_move_one(record: Any) -> None:
        record.moves[6] = record.moves[0]  # black plays on its own first stone (move 7)

    forged = _forge(tournament[2], tmp_path, _edit_game(3, replay_move_one))
    response = _post(server, _body(forged))
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail.startswith("game-0003.sgf: move 7 (") and "is illegal" in detail and "nothing of this upload" in detail
    assert _games_stored(server) == before  # games 1 and 2, which were legal, were not stored either


def test_a_wrong_result_is_refused_and_nothing_is_stored(
    server: ScoreboardServer, tournament: list[Path], tmp_path: Path
) -> None:
    before = _games_stored(server)

    def swap_winner(record: Any) -> None:
        record.winner = record.loser()
        record.score = -(record.score or 0)

    forged = _forge(tournament[1], tmp_path, _edit_game(2, swap_winner))
    response = _post(server, _body(forged))
    assert response.status_code == 422
    assert response.json()["detail"].startswith("game-0002.sgf: the rules make it a win for")
    assert _games_stored(server) == before


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("(;GM[1]SZ[9]KM[7.5]RE[B+R]", "game-0001.sgf: Malformed SGF"),
        ("(;GM[1]SZ[9]KM[7.5]RE[B+R](;B[aa])(;B[bb]))", "variation"),
        ("(;GM[1]SZ[9]KM[7.5]RE[B+R];B[zz])", "not a point"),
        ("(;GM[1]SZ[13]KM[7.5]PB[x]PW[y]RE[B+R])", "its rules are not the match's"),
        ("(;GM[1]C[" + "x" * (1 << 20) + "])", "game-0001.sgf: The SGF is 1048587 bytes; at most 1048576"),
    ],
)
def test_malformed_sgf_is_a_400_naming_the_game(
    server: ScoreboardServer, tournament: list[Path], text: str, problem: str
) -> None:
    body = _body(tournament[0])
    body["games"]["game-0001.sgf"] = text
    response = _post(server, body)
    assert response.status_code == 400, response.text
    assert problem in response.json()["detail"]


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda b: b["games"].pop("game-0004.sgf"), "does not hold"),
        (lambda b: b["games"].update({"extra.sgf": "(;)"}), "does not list"),
        (lambda b: b["match"].update(format="other"), "not a palaestra match"),
        (lambda b: b.update(extra=1), "invalid at 'extra'"),
    ],
)
def test_an_inconsistent_upload_is_a_400(server: ScoreboardServer, tournament: list[Path], edit: Any, problem: str) -> None:
    body = _body(tournament[0])
    edit(body)
    response = _post(server, body)
    assert response.status_code == 400 and problem in response.json()["detail"], response.text


def test_uploading_needs_a_key(server: ScoreboardServer, tournament: list[Path]) -> None:
    response = httpx.post(f"{server.url}/v1/ladder_matches", json=_body(tournament[0]), timeout=30)
    assert response.status_code == 401


def test_the_match_file_is_what_the_folder_says(tournament: list[Path]) -> None:
    assert (tournament[0] / MATCH_FILE).is_file()


def test_the_same_folder_uploaded_again_is_the_same_match_and_counts_once(
    server: ScoreboardServer, tournament: list[Path]
) -> None:
    first = _post(server, _body(tournament[0]))
    before = _games_stored(server)
    again = _post(server, _body(tournament[0]))
    assert first.status_code in (200, 201) and again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert _games_stored(server) == before

