"""/v1/benchmark_runs and /v1/algorithms: tags as the 2017 client sends them, commit, algorithms by name."""

from __future__ import annotations

import json
import uuid

import httpx

from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    error_of,
    make_batch,
    post_upload,
    upload_evaluation,
)


def test_benchmark_runs_tags_commit_and_algorithms(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        r = c.post(
            "/v1/benchmark_runs",
            json={
                "benchmark_id": "Anything-v0",
                "algorithm_id": "bench-alg",
                "tags": json.dumps({"lr": 0.1}),
            },
        )
        assert r.status_code == 201, r.text
        run = r.json()
        assert (
            run["object"] == "benchmark_run" and run["id"].startswith("brun_") and run["tags"] == {"lr": 0.1}
        )
        assert run["web_url"] == f"{scoreboard_server.url}/benchmark_runs/{run['id']}"
        ev = upload_evaluation(c, "CartPole-v1", make_batch(3), benchmark_run_id=run["id"])
        assert ev["benchmark_run_id"] == run["id"]
        assert c.post(f"/v1/benchmark_runs/{run['id']}", json={"tags": {"lr": 0.2}}).json()["tags"] == {
            "lr": 0.2
        }
        committed = c.post(f"/v1/benchmark_runs/{run['id']}/commit").json()
        assert committed["status"] == "committed" and committed["evaluations"] == [ev["id"]]
        assert c.post(f"/v1/benchmark_runs/{run['id']}/commit").json()["status"] == "committed"
        late = create_file(c, "episode_batch")
        assert post_upload(late, json.dumps(make_batch(2)).encode()).status_code == 204
        r = c.post(
            "/v1/evaluations",
            json={"env": "CartPole-v1", "training_episode_batch": late["id"], "benchmark_run_id": run["id"]},
        )
        assert error_of(r, 409)["type"] == "benchmark_run_id"
        listed = c.get("/v1/benchmark_runs", params={"benchmark_id": "Anything-v0"}).json()
        assert run["id"] in [x["id"] for x in listed["data"]]
        name = f"alg-{uuid.uuid4().hex[:6]}"
        alg = c.post("/v1/algorithms", json={"name": name, "description": "d"})
        assert alg.status_code == 201 and alg.json()["object"] == "algorithm"
        assert c.get(f"/v1/algorithms/{alg.json()['id']}").json()["name"] == name
        assert error_of(c.post("/v1/algorithms", json={"name": name}), 409)["type"] == "name"



def test_an_evaluation_of_a_run_shows_the_runs_algorithm_in_the_api_and_on_its_page(
    scoreboard_server: ScoreboardServer,
) -> None:
    """The 2017 client names the algorithm on the run only; /v1 and the page say the same."""
    name = f"run-alg-{uuid.uuid4().hex[:6]}"
    with scoreboard_server.client() as c:
        run = c.post("/v1/benchmark_runs", json={"benchmark_id": "Anything-v0", "algorithm_id": name}).json()
        algorithm = run["algorithm"]
        ev = upload_evaluation(c, "CartPole-v1", make_batch(3), benchmark_run_id=run["id"], algorithm={})
        assert ev["algorithm"] == algorithm and algorithm["name"] == name
        assert c.get(f"/v1/evaluations/{ev['id']}").json()["algorithm"] == algorithm
        listed = c.get("/v1/evaluations", params={"algorithm": algorithm["id"]}).json()["data"]
        assert [e["id"] for e in listed] == [ev["id"]]
    page = httpx.get(f"{scoreboard_server.url}/evaluations/{ev['id']}").text
    assert f'<a href="/algorithms/{algorithm["id"]}">{name}</a>' in page


def test_an_evaluation_belongs_to_its_own_algorithm_even_in_another_algorithms_run(
    scoreboard_server: ScoreboardServer,
) -> None:
    """One rule for every reader: the /v1 filter, the algorithm page and the algorithms index agree."""
    tag = uuid.uuid4().hex[:6]
    run_name, own_name = f"run-{tag}", f"own-{tag}"
    with scoreboard_server.client() as c:
        run = c.post("/v1/benchmark_runs", json={"benchmark_id": "Anything-v0", "algorithm_id": run_name}).json()
        run_algorithm = run["algorithm"]
        own = c.post("/v1/algorithms", json={"name": own_name}).json()
        ev = upload_evaluation(c, "CartPole-v1", make_batch(3), benchmark_run_id=run["id"], algorithm={"id": own["id"]})
        plain = upload_evaluation(c, "CartPole-v1", make_batch(3), benchmark_run_id=run["id"], algorithm={})
        assert ev["algorithm"]["id"] == own["id"] and plain["algorithm"]["id"] == run_algorithm["id"]

        def listed(algorithm_id: str) -> list[str]:
            rows = c.get("/v1/evaluations", params={"algorithm": algorithm_id}).json()["data"]
            return sorted(e["id"] for e in rows)

        assert listed(own["id"]) == [ev["id"]]
        assert listed(run_algorithm["id"]) == [plain["id"]]
    own_page = httpx.get(f"{scoreboard_server.url}/algorithms/{own['id']}").text
    run_page = httpx.get(f"{scoreboard_server.url}/algorithms/{run_algorithm['id']}").text
    assert f"/evaluations/{ev['id']}" in own_page and f"/evaluations/{plain['id']}" not in own_page
    assert f"/evaluations/{plain['id']}" in run_page and f"/evaluations/{ev['id']}" not in run_page
    index = httpx.get(f"{scoreboard_server.url}/algorithms", params={"sort": "recent"}).text
    for algorithm_id in (own["id"], run_algorithm["id"]):  # one evaluation each
        row = index[index.index(f'/algorithms/{algorithm_id}"') :].split("</tr>", 1)[0]
        assert ">1<" in row.replace(" ", ""), row
