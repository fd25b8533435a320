"""A killed server leaves no half evaluation; a restart keeps everything; 32 clients at once all land."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    make_batch,
    post_upload,
    upload_evaluation,
    video_archive,
)


def _db(server: ScoreboardServer) -> sqlite3.Connection:
    return sqlite3.connect(Path(server.data_dir) / "scoreboard.sqlite3")


def check_consistency(server: ScoreboardServer, env: str) -> int:
    """Every evaluation is whole: its files point back at it, its stored batch exists, aggregates agree."""
    with _db(server) as conn:
        evals = conn.execute(
            "SELECT id, training_episode_batch, training_video, episode_batch_key FROM evaluations WHERE env_id=?",
            (env,),
        ).fetchall()
        for eid, batch, video, key in evals:
            for fid in (batch, video):
                if fid:
                    owner = conn.execute(
                        "SELECT evaluation_id, status FROM files WHERE id=?", (fid,)
                    ).fetchone()
                    assert owner == (eid, "uploaded"), (eid, fid, owner)
            assert (Path(server.data_dir) / "blobs" / key).is_file(), key
        claimed = conn.execute(
            "SELECT COUNT(*) FROM files WHERE evaluation_id IS NOT NULL AND evaluation_id NOT IN "
            "(SELECT id FROM evaluations)"
        ).fetchone()[0]
        assert claimed == 0, "a file claimed by an evaluation that does not exist"
        row = conn.execute("SELECT evaluation_count FROM envs WHERE env_id=?", (env,)).fetchone()
        assert (row[0] if row else 0) == len(evals)
    return len(evals)


def test_kill_mid_upload_leaves_nothing_half_done(fresh_scoreboard_server: ScoreboardServer) -> None:
    server = fresh_scoreboard_server
    env = f"Kill{uuid.uuid4().hex[:6]}-v0"
    with server.client() as c:
        f = create_file(c, "episode_batch")
    # 1. an upload whose body is still arriving when the server dies
    started = threading.Event()

    def slow_body() -> Any:
        yield (
            b'--zzz\r\nContent-Disposition: form-data; name="expires"\r\n\r\n'
            + f["post_fields"]["expires"].encode()
        )
        started.set()
        time.sleep(30)
        yield b"never"

    def send() -> None:
        try:
            httpx.post(
                f["post_url"],
                content=slow_body(),
                headers={"Content-Type": "multipart/form-data; boundary=zzz"},
                timeout=60,
            )
        except httpx.HTTPError:
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    assert started.wait(30)
    # 2. ... while a burst of evaluations is being created
    stop = threading.Event()
    landed: list[str] = []

    def uploader() -> None:
        with server.client() as cl:
            while not stop.is_set():
                try:
                    landed.append(upload_evaluation(cl, env, make_batch(50), videos=video_archive(1))["id"])
                except (httpx.HTTPError, AssertionError, KeyError, ValueError):
                    return

    threads = [threading.Thread(target=uploader, daemon=True) for _ in range(6)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(landed) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()
    stop.set()
    for t in threads:
        t.join(30)
    server.start()
    count = check_consistency(server, env)
    assert count >= len(landed) >= 5
    with server.client() as c:
        # the upload cut short never happened: its URL still works, once
        assert c.get(f"/v1/files/{f['id']}").json()["status"] == "pending"
        assert post_upload(f, json.dumps(make_batch(3)).encode()).status_code == 204
        r = c.post("/v1/evaluations", json={"env": env, "training_episode_batch": f["id"]})
        assert r.status_code == 201, r.text
    assert check_consistency(server, env) == count + 1


def test_restart_keeps_everything(fresh_scoreboard_server: ScoreboardServer) -> None:
    server = fresh_scoreboard_server
    with server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", make_batch(120, reward=200.0), videos=video_archive(2))
        run = c.post("/v1/benchmark_runs", json={"benchmark_id": "B-v0", "tags": "{}"}).json()
        pending = create_file(c, "episode_batch")
    server.restart()
    with server.client() as c:  # the same key still works
        assert c.get(f"/v1/evaluations/{ev['id']}").json() == {k: v for k, v in ev.items() if k != "already_uploaded"}
        assert c.get(f"/v1/benchmark_runs/{run['id']}").json()["id"] == run["id"]
        assert c.get("/v1/envs/CartPole-v1").json()["evaluation_count"] == 1
        # an upload URL signed before the restart is still valid (the secret is in the database)
        assert post_upload(pending, json.dumps(make_batch(2)).encode()).status_code == 204
    with _db(server) as conn:
        (videos,) = conn.execute("SELECT videos FROM evaluations WHERE id=?", (ev["id"],)).fetchone()
    for v in json.loads(videos):
        assert (Path(server.data_dir) / "blobs" / v["key"]).is_file()


@pytest.mark.slow
def test_32_clients_uploading_at_once_all_land(scoreboard_server: ScoreboardServer) -> None:
    env = f"Crowd{uuid.uuid4().hex[:6]}-v0"
    keys = [scoreboard_server.create_user(f"crowd{uuid.uuid4().hex[:8]}") for _ in range(4)]

    def one(i: int) -> str:
        headers = {"Authorization": f"Bearer {keys[i % len(keys)]}"}
        with httpx.Client(base_url=scoreboard_server.url, headers=headers, timeout=120) as c:
            return str(
                upload_evaluation(
                    c, env, make_batch(200), videos=video_archive(1), algorithm={"id": "crowd"}
                )["id"]
            )

    with ThreadPoolExecutor(32) as pool:
        ids = list(pool.map(one, range(32)))
    assert len(set(ids)) == 32
    with httpx.Client(base_url=scoreboard_server.url) as c:
        assert c.get(f"/v1/envs/{env}").json()["evaluation_count"] == 32
        listed = c.get("/v1/evaluations", params={"env": env, "limit": 100}).json()["data"]
        assert sorted(e["id"] for e in listed) == sorted(ids)
        # one algorithm per user, even though 8 requests per user created "crowd" at once
        assert len({e["algorithm"]["id"] for e in listed}) == len(keys)
