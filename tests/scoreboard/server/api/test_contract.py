"""The route table and the wire: every /v1 route answers with exactly its protocol model (no field the
protocol does not know, none missing, values that read back the same), errors included."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol import live as live_protocol
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    make_batch,
    post_upload,
    video_archive,
)


def unknown_fields(model: BaseModel) -> list[str]:
    """Fields of ``model`` (and the models inside it) that its class does not declare."""
    found = [f"{type(model).__name__}.{name}" for name in model.model_extra or {}]
    for name in type(model).model_fields:
        value = getattr(model, name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, BaseModel):
                found += unknown_fields(item)
    return found


def assert_wire(model: type[BaseModel], doc: Any) -> None:
    parsed = model.model_validate(doc)
    assert not unknown_fields(parsed), unknown_fields(parsed)
    assert parsed.model_dump(mode="json") == doc, f"{model.__name__} does not read back the same"


class Contract:
    """Calls the API and checks each answer against its model, keeping which routes it called."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.called: set[tuple[str, str]] = set()

    def call(
        self, method: str, route: str, model: type[BaseModel] | None, status: int = 200, **request: Any
    ) -> dict[str, Any]:
        params = request.pop("path", {})
        response = self.client.request(method, route.format(**params), **request)
        self.called.add((method, route))
        assert response.status_code == status, response.text
        if model is None:
            assert response.content == b""
            return {}
        doc: dict[str, Any] = response.json()
        assert_wire(model, doc)
        return doc


def _ladder_routes(api: Contract, folder: Path) -> None:
    """The ladder routes, with a quick Hex match (a random player against a small MCTS; both named by
    the user: the built-in players' own names are the anchors', reserved to operators)."""
    from palaestra.ladder.match import MatchRules, play_match, read_match
    from palaestra.ladder.players import parse_player
    from palaestra.scoreboard.protocol import ladder as lp

    play_match(MatchRules("Hex9x9-v0", "Hex", 9), parse_player("small=mcts:5"), parse_player("rnd=random"), 2, folder / "m")
    document = read_match(folder / "m")
    games = {g["file"]: (folder / "m" / g["file"]).read_text() for g in document["games"]}
    match = api.call("POST", "/v1/ladder_matches", lp.MatchObject, 201, json={"match": document, "games": games})
    api.call("GET", "/v1/ladder_matches/{match_id}", lp.MatchObject, path={"match_id": match["id"]})
    game = match["games"][0]
    api.call("GET", "/v1/ladder_games/{game_id}", lp.GameObject, path={"game_id": game["id"]})
    record = api.client.get(f"/v1/ladder_games/{game['id']}/record")
    assert record.status_code == 200 and json.loads(record.content)["moves"] == game["moves"]
    api.called.add(("GET", "/v1/ladder_games/{game_id}/record"))
    api.call("GET", "/v1/ladders", protocol.ListPage[lp.LadderObject])
    ladder = {"ladder": match["ladder"]}
    api.call("GET", "/v1/ladders/{ladder}/ratings", lp.RatingsObject, path=ladder)
    api.call("GET", "/v1/ladders/{ladder}/players/{name}", lp.PlayerObject, path={**ladder, "name": "rnd"})


def _agent_routes(api: Contract, folder: Path) -> None:
    """An agent queued for the board's evaluation, and its job (not run here: queued is its state)."""
    from palaestra.scoreboard.protocol.agents import AgentJobObject
    from tests.scoreboard.server.agents.agent_helpers import write_cartpole_agent

    model = write_cartpole_agent(folder / "agent")
    files = {"model": ("m.onnx", model.read_bytes()), "descriptor": ("m.json", model.with_suffix(".json").read_bytes())}
    job = api.call("POST", "/v1/agents", AgentJobObject, 202, files=files, data={"episodes": "2"})
    api.call("GET", "/v1/agents/{job_id}", AgentJobObject, path={"job_id": job["id"]})


