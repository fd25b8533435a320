"""Errors of the /v1 API: 400s that name the parameter, 404s for unknown ids (the 2017 client's shapes)."""

from __future__ import annotations

import json
import uuid

import httpx

from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    error_of,
    make_batch,
    upload,
)


def test_bad_request_bodies_name_the_parameter(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        assert error_of(c.post("/v1/files", json={"purpose": "pictures"}), 400)["type"] == "purpose"
        r = c.post("/v1/benchmark_runs", json={"benchmark_id": "X", "tags": "{not json"})
        assert error_of(r, 400)["type"] == "tags"
        r = c.post("/v1/benchmark_runs", json={"benchmark_id": "X", "tags": "{}", "extra": 1})
        assert "Additional properties are not allowed" in error_of(r, 400)["detail"]
        assert error_of(c.post("/v1/evaluations", json={}), 400)["type"] == "env"
        video = create_file(c, "video")
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": video["id"]})
        assert error_of(r, 400)["type"] == "training_episode_batch"
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_video": video["id"]})
        assert "no content yet" in error_of(r, 400)["detail"]


def test_unknown_ids_are_404(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        for path in (
            "/v1/evaluations/eval_nope",
            "/v1/files/file_nope",
            "/v1/benchmark_runs/brun_nope",
            "/v1/algorithms/alg_nope",
            "/v1/envs/Nope-v0",
            "/v1/nothing-here",
        ):
            error_of(c.get(path), 404)
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": "file_nope"})
        assert error_of(r, 404)["type"] == "training_episode_batch"
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "benchmark_run_id": "brun_nope"})
        assert error_of(r, 404)["type"] == "benchmark_run_id"
        error_of(c.post("/v1/benchmark_runs/brun_nope/commit"), 404)
        error_of(c.get("/v1/evaluations", params={"starting_after": "eval_nope"}), 404)
    other = scoreboard_server.create_user(f"other{uuid.uuid4().hex[:6]}")
    with scoreboard_server.client() as c:
        fid = upload(c, "episode_batch", json.dumps(make_batch(2)).encode())
    with httpx.Client(base_url=scoreboard_server.url, headers={"Authorization": f"Bearer {other}"}) as c2:
        r = c2.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": fid})
        assert error_of(r, 404)["type"] == "training_episode_batch"  # someone else's file


def test_a_doubled_v1_path_gets_a_hint_for_a_client_whose_url_ends_in_v1(
    scoreboard_server: ScoreboardServer,
) -> None:
    """The 2017 client with OPENAI_GYM_API_BASE=http://host/v1 asks for /v1/v1/files."""
    with scoreboard_server.client() as c:
        detail = error_of(c.post("/v1/v1/files", json={"purpose": "episode_batch"}), 404)["detail"]
    assert detail.startswith("There is no POST /v1/v1/files") and "drop the trailing /v1" in detail
