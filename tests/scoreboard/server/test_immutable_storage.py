"""What an evaluation was scored on never changes: nothing a client can do rewrites the stored batch
(on the file store and on S3, whose presigned form stays valid after the evaluation exists), and the
batch's sha256, recorded when it is stored, is checked whenever it is read."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.core.config import resolve_config
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.storage import BlobStore, open_store
from palaestra.scoreboard.server.tables.scores import Evaluation
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    error_of,
    make_batch,
    post_upload,
    upload_evaluation,
)


def stored_batch(server: ScoreboardServer, evaluation_id: str) -> tuple[str, str | None]:
    """``(blob key, recorded sha256)`` of the evaluation's episode batch, from the database."""
    db = Database(resolve_config(environ=server.env).database_url)
    try:
        with db.read() as session:
            row = session.execute(
                sa.select(Evaluation.episode_batch_key, Evaluation.episode_batch_sha256).where(
                    Evaluation.id == evaluation_id
                )
            ).one()
    finally:
        db.dispose()
    return row[0], row[1]


def forget_hash(server: ScoreboardServer, evaluation_id: str) -> None:
    """Make the evaluation look like one stored before hashes were recorded."""
    db = Database(resolve_config(environ=server.env).database_url)
    try:
        with db.write() as session:
            session.execute(
                sa.update(Evaluation).where(Evaluation.id == evaluation_id).values(episode_batch_sha256=None)
            )
    finally:
        db.dispose()


def bucket(storage: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> BlobStore:
    """The server's S3 store, opened in this process with the server's credentials."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return open_store(storage, env["PALAESTRA_S3_ENDPOINT_URL"])


def downloads(server: ScoreboardServer, evaluation_id: str) -> tuple[httpx.Response, httpx.Response]:
    base = f"{server.url}/evaluations/{evaluation_id}"
    return httpx.get(f"{base}/episode_batch.json"), httpx.get(f"{base}/episodes.csv")


def score_and_batch(server: ScoreboardServer, evaluation_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    with server.client() as c:
        score = c.get(f"/v1/evaluations/{evaluation_id}").json()["score"]
    batch, csv = downloads(server, evaluation_id)
    assert batch.status_code == 200 and csv.status_code == 200
    return score, batch.json()


def test_s3_a_second_post_of_the_presigned_form_changes_nothing_scored(
    scoreboard_factory: Any, s3_storage: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage, env = s3_storage
    server: ScoreboardServer = scoreboard_factory(storage=storage, env=env)
    original = json.dumps(make_batch(20)).encode()
    with server.client() as c:
        form = create_file(c, "episode_batch")
        assert post_upload(form, original).status_code == 204
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": form["id"]})
        assert r.status_code == 201, r.text
        ev = r.json()
    before = score_and_batch(server, ev["id"])
    # the form is still valid (S3 checks only its policy): garbage, then another valid batch
    for replacement in (b"garbage", json.dumps(make_batch(3, reward=-50)).encode()):
        assert post_upload(form, replacement).status_code == 204
        assert score_and_batch(server, ev["id"]) == before
    key, sha256 = stored_batch(server, ev["id"])
    assert sha256 == hashlib.sha256(original).hexdigest()
    assert bucket(storage, env, monkeypatch).get_bytes(key) == original


def test_file_store_the_upload_url_is_single_use_and_the_batch_hash_is_recorded(
    scoreboard_server: ScoreboardServer,
) -> None:
    original = json.dumps(make_batch(12)).encode()
    with scoreboard_server.client() as c:
        form = create_file(c, "episode_batch")
        assert post_upload(form, original).status_code == 204
        ev = c.post(
            "/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": form["id"]}
        ).json()
    before = score_and_batch(scoreboard_server, ev["id"])
    error_of(post_upload(form, b"garbage"), 409)
    assert score_and_batch(scoreboard_server, ev["id"]) == before
    assert stored_batch(scoreboard_server, ev["id"])[1] == hashlib.sha256(original).hexdigest()


def test_a_batch_changed_in_the_store_is_refused_with_a_clear_error(
    fresh_scoreboard_server: ScoreboardServer,
) -> None:
    server = fresh_scoreboard_server
    with server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", make_batch(15))
    key, _ = stored_batch(server, ev["id"])
    path = server.data_dir / "blobs" / key
    tampered = json.dumps(make_batch(15, reward=500.0)).encode()  # valid JSON, other episodes
    path.write_bytes(tampered)
    for r in downloads(server, ev["id"]):
        assert r.status_code == 500
        assert "not the one it was scored on" in r.text and "sha256" in r.text
        assert "500.0" not in r.text
    page = httpx.get(f"{server.url}/evaluations/{ev['id']}")
    assert page.status_code == 200  # the page shows the curves stored with the score instead
    assert "does not match the sha256" in server.log()
    # a batch stored before hashes were recorded (NULL) is read as it is
    forget_hash(server, ev["id"])
    batch, _ = downloads(server, ev["id"])
    assert batch.status_code == 200 and batch.json()["episode_rewards"][0] == 500.0


def test_s3_a_batch_changed_in_the_bucket_is_refused(
    scoreboard_factory: Any, s3_storage: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage, env = s3_storage
    server: ScoreboardServer = scoreboard_factory(storage=storage, env=env)
    with server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", make_batch(15))
    key, _ = stored_batch(server, ev["id"])
    bucket(storage, env, monkeypatch).put_bytes(key, b"{}")
    for r in downloads(server, ev["id"]):
        assert r.status_code == 500 and "not the one it was scored on" in r.text
