"""The scale-out set-up: PostgreSQL on 127.0.0.1:5432, S3 (moto on loopback), several server processes."""

from __future__ import annotations

import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

import boto3
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


def _bucket_keys(storage: str, env: dict[str, str]) -> list[str]:
    parsed = urlparse(storage)
    s3 = boto3.client(
        "s3",
        endpoint_url=env["PALAESTRA_S3_ENDPOINT_URL"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    out = s3.list_objects_v2(Bucket=parsed.netloc, Prefix=parsed.path.strip("/"))
    return [o["Key"] for o in out.get("Contents", [])]


@pytest.mark.postgres
def test_postgres_two_processes_share_database_and_store(
    scoreboard_factory: Any, postgres_url: str, tmp_path: Any
) -> None:
    store = str(tmp_path / "shared-blobs")
    # servers on several hosts share the upload-signing secret (each has its own data folder)
    shared_secret = {"PALAESTRA_UPLOAD_SECRET_FILE": str(tmp_path / "upload-secret.json")}
    # two processes started at once: the migration runs once (advisory lock)
    servers: list[ScoreboardServer] = []
    errors: list[BaseException] = []

    def start(i: int) -> None:
        try:
            servers.append(
                scoreboard_factory(
                    database_url=postgres_url,
                    storage=store,
                    data_dir=tmp_path / f"proc{i}",
                    env=shared_secret,
                )
            )
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    a, b = servers
    with a.client() as ca, httpx.Client(base_url=b.url, headers=a.headers(), timeout=60) as cb:
        ev = upload_evaluation(ca, "CartPole-v1", make_batch(120, reward=500.0), videos=video_archive(2))
        assert ev["score"]["solved"] is True
        assert cb.get(f"/v1/evaluations/{ev['id']}").json()["score"] == ev["score"]
        # a file created on A, uploaded to B's endpoint with A's signature, used on B
        f = create_file(ca, "episode_batch")
        moved = {**f, "post_url": f["post_url"].replace(a.url, b.url)}
        assert post_upload(moved, json.dumps(make_batch(3)).encode()).status_code == 204
        r = cb.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": f["id"]})
        assert r.status_code == 201, r.text
        # idempotency across processes
        f2 = create_file(ca, "episode_batch")
        assert post_upload(f2, json.dumps(make_batch(3)).encode()).status_code == 204
        body, key = (
            {"env": "Acrobot-v1", "training_episode_batch": f2["id"]},
            {"Idempotency-Key": uuid.uuid4().hex},
        )
        e1, e2 = (
            ca.post("/v1/evaluations", json=body, headers=key),
            cb.post("/v1/evaluations", json=body, headers=key),
        )
        # made once; the replay on the other process is a repeat of it (evaluations.repeats)
        assert e1.status_code == 201 and e2.status_code == 200 and e1.json()["id"] == e2.json()["id"]

        # 16 clients over both processes; evaluation counts add up under concurrency
        env = f"Pg{uuid.uuid4().hex[:6]}-v0"

        def one(i: int) -> str:
            with httpx.Client(base_url=servers[i % 2].url, headers=a.headers(), timeout=120) as c:
                return str(upload_evaluation(c, env, make_batch(50), algorithm={"id": "shared-alg"})["id"])

        with ThreadPoolExecutor(16) as pool:
            ids = list(pool.map(one, range(16)))
        assert len(set(ids)) == 16
        assert cb.get(f"/v1/envs/{env}").json()["evaluation_count"] == 16
        listed = ca.get("/v1/evaluations", params={"env": env, "limit": 50}).json()["data"]
        assert len({e["algorithm"]["id"] for e in listed}) == 1
    b.kill()  # the other process keeps serving
    with a.client() as ca:
        assert ca.get(f"/v1/evaluations/{ev['id']}").json()["id"] == ev["id"]


def test_s3_store_with_presigned_post(
    scoreboard_factory: Any, s3_storage: tuple[str, dict[str, str]]
) -> None:
    storage, env = s3_storage
    server: ScoreboardServer = scoreboard_factory(storage=storage, env=env)
    with server.client() as c:
        f = create_file(c, "video")
        assert f["post_url"].startswith(env["PALAESTRA_S3_ENDPOINT_URL"])  # a real presigned POST
        assert "policy" in f["post_fields"] and "x-amz-signature" in f["post_fields"]
        ev = upload_evaluation(c, "CartPole-v1", make_batch(20), videos=video_archive(2, kind="mp4", seed=7))
        assert [v["episode_id"] for v in ev["videos"]] == [0, 1]
        keys = _bucket_keys(storage, env)
        # the evaluation reads a copy of the upload that the server stored (the presigned form's key
        # is the client's to write), enriched when read; the upload itself is gone
        batch_id = ev["training_episode_batch"]
        assert any(f"files/{batch_id}." in k for k in keys)
        assert not any(k.endswith(f"uploads/{batch_id}") for k in keys)
        stored = httpx.get(f"{server.url}/evaluations/{ev['id']}/episode_batch.json").json()
        assert stored["env_id"] == "CartPole-v1" and len(stored["episode_rewards"]) == 20
        assert sum(k.endswith(".mp4") for k in keys) == 2
        # a file whose bytes never arrived, and a bad batch sent straight to S3
        empty = create_file(c, "episode_batch")
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": empty["id"]})
        assert r.status_code == 400 and "no content" in r.json()["detail"]
        bad = create_file(c, "episode_batch")
        assert (
            post_upload(
                bad, json.dumps({**make_batch(3), "episode_types": ["t", "t", "q"]}).encode()
            ).status_code
            == 204
        )
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": bad["id"]})
        assert r.status_code == 400 and r.json()["type"] == "training_episode_batch"
        assert "episode_types" in r.json()["detail"]


@pytest.mark.postgres
def test_postgres_and_s3_together(
    scoreboard_factory: Any, postgres_url: str, s3_storage: tuple[str, dict[str, str]]
) -> None:
    storage, env = s3_storage
    server: ScoreboardServer = scoreboard_factory(database_url=postgres_url, storage=storage, env=env)
    with server.client() as c:
        ev = upload_evaluation(c, "Acrobot-v1", make_batch(30), videos=video_archive(1))
        run = c.post("/v1/benchmark_runs", json={"benchmark_id": "ClassicControl2-v0", "tags": "{}"}).json()
        ev2 = upload_evaluation(c, "CartPole-v0", make_batch(30), benchmark_run_id=run["id"])
        committed = c.post(f"/v1/benchmark_runs/{run['id']}/commit").json()
    assert committed["evaluations"] == [ev2["id"]]
    server.restart()
    with server.client() as c:
        assert c.get(f"/v1/evaluations/{ev['id']}").json()["videos"] == ev["videos"]
