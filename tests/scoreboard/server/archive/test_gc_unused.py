"""Uploaded files that no evaluation uses expire: ``palaestra server gc`` (and the server's periodic
clean-up) removes them ``unused_file_ttl_s`` (48 hours by default) after their upload, with their
blobs, and never a file an evaluation uses or one uploaded since. SQLite and PostgreSQL. And the
rate-limit counters of addresses that never came back go too."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.accounts.rate_limits import STALE_COUNTER_S
from palaestra.scoreboard.server.core.config import DEFAULT_UNUSED_FILE_TTL_S, resolve_config
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.tables.base import utcnow
from palaestra.scoreboard.server.tables.service import FileRecord, RateCounter
from tests.scoreboard.server.archive.test_gc import blobs, evaluation_is_whole, gc
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    make_batch,
    upload,
    upload_evaluation,
    video_archive,
)


def backdate_uploads(server: ScoreboardServer, file_ids: list[str], seconds: float) -> None:
    """Make the files' bytes have arrived ``seconds`` ago."""
    db = Database(resolve_config(environ=server.env).database_url)
    try:
        with db.write() as session:
            session.execute(
                sa.update(FileRecord)
                .where(FileRecord.id.in_(file_ids))
                .values(uploaded=utcnow() - timedelta(seconds=seconds))
            )
    finally:
        db.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_gc_removes_uploaded_files_no_evaluation_used_after_their_ttl(
    scoreboard_factory: Any, request: pytest.FixtureRequest, backend: str
) -> None:
    database_url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    server: ScoreboardServer = scoreboard_factory(database_url=database_url)
    with server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", make_batch(8), videos=video_archive(2))
        used = blobs(server)
        old_batch = upload(c, "episode_batch", json.dumps(make_batch(3)).encode())
        old_videos = upload(c, "video", video_archive(2, seed=7))  # its videos unpacked into blobs too
        recent = upload(c, "episode_batch", json.dumps(make_batch(4)).encode())
        pending = create_file(c, "episode_batch")  # never uploaded: the pending files' own expiry
    unused_blobs = blobs(server) - used
    backdate_uploads(server, [old_batch, old_videos], DEFAULT_UNUSED_FILE_TTL_S + 60)
    backdate_uploads(server, [recent], DEFAULT_UNUSED_FILE_TTL_S - 600)
    backdate_uploads(server, [ev["training_episode_batch"]], 30 * 24 * 3600)  # used: kept however old

    dry = gc(server, "--grace", "0", "--dry-run")
    assert dry["unused_files"] == 2 and blobs(server) == used | unused_blobs
    report = gc(server, "--grace", "0")
    assert report["unused_files"] == 2
    # exactly the two files' blobs (the batch; the archive's two videos and their metadata) went with them
    old_blobs = {key for key in unused_blobs if key.split("/")[1].startswith((f"{old_batch}.", f"{old_videos}."))}
    assert len(old_blobs) == 5 and set(report["orphaned_keys"]) == old_blobs
    assert blobs(server) == used | (unused_blobs - old_blobs)
    with server.client() as c:
        for gone in (old_batch, old_videos):
            assert c.get(f"/v1/files/{gone}").status_code == 404
        for kept in (recent, pending["id"], ev["training_episode_batch"]):
            assert c.get(f"/v1/files/{kept}").status_code == 200
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": old_batch})
        assert r.status_code in (400, 404) and old_batch in r.json()["detail"]
        assert c.post(
            "/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": recent}
        ).status_code == 201  # a file inside its time is still usable
    evaluation_is_whole(server, ev)
    assert "unused uploaded files" in server.palaestra("server", "gc").stdout


def test_an_unused_file_ttl_of_zero_keeps_unused_files(fresh_scoreboard_server: ScoreboardServer) -> None:
    server = fresh_scoreboard_server
    with server.client() as c:
        old = upload(c, "episode_batch", json.dumps(make_batch(3)).encode())
    backdate_uploads(server, [old], 365 * 24 * 3600)
    assert gc(server, "--grace", "0", "--unused-file-ttl", "0")["unused_files"] == 0
    assert httpx.get(f"{server.url}/v1/files/{old}", headers=server.headers()).status_code == 200
    assert gc(server, "--grace", "0")["unused_files"] == 1  # the default: 48 hours


def test_gc_removes_rate_counters_whose_window_ended_long_ago(fresh_scoreboard_server: ScoreboardServer) -> None:
    server = fresh_scoreboard_server
    db = Database(resolve_config(environ=server.env).database_url)
    now = int(time.time())
    try:
        with db.write() as session:
            session.add_all([
                RateCounter(bucket="read:203.0.113.7", window_start=now - STALE_COUNTER_S - 60, hits=3),
                RateCounter(bucket="sign_in:someone", window_start=now - 60, hits=1),
            ])  # fmt: skip
        assert gc(server)["ended_rate_counters"] == 1
        with db.connect() as conn:
            assert conn.scalars(sa.select(RateCounter.bucket)).all() == ["sign_in:someone"]
    finally:
        db.dispose()