def test_every_v1_route_answers_with_its_protocol_model(scoreboard_server: ScoreboardServer, tmp_path: Path) -> None:
    routes = httpx.get(f"{scoreboard_server.url}/openapi.json").json()["paths"]
    operations = {(m.upper(), p) for p, ops in routes.items() if p.startswith("/v1") for m in ops}
    with scoreboard_server.client() as c:
        api = Contract(c)
        api.call("GET", "/v1/health", protocol.HealthObject)

        batch = api.call("POST", "/v1/files", protocol.FileObject, 201, json={"purpose": "episode_batch"})
        api.call("GET", "/v1/files/{file_id}", protocol.FileObject, path={"file_id": batch["id"]})
        api.call("GET", "/v1/files", protocol.ListPage[protocol.FileObject], params={"limit": 2})
        form = {"data": batch["post_fields"], "files": {"file": ("f", json.dumps(make_batch(5)).encode())}}
        api.call("POST", "/v1/uploads/{file_id}", None, 204, path={"file_id": batch["id"]}, **form)
        video = create_file(c, "video")
        assert post_upload(video, video_archive(2)).status_code == 204

        name = f"contract-{uuid.uuid4().hex[:6]}"
        alg = api.call("POST", "/v1/algorithms", protocol.AlgorithmObject, 201, json={"name": name})
        api.call("GET", "/v1/algorithms/{algorithm_id}", protocol.AlgorithmObject, path={"algorithm_id": alg["id"]})
        api.call("GET", "/v1/algorithms", protocol.ListPage[protocol.AlgorithmObject], params={"limit": 2})

        run = api.call(
            "POST", "/v1/benchmark_runs", protocol.BenchmarkRunObject, 201,
            json={"benchmark_id": "ClassicControl2-v1", "algorithm_id": name, "tags": '{"lr": 1}'},
        )  # fmt: skip
        ev = api.call(
            "POST", "/v1/evaluations", protocol.EvaluationCreated, 201,
            json={"env": "CartPole-v0", "training_episode_batch": batch["id"], "training_video": video["id"],
                  "benchmark_run_id": run["id"], "writeup": "https://example.org", "gym_version": "0.9.4"},
        )  # fmt: skip
        assert ev["videos"] and ev["algorithm"]["id"] == alg["id"] and ev["score"]["number_episodes"] == 5
        # a stand-alone evaluation, and the same episodes again: a repeat (200), or with another writeup a 409
        episodes = json.dumps(make_batch(3)).encode()
        alone = {"env": "CartPole-v1", "writeup": "https://example.org/alone"}
        made = []
        for status in (201, 200):
            again = create_file(c, "episode_batch")
            assert post_upload(again, episodes).status_code == 204
            answer = api.call("POST", "/v1/evaluations", protocol.EvaluationCreated, status,
                              json={**alone, "training_episode_batch": again["id"]})  # fmt: skip
            made.append((answer["id"], answer["already_uploaded"]))
        assert made == [(made[0][0], False), (made[0][0], True)]
        again = create_file(c, "episode_batch")
        assert post_upload(again, episodes).status_code == 204
        refused = {**alone, "writeup": "https://example.org/other", "training_episode_batch": again["id"]}
        api.call("POST", "/v1/evaluations", protocol.ErrorBody, 409, json=refused)
        api.call("GET", "/v1/evaluations/{evaluation_id}", protocol.EvaluationObject, path={"evaluation_id": ev["id"]})
        api.call("GET", "/v1/evaluations", protocol.ListPage[protocol.EvaluationObject], params={"limit": 3})
        run_path = {"run_id": run["id"]}
        api.call("GET", "/v1/benchmark_runs/{run_id}", protocol.BenchmarkRunObject, path=run_path)
        api.call("POST", "/v1/benchmark_runs/{run_id}", protocol.BenchmarkRunObject, path=run_path, json={"tags": {}})
        done = api.call("POST", "/v1/benchmark_runs/{run_id}/commit", protocol.BenchmarkRunObject, path=run_path)
        assert done["status"] == "committed" and done["evaluations"] == [ev["id"]]
        api.call("GET", "/v1/benchmark_runs", protocol.ListPage[protocol.BenchmarkRunObject], params={"limit": 2})

        live_models = live_protocol.LiveEvaluationObject
        live = api.call("POST", "/v1/live_evaluations", live_models, 201, json={"env": "CartPole-v1"})
        chunk = {"source": "m.json", "start": 0, "timestamps": [1.0, 2.0], "episode_lengths": [3, 4],
                 "episode_rewards": [3.0, 4.0]}
        live_path = {"live_id": live["id"]}
        api.call("POST", "/v1/live_evaluations/{live_id}/chunks", live_protocol.LiveChunkAnswer, path=live_path, json=chunk)
        api.call("GET", "/v1/live_evaluations/{live_id}", live_models, path=live_path)
        sealed = api.call("POST", "/v1/live_evaluations/{live_id}/seal", live_models, path=live_path)
        assert sealed["status"] == "sealed" and sealed["evaluation_id"]

        _agent_routes(api, tmp_path)

        api.call("GET", "/v1/envs", protocol.ListPage[protocol.EnvObject])
        api.call("GET", "/v1/envs/{env_id}", protocol.EnvObject, path={"env_id": "CartPole-v0"})
        api.call("GET", "/v1/groups", protocol.ListPage[protocol.GroupObject])
        log = api.call("GET", "/v1/log", protocol.ListPage[protocol.LogEntryObject], params={"limit": 2})
        for table in ("csv", "parquet"):  # the results table is bytes: its rows are tests/.../test_exports.py's
            r = c.get(f"/v1/evaluations.{table}", params={"env": "CartPole-v1"})
            assert r.status_code == 200 and r.content, r.text
            api.called.add(("GET", f"/v1/evaluations.{table}"))
        blob = log["data"][0]["blobs"][0]  # the log's blob downloads are bytes, checked by their hash
        api.called.add(("GET", "/v1/log/{seq}/blobs/{index}"))
        assert hashlib.sha256(c.get(blob["url"]).content).hexdigest() == blob["sha256"]

        _ladder_routes(api, tmp_path)

        # errors, from the handlers (404, 409), validation (400) and authentication (401)
        api.call("GET", "/v1/evaluations/{evaluation_id}", protocol.ErrorBody, 404, path={"evaluation_id": "eval_no"})
        api.call("POST", "/v1/algorithms", protocol.ErrorBody, 409, json={"name": name})
        api.call("POST", "/v1/files", protocol.ErrorBody, 400, json={"purpose": "pictures"})
    with httpx.Client(base_url=scoreboard_server.url) as no_key:
        Contract(no_key).call("POST", "/v1/files", protocol.ErrorBody, 401, json={"purpose": "video"})

    assert operations - api.called == set(), "routes without a contract check"


