"""`palaestra server export` and `import`: a board moved from SQLite to PostgreSQL (and back from
PostgreSQL + S3) answers every `/v1` GET and page byte for byte as the original did; a damaged,
partial or newer export is refused with nothing written; a second export writes only what is new."""

from __future__ import annotations

import subprocess
import sys

import httpx

from tests.scoreboard.server.archive.archive_helpers import board_answers, differences, fill_board
from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload_evaluation


def palaestra(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "palaestra", *args], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def board_env(server_env: dict[str, str], data_dir, database_url=None, storage=None) -> dict[str, str]:
    env = {k: v for k, v in server_env.items() if k not in ("PALAESTRA_DATABASE_URL", "PALAESTRA_STORAGE")}
    env["PALAESTRA_DATA_DIR"] = str(data_dir)
    if database_url:
        env["PALAESTRA_DATABASE_URL"] = database_url
    if storage:
        env["PALAESTRA_STORAGE"] = storage
    return env


def test_a_sqlite_board_imported_into_postgresql_answers_every_get_and_page_byte_for_byte(
    fresh_scoreboard_server, postgres_url, tmp_path
):
    old = fresh_scoreboard_server
    board = fill_board(old, tmp_path / "recordings")
    dest = tmp_path / "export"
    exported = old.palaestra("server", "export", str(dest), "--include-keys")
    assert f"into {dest}" in exported.stdout

    env = board_env(old.env, tmp_path / "new-data", postgres_url)
    imported = palaestra(env, "server", "import", str(dest))
    assert imported.returncode == 0, imported.stderr
    assert "Imported" in imported.stdout and "evaluations" in imported.stdout

    new = ScoreboardServer(tmp_path / "new-data", database_url=postgres_url)
    new.api_key = old.api_key  # the keys came along (--include-keys): no new user
    new.start()
    try:
        before, after = board_answers(old, old.api_key), board_answers(new, old.api_key)
        assert len([p for p in before if not p.startswith("/v1/")]) > 20  # the crawl reached the pages
        assert any(p.startswith("/evaluations/") and "/videos/" in p for p in before)  # and the videos
        assert before.keys() == after.keys()
        assert differences(before, after) == []
        # the second user's key works on the new board, and the chain checks out there
        with httpx.Client(base_url=new.url, headers=new.headers(board.second_key), timeout=60) as c:
            assert c.get("/v1/files").status_code == 200
        verified = new.palaestra("server", "verify", new.url)
        # 6 evaluations (3 raw, Go, the run's 2) and the committed run
        assert verified.returncode == 0 and "Verified 7 log entries" in verified.stdout, verified.stdout
        # new rows get ids after the imported ones (PostgreSQL's sequences were moved on)
        with new.client() as c:
            upload_evaluation(c, batch=make_batch(5))
    finally:
        new.stop()
