"""``palaestra server gc`` and the server's periodic clean-up remove orphaned blobs, temporary files,
expired pending files and expired idempotency keys, report what they removed, and never touch what
an evaluation references. The orphan is made the way a crash makes it: the server is SIGKILLed
between writing an upload's bytes and committing its row (``server.faults``)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.core.config import resolve_config
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.faults import PAUSE_ENV
from palaestra.scoreboard.server.tables.base import utcnow
from palaestra.scoreboard.server.tables.service import FileRecord
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    make_batch,
    post_upload,
    upload_evaluation,
    video_archive,
    wait_until,
)


def blobs(server: ScoreboardServer) -> set[str]:
    """The keys in the server's file store (health probes and temporary files left out)."""
    root = server.data_dir / "blobs"
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] not in (".tmp", ".health")
    }


def gc(server: ScoreboardServer, *flags: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(server.palaestra("server", "gc", "--json", *flags).stdout)
    return report


def evaluation_is_whole(server: ScoreboardServer, ev: dict[str, Any]) -> None:
    """The evaluation's batch, episodes and every video are served, as uploaded."""
    base = f"{server.url}/evaluations/{ev['id']}"
    batch = httpx.get(f"{base}/episode_batch.json")
    assert batch.status_code == 200 and len(batch.json()["episode_lengths"]) == 8
    assert httpx.get(f"{base}/episodes.csv").status_code == 200
    for video in ev["videos"]:
        assert httpx.get(f"{base}/videos/{video['name']}").status_code == 200


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_gc_removes_exactly_the_orphan_of_an_upload_killed_before_its_row_committed(
    scoreboard_factory: Any, request: pytest.FixtureRequest, backend: str
) -> None:
    database_url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    server: ScoreboardServer = scoreboard_factory(database_url=database_url)
    with server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", make_batch(8), videos=video_archive(2))
        uploaded_unused = create_file(c, "episode_batch")
        assert post_upload(uploaded_unused, json.dumps(make_batch(3)).encode()).status_code == 204
    server.stop()
    before = blobs(server)

    server.env[PAUSE_ENV] = "after_blob_write:300"
    server.start()
    with server.client() as c:
        doomed = create_file(c, "episode_batch")
    upload = threading.Thread(target=lambda: _post_quietly(doomed, json.dumps(make_batch(5)).encode()))
    upload.start()
    wait_until(lambda: "pausing at after_blob_write" in server.log(), timeout=60)
    server.kill()
    upload.join(timeout=60)
    del server.env[PAUSE_ENV]

    (orphan,) = blobs(server) - before
    assert orphan.startswith(f"files/{doomed['id']}.")
    dry = gc(server, "--grace", "0", "--dry-run")
    assert dry["dry_run"] and dry["orphaned_keys"] == [orphan] and orphan in blobs(server)
    report = gc(server, "--grace", "0")
    assert report["orphaned_keys"] == [orphan] and report["orphaned_blobs"] == 1
    assert report["orphaned_bytes"] == len(json.dumps(make_batch(5)).encode())
    assert blobs(server) == before  # everything else stays: the evaluation's and the unused upload's
    assert gc(server, "--grace", "0")["orphaned_blobs"] == 0
    server.start()
    evaluation_is_whole(server, ev)


def _post_quietly(file_obj: dict[str, Any], data: bytes) -> None:
    try:
        post_upload(file_obj, data, timeout=300)
    except httpx.HTTPError:
        pass  # the server was killed mid-request


def backdate_pending_files(server: ScoreboardServer) -> None:
    db = Database(resolve_config(environ=server.env).database_url)
    try:
        with db.write() as session:
            session.execute(
                sa.update(FileRecord)
                .where(FileRecord.status == "pending")
                .values(expires=utcnow() - timedelta(days=1))
            )
    finally:
        db.dispose()


def test_gc_removes_expired_pending_files_idempotency_keys_and_stale_temporary_files(
    fresh_scoreboard_server: ScoreboardServer,
) -> None:
    server = fresh_scoreboard_server
    with server.client() as c:
        for _ in range(4):
            create_file(c, "episode_batch")  # never uploaded (expired below)
        batch = create_file(c, "episode_batch", **{"Idempotency-Key": "batch-1"})
        assert post_upload(batch, json.dumps(make_batch(8)).encode()).status_code == 204
        body = {"env": "CartPole-v1", "training_episode_batch": batch["id"]}
        ev = c.post("/v1/evaluations", json=body, headers={"Idempotency-Key": "ev-1"}).json()
    backdate_pending_files(server)
    with server.client() as c:
        fresh = create_file(c, "episode_batch")  # pending, not expired: kept
    stale = server.data_dir / "blobs" / ".tmp" / "killed-write"
    stale.write_bytes(b"x" * 100)

    report = gc(server, "--grace", "0", "--idempotency-ttl", "0")
    assert report["expired_pending_files"] == 4
    assert report["expired_idempotency_keys"] == 2
    assert report["temporary_files"] == 1 and report["temporary_bytes"] == 100 and not stale.exists()
    assert report["orphaned_blobs"] == 0
    with server.client() as c:
        assert c.get(f"/v1/files/{fresh['id']}").status_code == 200
        assert c.get(f"/v1/files/{batch['id']}").status_code == 200  # it belongs to the evaluation
        assert c.get(f"/v1/evaluations/{ev['id']}").status_code == 200
    batch_download = httpx.get(f"{server.url}/evaluations/{ev['id']}/episode_batch.json")
    assert batch_download.status_code == 200
    text = server.palaestra("server", "gc").stdout
    assert "removed 0 orphaned blobs" in text and "0 expired pending files" in text


def test_the_server_cleans_up_periodically(scoreboard_factory: Any) -> None:
    server: ScoreboardServer = scoreboard_factory(args=["--gc-interval", "1", "--grace", "0"])
    with server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", make_batch(8), videos=video_archive(1))
    orphan = server.data_dir / "blobs" / "files" / "file_gone.0123456789ab"
    orphan.write_bytes(b"{}")
    wait_until(lambda: not orphan.exists(), timeout=60)
    wait_until(lambda: "gc removed 1 orphaned blobs" in server.log(), timeout=30)
    evaluation_is_whole(server, ev)


def test_s3_gc_removes_what_a_second_post_of_the_presigned_form_left(
    scoreboard_factory: Any, s3_storage: tuple[str, dict[str, str]]
) -> None:
    storage, env = s3_storage
    server: ScoreboardServer = scoreboard_factory(storage=storage, env=env)
    with server.client() as c:
        form = create_file(c, "episode_batch")
        assert post_upload(form, json.dumps(make_batch(8)).encode()).status_code == 204
        body = {"env": "CartPole-v1", "training_episode_batch": form["id"]}
        ev = c.post("/v1/evaluations", json=body).json()
    assert post_upload(form, b"garbage").status_code == 204  # lands where nothing reads it
    report = gc(server, "--grace", "0")
    assert report["orphaned_keys"] == [f"uploads/{form['id']}"]
    assert httpx.get(f"{server.url}/evaluations/{ev['id']}/episode_batch.json").status_code == 200


def test_gc_that_cannot_reach_its_database_says_so_in_one_line_with_exit_code_3(tmp_path: Path) -> None:
    from palaestra.cli import exits
    from tests.server_process import free_port

    result = subprocess.run(
        [sys.executable, "-m", "palaestra", "server", "gc", "--data-dir", str(tmp_path),
         "--database-url", f"postgresql://nobody@127.0.0.1:{free_port()}/none"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == exits.COULD_NOT_START
    (line,) = result.stderr.strip().splitlines()
    assert "palaestra server: error:" in line and "database" in line and "nobody@127.0.0.1" in line
