"""/v1/evaluations: scored once, when created, with the solved-stats module; lists; the stored batch."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from palaestra import catalogue, solved_stats
from palaestra.scoreboard import protocol
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    error_of,
    make_batch,
    upload,
    upload_evaluation,
    video_archive,
)


def test_evaluation_is_scored_on_ingest_with_the_scoring_module(scoreboard_server: ScoreboardServer) -> None:
    batch = make_batch(150, reward=500.0)
    with scoreboard_server.client() as c:
        ev = upload_evaluation(
            c,
            "CartPole-v1",
            batch,
            videos=video_archive(2),
            algorithm={"id": "alg-a"},
            writeup="https://gist.github.com/u/1",
            gym_version="0.9.4",
        )
        assert ev["object"] == "evaluation" and ev["id"].startswith("eval_")
        assert ev["web_url"] == f"{scoreboard_server.url}/evaluations/{ev['id']}"
        entry = catalogue.lookup("CartPole-v1")
        assert entry is not None
        merged = {**batch, "initial_reset_timestamp": min(batch["initial_reset_timestamps"])}
        expected = solved_stats.solved_stats(merged, trials=entry.trials, reward_threshold=entry.reward_threshold)
        score = ev["score"]
        for k, v in expected.items():
            assert score[k] == pytest.approx(v), k
        assert score["solved"] is True and score["reward_threshold"] == entry.reward_threshold
        assert ev["env_listed"] is True and ev["env_group"] == entry.group
        assert [v["episode_id"] for v in ev["videos"]] == [0, 1]
        assert ev["algorithm"]["name"] == "alg-a" and ev["algorithm"]["id"].startswith("alg_")
        # GET gives the same object; the algorithm name resolves to the same algorithm next time
        got = c.get(f"/v1/evaluations/{ev['id']}").json()
        assert got["score"] == ev["score"] and got["videos"] == ev["videos"]
        ev2 = upload_evaluation(c, "CartPole-v1", make_batch(5), algorithm={"id": ev["algorithm"]["id"]})
        ev3 = upload_evaluation(c, "CartPole-v1", make_batch(5), algorithm={"id": "alg-a"})
        assert ev2["algorithm"]["id"] == ev3["algorithm"]["id"] == ev["algorithm"]["id"]
        # the per-env aggregates
        env = c.get("/v1/envs/CartPole-v1").json()
        assert env["evaluation_count"] >= 3 and env["best_mean"] >= 500.0 and env["solved_count"] >= 1


def test_an_upload_is_judged_by_the_rule_of_the_gym_that_recorded_it(scoreboard_server: ScoreboardServer) -> None:
    # Acrobot-v1 had no threshold in 2017 (never "solved"); Gymnasium's is -100
    # two runs of the same rewards (the same episodes again would be a repeat of the first evaluation)
    with scoreboard_server.client() as c:
        old = upload_evaluation(c, "Acrobot-v1", make_batch(120, reward=-80.0), algorithm={}, gym_version="0.9.4")
        new = upload_evaluation(c, "Acrobot-v1", make_batch(120, reward=-80.0), algorithm={}, gym_version="1.1.1")
        assert (old["score"]["reward_threshold"], old["score"]["solved"]) == (None, False)
        assert (new["score"]["reward_threshold"], new["score"]["solved"]) == (-100.0, True)
        page = c.get(f"/evaluations/{old['id']}").text
        assert "Acrobot-v1 is an unsolved environment" in page


def test_lists_page_newest_first_and_take_the_2017_raw_json_query(
    scoreboard_server: ScoreboardServer,
) -> None:
    env = f"Paging{uuid.uuid4().hex[:6]}-v0"
    with scoreboard_server.client() as c:
        ids = [upload_evaluation(c, env, make_batch(2))["id"] for _ in range(3)]
        first = c.get("/v1/evaluations", params={"env": env, "limit": 2}).json()
        assert first["object"] == "list" and first["has_more"] is True
        assert [e["id"] for e in first["data"]] == ids[::-1][:2]
        raw = json.dumps({"env": env, "limit": 2, "starting_after": first["data"][-1]["id"]})
        second = c.get(f"/v1/evaluations?{raw}").json()  # what the 2017 client sends
        assert [e["id"] for e in second["data"]] == [ids[0]] and second["has_more"] is False
        files = c.get("/v1/files", params={"limit": 3}).json()
        assert len(files["data"]) == 3 and all(f["object"] == "file" for f in files["data"])
        assert all(f["post_url"] is None for f in files["data"])


def test_stored_batch_is_the_enriched_2017_document(scoreboard_server: ScoreboardServer) -> None:
    batch = make_batch(4)
    with scoreboard_server.client() as c:
        ev = upload_evaluation(c, "Acrobot-v1", batch)
    # the evaluation keeps the upload as it came; its download is the 2017 stored document
    r = httpx.get(f"{scoreboard_server.url}/evaluations/{ev['id']}/episode_batch.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["env_id"] == "Acrobot-v1" and doc["initial_reset_timestamp"] == batch["initial_reset_timestamps"][0]
    assert doc["episode_rewards"] == batch["episode_rewards"]


def test_a_corrupt_stored_batch_is_refused_and_the_page_still_renders(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        ev = upload_evaluation(c, "Acrobot-v1", make_batch(6))
    blob = Path(scoreboard_server.data_dir) / "blobs" / "files"
    (stored,) = [f for f in blob.iterdir() if f.name.startswith(ev["training_episode_batch"])]
    original = stored.read_bytes()
    stored.write_bytes(b"{not json")
    try:
        for download in ("episode_batch.json", "episodes.csv"):  # its sha256 no longer matches
            r = httpx.get(f"{scoreboard_server.url}/evaluations/{ev['id']}/{download}")
            assert r.status_code == 500 and "not the one it was scored on" in r.text
        page = httpx.get(f"{scoreboard_server.url}/evaluations/{ev['id']}")  # falls back to the stored curves
        assert page.status_code == 200 and ev["id"] in page.text
    finally:
        stored.write_bytes(original)



def test_an_uploaded_batch_is_validated_once_when_it_arrives(in_process_server, monkeypatch) -> None:
    validations = []
    real = protocol.parse_episode_batch

    def counting(*args: Any, **kwargs: Any) -> protocol.EpisodeBatch:
        validations.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(protocol, "parse_episode_batch", counting)
    with in_process_server.client() as c:
        file_id = upload(c, "episode_batch", json.dumps(make_batch(120, reward=300.0)).encode())
        assert len(validations) == 1
        r = c.post("/v1/evaluations", json={"env": "Acrobot-v1", "training_episode_batch": file_id})
    assert r.status_code == 201, r.text
    assert r.json()["score"]["number_episodes"] == 120 and r.json()["score"]["mean"] is not None
    assert len(validations) == 1, "creating the evaluation read the stored batch without validating it again"


def test_a_batch_damaged_in_the_store_before_its_evaluation_is_a_400_and_nothing_is_made(
    in_process_server,
) -> None:
    state = in_process_server.state
    with in_process_server.client() as c:
        file_id = upload(c, "episode_batch", json.dumps(make_batch(3)).encode())
        with state.db.connect() as conn:
            key = conn.execute(sa.text("SELECT storage_key FROM files WHERE id = :id"), {"id": file_id}).scalar()
        state.store.put_bytes(key, b'{"episode_lengths": [1, 2')  # a storage fault: cut short
        r = c.post("/v1/evaluations", json={"env": "Acrobot-v1", "training_episode_batch": file_id})
        body = error_of(r, 400)
        assert body["type"] == "training_episode_batch" and "damaged" in body["detail"]
        assert "upload it again" in body["detail"]
        assert c.get("/v1/evaluations").json()["data"] == []
        assert c.get(f"/v1/files/{file_id}").json()["status"] == "uploaded"  # and still not used up


def test_an_evaluation_without_completed_episodes_is_refused(scoreboard_server: ScoreboardServer) -> None:
    """2017 made an evaluation of a video alone, or of an empty batch: nothing to score, junk on the board."""
    with scoreboard_server.client() as c:
        before = c.get("/v1/evaluations", params={"limit": 100}).json()["data"]
        video = upload(c, "video", video_archive(1))
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_video": video})
        assert "this one has none" in error_of(r, 400)["detail"]
        empty = upload(c, "episode_batch", json.dumps(make_batch(0)).encode())
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": empty})
        assert error_of(r, 400)["type"] == "training_episode_batch"
        assert c.get("/v1/evaluations", params={"limit": 100}).json()["data"] == before


def test_a_writeup_that_is_not_a_web_address_is_refused(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        batch = upload(c, "episode_batch", json.dumps(make_batch(3)).encode())
        body = {"env": "CartPole-v1", "training_episode_batch": batch, "writeup": "javascript:alert(1)"}
        assert "writeup must be an http(s) URL" in error_of(c.post("/v1/evaluations", json=body), 400)["detail"]
        body["writeup"] = "https://gist.github.com/u/2"
        assert c.post("/v1/evaluations", json=body).status_code == 201


def test_an_evaluation_of_an_env_outside_its_benchmark_runs_benchmark_is_refused(
    scoreboard_server: ScoreboardServer,
) -> None:
    with scoreboard_server.client() as c:
        run = c.post("/v1/benchmark_runs", json={"benchmark_id": "ClassicControl2-v1", "tags": "{}"})
        assert run.status_code == 201, run.text
        run_id = run.json()["id"]
        batch = upload(c, "episode_batch", json.dumps(make_batch(3)).encode())
        body = {"env": "Acrobot-v1", "training_episode_batch": batch, "benchmark_run_id": run_id}
        error = error_of(c.post("/v1/evaluations", json=body), 400)
        assert error["type"] == "env"
        assert "is of ClassicControl2-v1, whose envs are CartPole-v0, Pendulum-v1" in error["detail"]
        assert c.get(f"/v1/benchmark_runs/{run_id}").json()["evaluations"] == []
        body["env"] = "CartPole-v0"
        assert c.post("/v1/evaluations", json=body).status_code == 201