def test_timestamps_keep_their_offset_on_the_wire(scoreboard_server: ScoreboardServer) -> None:
    """``...+00:00``, as the server always wrote them (``Z`` is refused by fromisoformat before 3.11)."""
    with scoreboard_server.client() as c:
        f = create_file(c, "episode_batch")
    assert f["created"].endswith("+00:00") and f["expires_at"].endswith("+00:00")


def test_openapi_is_served(scoreboard_server: ScoreboardServer) -> None:
    doc = httpx.get(f"{scoreboard_server.url}/openapi.json").json()
    for path in (
        "/v1/files",
        "/v1/evaluations",
        "/v1/benchmark_runs",
        "/v1/benchmark_runs/{run_id}/commit",
        "/v1/algorithms",
        "/v1/uploads/{file_id}",
    ):
        assert path in doc["paths"], path
    answers = doc["paths"]["/v1/envs"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert answers["$ref"].endswith("ListPage_EnvObject_")
    # bodies read after authentication (api.deps.json_body) are documented all the same
    for path, model in (
        ("/v1/files", "FileCreate"),
        ("/v1/evaluations", "EvaluationCreate"),
        ("/v1/benchmark_runs", "BenchmarkRunCreate"),
        ("/v1/benchmark_runs/{run_id}", "BenchmarkRunUpdate"),
        ("/v1/algorithms", "AlgorithmCreate"),
    ):
        body = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{model}"}
        assert model in doc["components"]["schemas"]
    assert "AlgorithmRef" in doc["components"]["schemas"]  # nested in EvaluationCreate
    # creating an evaluation answers EvaluationCreated: 201 made now, 200 a repeat (already_uploaded)
    created = doc["paths"]["/v1/evaluations"]["post"]["responses"]
    for status in ("201", "200"):
        assert created[status]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/EvaluationCreated"
        }
    assert "already_uploaded" in doc["components"]["schemas"]["EvaluationCreated"]["properties"]
