"""`palaestra server export` and `import`: a board moved from SQLite to PostgreSQL (and back from
PostgreSQL + S3) answers every `/v1` GET and page byte for byte as the original did; a damaged,
partial or newer export is refused with nothing written; a second export writes only what is new."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading

import httpx
import pytest

from tests.scoreboard.server.archive.archive_helpers import board_answers, differences, fill_board
from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload_evaluation, video_archive


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


@pytest.mark.slow
def test_a_sqlite_board_imported_into_postgresql_and_s3_answers_every_get_and_page_byte_for_byte(
    fresh_scoreboard_server, postgres_url, s3_storage, tmp_path
):
    old = fresh_scoreboard_server
    board = fill_board(old, tmp_path / "recordings")
    dest = tmp_path / "export"
    exported = old.palaestra("server", "export", str(dest), "--include-keys")
    assert f"into {dest}" in exported.stdout

    storage, s3_env = s3_storage
    env = {**board_env(old.env, tmp_path / "new-data", postgres_url, storage), **s3_env}
    imported = palaestra(env, "server", "import", str(dest), "--include-keys")
    assert imported.returncode == 0, imported.stderr
    assert "Imported" in imported.stdout and "evaluations" in imported.stdout

    new = ScoreboardServer(tmp_path / "new-data", database_url=postgres_url, storage=storage, env=s3_env)
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


def small_board(server: ScoreboardServer, count: int = 2) -> list[str]:
    with server.client() as c:
        return [
            upload_evaluation(c, batch=make_batch(10 + i), videos=video_archive(1, seed=i))["id"]
            for i in range(count)
        ]


def test_a_damaged_partial_or_newer_export_is_refused_naming_the_file_with_nothing_written(
    fresh_scoreboard_server, tmp_path
):
    small_board(fresh_scoreboard_server)
    dest = tmp_path / "export"
    fresh_scoreboard_server.palaestra("server", "export", str(dest))
    target = tmp_path / "target"
    env = board_env(fresh_scoreboard_server.env, target)

    def refused(needle: str) -> None:
        result = palaestra(env, "server", "import", str(dest))
        assert result.returncode == 1 and needle in result.stderr, result.stderr
        assert (
            not (target / "scoreboard.sqlite3").exists() and not (target / "blobs").exists()
        )  # nothing written

    blob = next((dest / "blobs" / "sha256").rglob("*"))
    while blob.is_dir():
        blob = next(blob.iterdir())
    original = blob.read_bytes()
    blob.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    refused(f"{blob} is damaged")
    blob.write_bytes(original)

    records = dest / "records" / "evaluations.jsonl"
    kept = records.read_bytes()
    records.unlink()
    refused(f"{records} is missing: the export is partial")
    records.write_bytes(kept)

    manifest = json.loads((dest / "manifest.json").read_text())
    (dest / "manifest.json").write_text(json.dumps({**manifest, "version": 2}))
    refused("is an export of format version 2, and this palaestra reads format versions up to 1")
    # the same refusal from an export into that folder: it would not understand what is there
    again = fresh_scoreboard_server.palaestra("server", "export", str(dest), check=False)
    assert again.returncode == 1 and "format version 2" in again.stderr
    (dest / "manifest.json").write_text(json.dumps(manifest))

    assert palaestra(env, "server", "import", str(dest)).returncode == 0  # intact again: imported
    second = palaestra(env, "server", "import", str(dest))
    assert second.returncode == 1 and "is not empty" in second.stderr  # only into an empty board


def test_a_second_export_into_the_same_folder_writes_only_what_is_new(fresh_scoreboard_server, tmp_path):
    server = fresh_scoreboard_server
    small_board(server)
    dest = tmp_path / "export"
    first = server.palaestra("server", "export", str(dest)).stdout
    assert "blobs fetched from the store" in first
    unchanged = server.palaestra("server", "export", str(dest)).stdout
    assert "0 files written, 0 blobs fetched from the store" in unchanged

    # an export killed before its manifest is finished by the next one; a folder of anything else is refused
    (dest / "manifest.json").unlink()
    assert "0 blobs fetched" not in server.palaestra("server", "export", str(dest)).stdout
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    refused = server.palaestra("server", "export", str(tmp_path / "other"), check=False)
    assert refused.returncode == 1 and "is not empty and holds no export" in refused.stderr
    blobs = {p: p.stat().st_mtime_ns for p in (dest / "blobs").rglob("*") if p.is_file()}
    users = (dest / "records" / "users.jsonl").stat().st_mtime_ns

    with server.client() as c:  # one more evaluation: three more blob keys (its batch, a video, its metadata)
        upload_evaluation(c, batch=make_batch(7), videos=video_archive(1, seed=9))
    grown = server.palaestra("server", "export", str(dest)).stdout
    assert "3 blobs fetched from the store" in grown
    assert all(p.stat().st_mtime_ns == t for p, t in blobs.items())  # the old blobs were not rewritten
    assert (dest / "records" / "users.jsonl").stat().st_mtime_ns == users  # nor the unchanged records
    # the new batch is a new file; the recording and its metadata are the same bytes as before: stored once
    assert len([p for p in (dest / "blobs").rglob("*") if p.is_file()]) == len(blobs) + 1


@pytest.mark.slow
def test_a_postgresql_and_s3_board_exported_while_uploads_go_on_imports_whole_into_sqlite(
    scoreboard_factory, postgres_url, s3_storage, tmp_path
):
    storage, s3_env = s3_storage
    server = scoreboard_factory(database_url=postgres_url, storage=storage, env=s3_env)
    small_board(server, 3)
    done = threading.Event()

    def keep_uploading() -> None:
        with server.client() as c:
            while not done.is_set():
                upload_evaluation(c, batch=make_batch(5))

    uploader = threading.Thread(target=keep_uploading)
    uploader.start()
    try:
        dest = tmp_path / "export"
        server.palaestra("server", "export", str(dest))
    finally:
        done.set()
        uploader.join()
    # one snapshot: every evaluation exported has its files, its env aggregate and its log entry
    verified = server.palaestra("server", "verify", str(dest))
    assert "Verified" in verified.stdout, verified.stdout
    lines = (dest / "records" / "evaluations.jsonl").read_text().splitlines()
    envs = [json.loads(line) for line in (dest / "records" / "envs.jsonl").read_text().splitlines()]
    assert sum(e["evaluation_count"] for e in envs) == len(lines) >= 3

    env = board_env(server.env, tmp_path / "sqlite-board")
    imported = palaestra(env, "server", "import", str(dest))
    assert imported.returncode == 0, imported.stderr
    copy = ScoreboardServer(tmp_path / "sqlite-board")
    copy.api_key = "unused"
    copy.start()
    try:
        with httpx.Client(base_url=copy.url, timeout=60) as c:
            page = c.get("/v1/evaluations", params={"limit": 100}).json()
            assert len(page["data"]) == len(lines)
            with_video = next(e for e in page["data"] if e["videos"])
            video = c.get(f"/evaluations/{with_video['id']}/videos/{with_video['videos'][0]['name']}")
            assert (
                video.status_code == 200 and len(video.content) == with_video["videos"][0]["size"]
            )  # blobs too
        assert copy.palaestra("server", "verify").returncode == 0
    finally:
        copy.stop()


def test_an_export_carries_no_password_hash_and_no_api_key_unless_asked(fresh_scoreboard_server, tmp_path):
    server = fresh_scoreboard_server
    server.create_user("with-password", password="correct horse battery staple")
    server.palaestra("server", "export", str(tmp_path / "plain"))
    users = [
        json.loads(line) for line in (tmp_path / "plain" / "records" / "users.jsonl").read_text().splitlines()
    ]
    assert {u["name"] for u in users} == {"tester", "with-password"}
    assert all("password_hash" not in u for u in users)
    assert not (tmp_path / "plain" / "records" / "api_keys.jsonl").exists()
    assert "api_keys" not in json.loads((tmp_path / "plain" / "manifest.json").read_text())["tables"]
    server.palaestra("server", "export", str(tmp_path / "keys"), "--include-keys")
    keys = (tmp_path / "keys" / "records" / "api_keys.jsonl").read_text()
    assert keys.count("key_hash") == 2 and server.api_key not in keys  # hashes, never the keys


def test_export_and_import_show_progress_on_a_terminal_and_not_in_a_pipe(fresh_scoreboard_server, tmp_path):
    import fcntl
    import os
    import pty
    import struct
    import termios

    server = fresh_scoreboard_server
    small_board(server, 1)

    def on_terminal(env: dict[str, str], *args: str) -> str:
        main, child = pty.openpty()
        fcntl.ioctl(
            child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0)
        )  # a terminal 100 columns wide
        result = subprocess.run([sys.executable, "-m", "palaestra", *args], env=env, stdout=subprocess.PIPE,
                                stderr=child, timeout=300)  # fmt: skip
        os.close(child)
        shown = b""
        with contextlib.suppress(OSError):
            while chunk := os.read(main, 65536):
                shown += chunk
        os.close(main)
        assert result.returncode == 0, shown
        return shown.decode(errors="replace")

    shown = on_terminal(server.env, "server", "export", str(tmp_path / "export"))
    assert "evaluations" in shown and "blobs" in shown and "rows" in shown
    piped = server.palaestra("server", "export", str(tmp_path / "export"))
    assert " rows" not in piped.stderr  # in a pipe: no bars, the summary only
    shown = on_terminal(
        board_env(server.env, tmp_path / "target"), "server", "import", str(tmp_path / "export")
    )
    assert "checking" in shown and "evaluations" in shown
