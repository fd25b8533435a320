"""``palaestra server verify`` against a table of tamperings: each edits one stored thing (a row of the
database behind the server's back, a blob, a line of an export) of a board that a real server
filled, and verify must fail naming what was changed. Before version 2 of the log, 10 of 12 such
edits passed: curves, provenance, conditions, ladder games and ratings, user and algorithm names
were not hashed; before version 3, a self-reported evaluation could be marked verified (the board's
own evaluation of an agent) unnoticed. A board whose log holds version-1 entries still verifies (the hash chain is
extended, not rewritten)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from palaestra.ladder.match import play_match, read_match, rules_of_env
from palaestra.ladder.players import parse_player
from palaestra.scoreboard.server.archive.verify import open_source, verify
from palaestra.scoreboard.server.core.config import resolve_config
from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload_evaluation, video_archive

PROVENANCE = {
    "format": 1,
    "git": {"commit": "a" * 40, "dirty": False},
    "command": {"argv": ["train.py", "--lr", "0.01"]},
    "env": {"id": "CartPole-v1", "max_episode_steps": 500},
    "seeds": [{"reset": 0, "seed": 7}],
}


@dataclass(frozen=True)
class Board:
    data_dir: Path
    export: Path
    evaluation: str
    match: str


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Board:
    """A board filled by a real server: an evaluation with provenance, an algorithm and a video, and a
    ladder match of two games (so its ladder has ratings); then exported, and the server stopped."""
    root = tmp_path_factory.mktemp("tamper")
    folder = root / "match"
    play_match(rules_of_env("Go9x9-v0", komi=7.5), parse_player("random"), parse_player("mcts:8"), 2, folder)
    document = read_match(folder)
    games = {g["file"]: (folder / g["file"]).read_text() for g in document["games"]}
    server = ScoreboardServer(root / "board").start()
    try:
        key = server.create_user("owner", operator=True)  # its match names the anchor 'random'
        with server.client() as c:
            c.headers["Authorization"] = f"Bearer {key}"
            evaluation = upload_evaluation(
                c, batch=make_batch(120, reward=20.0), videos=video_archive(1), algorithm={"id": "tamper-alg"},
                provenance=PROVENANCE,
            )["id"]  # fmt: skip
            stored = c.post("/v1/ladder_matches", json={"match": document, "games": games})
            assert stored.status_code in (200, 201), stored.text
            match = stored.json()["id"]
        exported = subprocess.run(
            [sys.executable, "-m", "palaestra", "server", "export", str(root / "export")],
            env=server.env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert exported.returncode == 0, exported.stderr
    finally:
        server.stop()
    return Board(root / "board", root / "export", evaluation, match)


def _verified(data_dir: Path | None = None, export: Path | None = None) -> str | None:
    """verify's failure on a board's data folder, or on an export folder (None: it verified)."""
    config = resolve_config(data_dir=data_dir or export, environ={})
    source, close = open_source(str(export) if export else None, config)
    try:
        return verify(source).failure
    finally:
        close()


def _sql(*statements: str) -> Callable[[Path], None]:
    def edit(data_dir: Path) -> None:
        with sqlite3.connect(data_dir / "scoreboard.sqlite3") as db:
            for statement in statements:
                assert db.execute(statement).rowcount != 0, statement
    return edit


def _rewrite(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-1] + b" ")


def _rewrite_blob(key_query: str) -> Callable[[Path], None]:
    """Rewrite the last byte of the stored blob whose key ``key_query`` selects."""
    def edit(data_dir: Path) -> None:
        with sqlite3.connect(data_dir / "scoreboard.sqlite3") as db:
            key = db.execute(key_query).fetchone()[0]
        _rewrite(data_dir / "blobs" / key)
    return edit


def _rewrite_first_exported_blob(export: Path) -> None:
    _rewrite(sorted(p for p in (export / "blobs").rglob("*") if p.is_file())[0])


#: (what is changed, the edit of the board's data folder, what verify's message must name)
BOARD_TAMPERINGS: list[tuple[str, Callable[[Path], None], str]] = [
    ("an evaluation's mean", _sql("UPDATE evaluations SET mean = mean + 100"), "its mean"),
    ("an evaluation's curves", _sql("UPDATE evaluations SET curves = '{}'"), "its curves"),
    ("an evaluation's provenance",
     _sql("""UPDATE evaluations SET provenance = json_set(provenance, '$.git.commit', 'bbbbbbbb')"""), "its provenance"),
    ("an evaluation's conditions",
     _sql("""UPDATE evaluations SET conditions = json_set(conditions, '$.max_episode_steps', 10000)"""), "its conditions"),
    ("the owner's name", _sql("UPDATE users SET name = 'mallory' WHERE name = 'owner'"), "its user_name"),
    ("the algorithm's name", _sql("UPDATE algorithms SET name = 'forged-alg'"), "its algorithm_name"),
    ("a self-reported evaluation marked verified", _sql("UPDATE evaluations SET verified = 1"), "its verified"),
    ("a verification's seeds", _sql("""UPDATE evaluations SET verification = '{"seeds": [1, 2, 3]}'"""),
     "its verification"),
    ("the episode batch", _rewrite_blob("SELECT episode_batch_key FROM evaluations"), "was rewritten"),
    ("a video", _rewrite_blob("SELECT json_extract(videos, '$[0].key') FROM evaluations"), "was rewritten"),
    ("a ladder game's winner",
     _sql("UPDATE ladder_games SET winner = CASE winner WHEN 'black' THEN 'white' ELSE 'black' END WHERE number = 1"),
     "its games.game_"),
    ("a ladder game's players", _sql("UPDATE ladder_games SET black = 'gnugo:10' WHERE number = 2"), "its games.game_"),
    ("a ladder game's record", _sql("UPDATE ladder_games SET record = record || ' ' WHERE number = 1"), "its games.game_"),
    ("an uploaded match marked as played by the server", _sql("UPDATE ladder_matches SET verified = 1"), "its verified"),
    ("a ladder game deleted", _sql("DELETE FROM ladder_games WHERE number = 2"), "its games.game_"),
    ("a rating", _sql("UPDATE ladder_ratings SET rating = rating + 500 WHERE player = 'random'"), "its ratings.random"),
    ("a match's owner", _sql("INSERT INTO users (name, created) VALUES ('eve', '2026-01-01 00:00:00')",
                             "UPDATE ladder_matches SET user_seq = (SELECT seq FROM users WHERE name = 'eve')"),
     "its user_name"),
    ("an evaluation deleted", _sql("DELETE FROM evaluations"), "the evaluation is not on the board"),
    ("a log entry's record hash", _sql("UPDATE score_log SET record_sha256 = '" + "0" * 64 + "' WHERE seq = 2"),
     "entry 2 (ladder_match"),
    ("a log entry deleted", _sql("DELETE FROM score_log WHERE seq = (SELECT max(seq) FROM score_log)"),
     "is on the board but not in the log"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "named"), [t[1:] for t in BOARD_TAMPERINGS], ids=[t[0] for t in BOARD_TAMPERINGS])
def test_verify_names_what_was_changed_on_the_board(
    board: Board, tmp_path: Path, edit: Callable[[Path], None], named: str
) -> None:
    data_dir = tmp_path / "board"
    shutil.copytree(board.data_dir, data_dir)
    assert _verified(data_dir) is None, "the board verifies before it is touched"
    edit(data_dir)
    failure = _verified(data_dir)
    assert failure is not None and named in failure, failure


def _edit_line(
    relative: str, change: Callable[[dict[str, Any]], None], where: Callable[[dict[str, Any]], bool] = bool
) -> Callable[[Path], None]:
    """Change the first row of an exported records file that ``where`` picks."""
    def edit(export: Path) -> None:
        path = export / relative
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        change(next(r for r in rows if where(r)))
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return edit


def _set(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda row: row.update(values)


#: (what is changed, the edit of the export folder, what verify's message must name)
EXPORT_TAMPERINGS: list[tuple[str, Callable[[Path], None], str]] = [
    ("an exported evaluation's provenance", _edit_line("records/evaluations.jsonl", _set(provenance={"format": 1})),
     "its provenance"),
    ("an exported evaluation's curves", _edit_line("records/evaluations.jsonl", _set(curves=None)), "its curves"),
    ("an exported evaluation marked verified", _edit_line("records/evaluations.jsonl", _set(verified=True)),
     "its verified"),
    ("an exported user's name",
     _edit_line("records/users.jsonl", _set(name="mallory"), lambda r: r["name"] == "owner"), "its user_name"),
    ("an exported rating", _edit_line("records/ladder_ratings.jsonl", lambda r: r.update(rating=r["rating"] + 1)),
     "its ratings."),
    ("an exported game's result", _edit_line("records/ladder_games.jsonl", _set(result="W+R", winner="white")),
     "its games.game_"),
    ("an exported blob", _rewrite_first_exported_blob, "was rewritten"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "named"), [t[1:] for t in EXPORT_TAMPERINGS], ids=[t[0] for t in EXPORT_TAMPERINGS])
def test_verify_names_what_was_changed_in_an_export(
    board: Board, tmp_path: Path, edit: Callable[[Path], None], named: str
) -> None:
    export = tmp_path / "export"
    shutil.copytree(board.export, export)
    assert _verified(export=export) is None
    edit(export)
    failure = _verified(export=export)
    assert failure is not None and named in failure, failure

