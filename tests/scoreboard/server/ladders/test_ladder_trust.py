"""Ladder ratings that cannot be forged, on a real server: anchors' names reserved to operators, names
owned by their first uploader, a game rated once whoever uploads it again, implausible games stored
unrated with their reason; uploads checked off the event loop and rate-limited; Go above 19x19 a 400."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from palaestra.ladder.match import read_match
from palaestra.ladder.records import GameRecord, to_sgf
from palaestra.scoreboard.protocol import ladder as lp
from tests.scoreboard.server_helpers import ScoreboardServer

LADDER = "Go9x9-komi7.5"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoreboardServer]:
    started = ScoreboardServer(tmp_path_factory.mktemp("ladder-trust")).start()
    yield started
    started.stop()


def _document(black: str, white: str, files: list[str], size: int = 9, seed: int = 0) -> dict[str, Any]:
    return {
        "format": "palaestra.match", "version": 1, "env_id": f"Go{size}x{size}-v0", "game": "Go",
        "board_size": size, "komi": 7.5, "swap": False, "seed": seed,
        "players": [{"name": black, "spec": "random"}, {"name": white, "spec": "random"}],
        "games": [{"file": name} for name in files],
    }  # fmt: skip


def _played(folder: Path, black: str, white: str, games: int = 2, env_id: str = "Go9x9-v0") -> dict[str, Any]:
    """A match of ``games`` games between two random players under these names, as an upload body."""
    from palaestra.ladder.match import play_match, rules_of_env
    from palaestra.ladder.players import parse_player

    # played under stand-in names (a NAME of `palaestra match` has no ':'), then named as asked
    play_match(rules_of_env(env_id, komi=7.5), parse_player("standin-black=random"),
               parse_player("standin-white=random"), games, folder, seed=len(black) + len(white))  # fmt: skip

    def named(text: str) -> str:
        return text.replace("standin-black", black).replace("standin-white", white)

    document = json.loads(named(json.dumps(read_match(folder))))
    return {"match": document, "games": {g["file"]: named((folder / g["file"]).read_text()) for g in document["games"]}}


def _resigned(black: str, white: str, moves: list[str], count: int = 1) -> dict[str, Any]:
    """``count`` copies (under other file names) of a game that white resigned after ``moves``."""
    text = to_sgf(GameRecord("Go", 9, black, white, moves, "black", "resignation", komi=7.5))
    files = {f"game-{n:04d}.sgf": text for n in range(1, count + 1)}
    return {"match": _document(black, white, list(files)), "games": files}


def _post(server: ScoreboardServer, body: dict[str, Any], key: str | None = None) -> httpx.Response:
    with server.client() as client:
        return client.post("/v1/ladder_matches", content=json.dumps(body), headers=server.headers(key))


def _ratings(server: ScoreboardServer, ladder: str = LADDER) -> dict[str, Any]:
    with server.client() as client:
        response = client.get(f"/v1/ladders/{ladder}/ratings")
    return response.json() if response.status_code == 200 else {"games": 0, "ratings": []}


def _rating(server: ScoreboardServer, player: str) -> dict[str, Any] | None:
    return next((r for r in _ratings(server)["ratings"] if r["player"] == player), None)


def test_an_upload_naming_an_anchor_is_refused_unless_made_with_an_operators_key(
    server: ScoreboardServer, tmp_path: Path
) -> None:
    body = _played(tmp_path / "m", "gnugo:10", "anchor-victim")
    before = _ratings(server)["games"]
    refused = _post(server, body)
    assert refused.status_code == 403, refused.text
    detail = refused.json()["detail"]
    assert "'gnugo:10' is an anchor" in detail and "--operator" in detail
    assert _ratings(server)["games"] == before and _rating(server, "anchor-victim") is None
    for spelling in ("GNUGO:10", "random", "mcts"):
        forged = _played(tmp_path / spelling.replace(":", ""), spelling, "anchor-victim-2", games=1)
        assert _post(server, forged).status_code == 403

    operator = server.palaestra("users", "create", "the-operator", "--operator").stdout.strip().splitlines()[-1]
    accepted = _post(server, body, operator)
    assert accepted.status_code == 201, accepted.text
    assert _rating(server, "gnugo:10") is not None


def test_a_player_name_belongs_to_the_account_that_first_uploaded_it(server: ScoreboardServer, tmp_path: Path) -> None:
    alice, bob = server.create_user("alice"), server.create_user("bob")
    assert _post(server, _played(tmp_path / "a", "alice-bot", "alice-bot-v2"), alice).status_code == 201
    stolen = _post(server, _played(tmp_path / "b", "alice-bot", "bob-bot"), bob)
    assert stolen.status_code == 403, stolen.text
    assert "'alice-bot' belongs to the user 'alice'" in stolen.json()["detail"]
    assert _rating(server, "bob-bot") is None  # nothing of the refused upload was kept, its names neither
    assert _post(server, _played(tmp_path / "c", "bob-bot", "bob-bot-v2"), bob).status_code == 201
    assert _post(server, _played(tmp_path / "d", "alice-bot-v2", "alice-bot-v3"), alice).status_code == 201


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("", "must not be empty"),
        ("nul\x00name", "control characters"),
        ("line\nbreak", "control characters"),
        ("x" * 101, "at most 100 characters"),
        (" padded", "begin or end with a space"),
    ],
)
def test_a_malformed_player_name_is_a_400_naming_the_name_and_the_rule(
    server: ScoreboardServer, name: str, rule: str
) -> None:
    response = _post(server, _resigned(name, "other-name", ["E5"]))
    assert response.status_code == 400, response.text
    assert repr(name) in response.json()["detail"] and rule in response.json()["detail"]


def test_the_same_games_uploaded_again_in_other_bytes_or_by_another_user_are_not_rated_again(
    server: ScoreboardServer, tmp_path: Path
) -> None:
    carol = server.create_user("carol")
    body = _played(tmp_path / "m", "carol-a", "carol-b", games=3)
    first = _post(server, body, carol)
    assert first.status_code == 201 and all(g["rated"] for g in first.json()["games"])
    rated = _ratings(server)
    body["match"]["seed"] = 1  # one byte of match.json changed: another upload, the same games
    again = _post(server, body, carol)
    assert again.status_code == 201 and again.json()["id"] != first.json()["id"]
    for game, original in zip(again.json()["games"], first.json()["games"]):
        assert not game["rated"] and original["id"] in game["unrated_reason"]
    operator = server.create_user("operator-2", operator=True)
    by_other = _post(server, body, operator)  # another account (one that may name carol's players)
    assert by_other.status_code == 201 and not any(g["rated"] for g in by_other.json()["games"])
    after = _ratings(server)
    assert after["games"] == rated["games"] and after["unrated_games"] == rated["unrated_games"] + 6
    assert _rating(server, "carol-a") == next(r for r in rated["ratings"] if r["player"] == "carol-a")


def test_a_resignation_after_one_move_is_stored_and_shown_but_not_rated(server: ScoreboardServer, tmp_path: Path) -> None:
    dave = server.create_user("dave")
    assert _post(server, _played(tmp_path / "m", "dave-a", "dave-b"), dave).status_code == 201
    before = _rating(server, "dave-a")
    forged = _resigned("dave-a", "dave-b", ["E5"], count=40)  # 40 games: black plays, white resigns
    response = _post(server, forged, dave)
    assert response.status_code == 201, response.text
    games = response.json()["games"]
    assert len(games) == 40 and not any(g["rated"] for g in games)
    assert games[0]["unrated_reason"].startswith("1 stones placed, fewer than the 21")
    assert _rating(server, "dave-a") == before  # 40 wins, and the rating has not moved
    with server.client() as client:
        page = client.get(f"/ladders/games/{games[0]['id']}").text
        listed = client.get(f"/v1/ladder_games/{games[1]['id']}").json()
        ladder_page = client.get(f"/ladders/{LADDER}").text
    assert "Not rated: 1 stones placed" in page
    assert "more checked and\nstored but not rated" in ladder_page and "not rated</span>" in ladder_page
    lp.GameObject.model_validate(listed)
    assert listed["rated"] is False and "fewer than the 21" in listed["unrated_reason"]


def test_a_short_resignation_that_the_count_confirms_is_rated(server: ScoreboardServer) -> None:
    # black walls off column E, white column G: black's area is 45 points, white's 27; white resigns
    moves = [m for row in range(1, 10) for m in (f"E{row}", f"G{row}")] + ["A1"]
    response = _post(server, _resigned("erin-a", "erin-b", moves), server.create_user("erin"))
    assert response.status_code == 201, response.text
    assert response.json()["games"][0]["rated"] is True
    assert _rating(server, "erin-a") is not None


def test_a_go_board_above_19x19_is_a_400_not_a_500(server: ScoreboardServer) -> None:
    text = "(;GM[1]FF[4]SZ[21]KM[7.5]RU[Tromp-Taylor]PB[big-a]PW[big-b]RE[W+7.5];B[];W[])"
    body = {"match": _document("big-a", "big-b", ["game-0001.sgf"], size=21), "games": {"game-0001.sgf": text}}
    response = _post(server, body)
    assert response.status_code == 400, response.text
    assert "19x19" in response.json()["detail"]


def test_sgf_from_the_wild_is_accepted(server: ScoreboardServer, tmp_path: Path) -> None:
    body = _played(tmp_path / "m", "wild-a", "wild-b", games=1)
    name = next(iter(body["games"]))
    text = body["games"][name]
    result = text.split("RE[")[1].split("]")[0]
    # a byte-order mark, a comment with a soft line break after CR LF, a result without its score
    text = "\ufeff" + text.replace("DT[", "C[one \\\r\ntwo]DT[").replace(f"RE[{result}]", f"RE[{result.split('+')[0]}+]")
    body["games"][name] = text
    response = _post(server, body, server.create_user("wild"))
    assert response.status_code == 201, response.text
    assert response.json()["games"][0]["result"] == result.split("+")[0] + "+"


@pytest.mark.slow
def test_match_uploads_are_rate_limited(scoreboard_factory: Any, tmp_path: Path) -> None:
    limited = scoreboard_factory(env={"PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR": "2"})
    body = _resigned("rate-a", "rate-b", ["E5"])
    for seed in range(2):
        body["match"]["seed"] = seed
        assert _post(limited, body).status_code == 201
    body["match"]["seed"] = 2
    refused = _post(limited, body)
    assert refused.status_code == 429, refused.text
    assert int(refused.headers["Retry-After"]) >= 1 and "Too many match uploads" in refused.json()["detail"]


@pytest.mark.slow
def test_a_large_upload_being_checked_does_not_hold_other_requests(server: ScoreboardServer, tmp_path: Path) -> None:
    # 250 copies of a 19x19 game (some 3 MB), the last one forged: the server replays them all, then
    # refuses the upload. A page asked for once the body is sent must be answered before that refusal.
    one = _played(tmp_path / "m", "big-x", "big-y", games=1, env_id="Go19x19-v0")
    text = next(iter(one["games"].values()))
    files = {f"game-{n:04d}.sgf": text for n in range(1, 251)}
    files["game-0250.sgf"] = text.replace("RE[B+", "RE[W+") if "RE[B+" in text else text.replace("RE[W+", "RE[B+")
    body = json.dumps({"match": {**one["match"], "games": [{"file": f} for f in files]}, "games": files}).encode()
    sent = threading.Event()
    order: list[str] = []

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 1 << 16):
            yield body[start : start + (1 << 16)]
        sent.set()

    def upload() -> None:
        response = httpx.post(f"{server.url}/v1/ladder_matches", content=chunks(), headers=server.headers(), timeout=120)
        order.append(f"upload {response.status_code}")

    thread = threading.Thread(target=upload)
    thread.start()
    assert sent.wait(60)
    page = httpx.get(f"{server.url}/", timeout=120)
    order.append(f"page {page.status_code}")
    thread.join(120)
    assert order == ["page 200", "upload 422"]


@pytest.mark.slow
def test_an_exported_board_keeps_its_names_owners_and_unrated_games(scoreboard_factory: Any, tmp_path: Path) -> None:
    old = scoreboard_factory()
    owner = old.create_user("owner")
    body = _played(tmp_path / "m", "kept-a", "kept-b", games=1)
    body["games"]["game-0002.sgf"] = _resigned("kept-a", "kept-b", ["E5"])["games"]["game-0001.sgf"]
    body["match"]["games"].append({"file": "game-0002.sgf"})
    games = _post(old, body, owner).json()["games"]
    old.palaestra("server", "export", str(tmp_path / "export"), "--include-keys")
    new = ScoreboardServer(tmp_path / "new-data")  # SQLite and blobs of its own
    new.palaestra("server", "import", str(tmp_path / "export"))
    new.api_key = old.api_key
    new.start()
    try:
        with new.client() as client:
            after = [client.get(f"/v1/ladder_games/{g['id']}").json() for g in games]
        assert [(g["rated"], g["unrated_reason"]) for g in after] == [(g["rated"], g["unrated_reason"]) for g in games]
        stolen = _post(new, _played(tmp_path / "n", "kept-a", "thief-bot", games=1), new.create_user("thief"))
        assert stolen.status_code == 403 and "belongs to the user 'owner'" in stolen.json()["detail"]
    finally:
        new.stop()


def test_a_ladder_whose_games_are_all_unrated_is_shown_without_ratings(server: ScoreboardServer) -> None:
    text = to_sgf(GameRecord("Go", 7, "seven-a", "seven-b", ["D4"], "black", "resignation", komi=7.5))
    body = {"match": _document("seven-a", "seven-b", ["game-0001.sgf"], size=7), "games": {"game-0001.sgf": text}}
    assert _post(server, body, server.create_user("seven")).status_code == 201
    ratings = _ratings(server, "Go7x7-komi7.5")
    assert (ratings["games"], ratings["unrated_games"], ratings["ratings"]) == (0, 1, [])
    with server.client() as client:
        page = client.get("/ladders/Go7x7-komi7.5")
    assert page.status_code == 200 and "0 rated games (1 more" in page.text
