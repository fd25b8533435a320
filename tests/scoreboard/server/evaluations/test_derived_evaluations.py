"""An evaluation is derived once, at ingest: its pages draw the curves stored with it (with its episode
batch gone from the store, only the batch's downloads fail, naming the file), a benchmark run's
aggregate comes from its evaluations' stored TaskScores, and its bootstrap runs after the response."""

from __future__ import annotations

import html
import json
import re
import threading
from typing import Any

import sqlalchemy as sa

from palaestra.benchmarks import registry
from palaestra.benchmarks.runs import run_statistics
from palaestra.scoreboard.server.evaluations.derive import curves_of
from palaestra.scoreboard.server.evaluations.ingest import read_validated_batch
from palaestra.scoreboard.server.tables.scores import BenchmarkRun, Evaluation
from tests.scoreboard.server.conftest import InProcessServer
from tests.scoreboard.server_helpers import make_batch, upload_evaluation

BENCHMARK = "ClassicControl2-v1"


def _json_block(page: str, element_id: str) -> Any:
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S)
    assert match, f"no #{element_id} on the page"
    return json.loads(html.unescape(match[1]))


def _expected_curves(batch: dict[str, Any], env_id: str, trials: int, threshold: float | None) -> Any:
    document = read_validated_batch(json.dumps(batch).encode()).enriched(env_id)
    return json.loads(json.dumps(curves_of(document, trials, threshold), sort_keys=True))


def _batch_key(server: InProcessServer, evaluation_id: str) -> str:
    with server.state.db.read() as session:
        key = session.scalar(sa.select(Evaluation.episode_batch_key).where(Evaluation.id == evaluation_id))
    assert key
    return key


def test_the_pages_draw_an_evaluations_curves_with_its_episode_batch_gone(
    in_process_server: InProcessServer,
) -> None:
    batches = [make_batch(150, reward=float(10 * i)) for i in range(2)]
    with in_process_server.client() as c:
        ids = [
            upload_evaluation(c, "CartPole-v1", batch, algorithm={"id": "derived-alg"})["id"] for batch in batches
        ]
        algorithm_id = c.get(f"/v1/evaluations/{ids[0]}").json()["algorithm"]["id"]
    keys = [_batch_key(in_process_server, i) for i in ids]
    for key in keys:
        in_process_server.state.store.delete(key)
    expected = [_expected_curves(batch, "CartPole-v1", 100, 475.0) for batch in batches]

    with in_process_server.client() as c:
        for evaluation_id, curves in zip(ids, expected, strict=True):
            page = c.get(f"/evaluations/{evaluation_id}")
            assert page.status_code == 200
            assert _json_block(page.text, "curves-data") == curves
        env_page = c.get("/envs/CartPole-v1")
        assert env_page.status_code == 200 and all(i in env_page.text for i in ids)
        compared = _json_block(c.get("/compare", params={"e": ids}).text, "compare-data")
        assert [line["id"] for line in compared["series"]] == ids
        assert [line["reward"] for line in compared["series"]] == [curves["reward"] for curves in expected]
        algorithm_page = c.get(f"/algorithms/{algorithm_id}", params={"env": "CartPole-v1"}).text
        across = _json_block(algorithm_page, "across-data")
        assert across["runs"] == 2 and across["x"][-1] == 149, "both runs pooled over their 150 episodes"

        for download in ("episode_batch.json", "episodes.csv"):
            r = c.get(f"/evaluations/{ids[0]}/{download}")
            assert r.status_code == 404, r.text
            assert keys[0] in r.text and "is missing from this server's store" in html.unescape(r.text)
            assert "Traceback" not in r.text
        assert c.get(f"/v1/evaluations/{ids[0]}").status_code == 200


def test_an_evaluation_whose_curves_were_never_derived_says_they_are_not_available(
    in_process_server: InProcessServer,
) -> None:
    with in_process_server.client() as c:
        evaluation_id = upload_evaluation(c, "CartPole-v1", make_batch(20))["id"]
    with in_process_server.state.db.write() as session:  # what 0009 leaves for a batch already missing
        session.execute(sa.update(Evaluation).where(Evaluation.id == evaluation_id).values(curves=None))
    with in_process_server.client() as c:
        page = c.get(f"/evaluations/{evaluation_id}")
        compare = c.get("/compare", params={"e": [evaluation_id]})
    assert page.status_code == 200 and 'id="curves-missing"' in page.text
    assert "learning curves of this evaluation are not available" in page.text
    assert compare.status_code == 200 and 'id="no-curves"' in compare.text


def _run_upload(c: Any, run_id: str, env_id: str, reward: float) -> str:
    return str(upload_evaluation(c, env_id, make_batch(120, reward=reward), benchmark_run_id=run_id)["id"])


def test_a_runs_score_comes_from_stored_task_scores_and_its_bootstrap_follows_the_response(
    in_process_server: InProcessServer,
) -> None:
    state = in_process_server.state
    gate = threading.Event()  # holds the background queue, so that the bootstrap is seen before it ran
    state.jobs.submit("gate", gate.wait)
    try:
        with in_process_server.client() as c:
            run_id = c.post("/v1/benchmark_runs", json={"benchmark_id": BENCHMARK}).json()["id"]
            first = [_run_upload(c, run_id, "CartPole-v0", 50.0 * (1 + i)) for i in range(2)]
            # the earlier evaluations' batches are gone: the next upload's aggregate never reads them
            for evaluation_id in first:
                state.store.delete(_batch_key(in_process_server, evaluation_id))
            _run_upload(c, run_id, "Pendulum-v1", -300.0)
            page = c.get(f"/benchmark_runs/{run_id}")
            run = c.get(f"/v1/benchmark_runs/{run_id}").json()
    finally:
        gate.set()
    by_task = {t["key"]: t for t in run["score"]["tasks"]}
    assert by_task["CartPole-v0"]["trials_submitted"] == 2 and by_task["Pendulum-v1"]["trials_submitted"] == 1
    assert run["score"]["statistics"]["computing"] is True and "iqm" not in run["score"]["statistics"]
    assert page.status_code == 200 and 'id="run-intervals-computing"' in page.text

    state.jobs.submit(f"bootstrap:{run_id}", lambda: None).result(timeout=120)  # the queued bootstrap, done
    with state.db.read() as session:
        stored = session.scalar(sa.select(BenchmarkRun.score).where(BenchmarkRun.id == run_id))
        kept = session.scalar(sa.select(BenchmarkRun.statistics).where(BenchmarkRun.id == run_id))
    assert kept is not None and kept["iqm"] == run_statistics(registry.benchmarks[BENCHMARK], stored)["iqm"]
    with in_process_server.client() as c:
        statistics = c.get(f"/v1/benchmark_runs/{run_id}").json()["score"]["statistics"]
    assert "computing" not in statistics and statistics["iqm"]["value"] == kept["iqm"]["value"]
    page = _get_text(in_process_server, f"/benchmark_runs/{run_id}")
    assert 'id="run-intervals-computing"' not in page
    assert re.search(r"<dt>IQM \[95% CI\]</dt><dd>\d\.\d{3} <span class=\"err", page), page[page.find("IQM"):][:300]


def _get_text(server: InProcessServer, path: str) -> str:
    with server.client() as c:
        r = c.get(path)
    assert r.status_code == 200, r.text
    return r.text
