"""A live run's page, its JSON and compare on a real server process: read from the derivation kept at
ingest, which equals what the seal scores; JSON without a bare NaN or Infinity; the page's chart and
its wording."""

from __future__ import annotations

import json
from typing import Any

import httpx
import numpy as np
import pytest

from tests.scoreboard.server_helpers import ScoreboardServer

LIVE = "/v1/live_evaluations"


def _strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"a bare {name} in the JSON")

    return json.loads(text, parse_constant=refuse)


def _create(server: ScoreboardServer, **body: Any) -> str:
    r = httpx.post(server.url + LIVE, json={"env": "CartPole-v1", **body}, headers=server.headers())
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def _post(server: ScoreboardServer, live_id: str, source: str, start: int, t: np.ndarray, r: np.ndarray,
          lengths: np.ndarray, types: list[str] | None = None) -> None:  # fmt: skip
    chunk = {
        "source": source,
        "start": start,
        "initial_reset_timestamp": 999.0,
        "timestamps": t.tolist(),
        "episode_rewards": r.tolist(),
        "episode_lengths": lengths.tolist(),
        "episode_types": types,
    }
    answer = httpx.post(f"{server.url}{LIVE}/{live_id}/chunks", json=chunk, headers=server.headers(), timeout=30)
    assert answer.status_code == 200, answer.text


def _interleaved_run_shows_what_its_seal_scores(server: ScoreboardServer) -> None:
    rng = np.random.default_rng(7)
    live_id = _create(server)
    n = 3000  # each of two sources: more than the derivation keeps unfolded
    times = {s: np.sort(rng.uniform(1000, 5000, n)) for s in ("a", "b")}
    rewards = {s: np.round(rng.normal(300, 150, n), 3) for s in ("a", "b")}
    lengths = {s: rng.integers(10, 500, n) for s in ("a", "b")}
    types = {s: ["e" if x < 0.05 else "t" for x in rng.random(n)] for s in ("a", "b")}
    # source a runs ahead in chunks of 700; b lags, 100 at a time, so its first chunks land among a's
    # newest episodes and the later ones (its last, 2,500 episodes, after a finished) before what was
    # folded already: the run is then derived again from its chunks
    b = 0
    for start in range(0, n, 700):
        end = min(n, start + 700)
        _post(server, live_id, "a", start, times["a"][start:end], rewards["a"][start:end], lengths["a"][start:end],
              types["a"][start:end])  # fmt: skip
        _post(server, live_id, "b", b, times["b"][b : b + 100], rewards["b"][b : b + 100], lengths["b"][b : b + 100],
              types["b"][b : b + 100])  # fmt: skip
        b += 100
    _post(server, live_id, "b", b, times["b"][b:], rewards["b"][b:], lengths["b"][b:], types["b"][b:])
    progress = _strict_json(httpx.get(f"{server.url}/live/{live_id}.json").text)
    sealed = httpx.post(f"{server.url}{LIVE}/{live_id}/seal", headers=server.headers(), timeout=60).json()
    score = httpx.get(f"{server.url}/v1/evaluations/{sealed['evaluation_id']}").json()["score"]
    shown = progress["score"]
    for key, value in score.items():
        if isinstance(value, float):
            assert abs(shown[key] - value) <= 1e-9 * max(1.0, abs(value)), key
        else:
            assert shown[key] == value, key
    assert score["number_episodes"] == progress["curves"]["episodes"] > 5000
    assert len(progress["curves"]["reward"]) <= 2000


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_the_live_json_shows_the_score_the_seal_makes_for_interleaved_sources_late_chunks_included(
    scoreboard_factory: Any, database: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("postgres_url") if database == "postgresql" else None
    _interleaved_run_shows_what_its_seal_scores(scoreboard_factory(database_url=url))


def test_the_live_json_never_holds_a_bare_infinity_and_the_page_says_how_many_episodes_the_mean_is_of(
    scoreboard_server: ScoreboardServer,
) -> None:
    server = scoreboard_server
    live_id = _create(server)
    huge = np.full(24, 1.7e308)
    _post(server, live_id, "s", 0, np.arange(1000.0, 1024.0), huge, np.full(24, 5))  # their sum is no float
    text = httpx.get(f"{server.url}/live/{live_id}.json").text
    progress = _strict_json(text)
    assert progress["recent_mean"] is None and progress["recent_label"] == "Mean of the 24 episodes so far"
    page = httpx.get(f"{server.url}/live/{live_id}").text
    assert "Mean of the 24 episodes so far" in page and "Mean of the last 100 episodes" not in page
    _strict_json(httpx.get(f"{server.url}{LIVE}/{live_id}").text)


def test_the_live_page_draws_the_evaluation_pages_charts_with_their_axes_and_threshold(
    scoreboard_server: ScoreboardServer,
) -> None:
    server = scoreboard_server
    live_id = _create(server)
    _post(server, live_id, "s", 0, np.arange(1000.0, 1150.0), np.full(150, 20.0), np.full(150, 20))
    page = httpx.get(f"{server.url}/live/{live_id}").text
    assert 'id="chart-reward" data-y="reward"' in page and 'id="chart-length" data-y="length"' in page
    assert "charts.js" in page and "common.js" in page  # the evaluation page's chart code, axes and all
    assert "Dashed: the reward threshold 475" in page
    curves = _strict_json(page.split('id="curves-data">', 1)[1].split("</script>", 1)[0])
    assert curves["threshold"] == 475.0 and curves["trials"] == 100
    assert curves["episode"][:3] == [0.0, 1.0, 2.0] and len(curves["reward_mean"]) == 150
    assert "Mean of the last 100 episodes" in page


def test_a_named_run_shows_its_name_in_the_lists_and_its_algorithm_on_compare(
    scoreboard_server: ScoreboardServer,
) -> None:
    from tests.scoreboard.server_helpers import make_batch, upload_evaluation

    server = scoreboard_server
    with server.client() as c:
        finished = upload_evaluation(c, "Acrobot-v1", make_batch(20), algorithm={"id": "named-live-alg"})
    live_id = _create(server, env="Acrobot-v1", algorithm={"id": "named-live-alg"}, name="Acrobot-v1 · named-live-alg")
    _post(server, live_id, "s", 0, np.arange(1000.0, 1030.0), np.full(30, -100.0), np.full(30, 100))
    env_page = httpx.get(f"{server.url}/envs/Acrobot-v1").text
    assert f'<a href="/live/{live_id}">Acrobot-v1 · named-live-alg</a>' in env_page
    compare = httpx.get(f"{server.url}/compare", params=[("e", live_id), ("e", finished["id"])]).text
    chart = json.loads(compare.split('id="compare-data">', 1)[1].split("</script>", 1)[0])
    label = next(line["label"] for line in chart["series"] if line["id"] == live_id)
    assert label.startswith("named-live-alg · tester") and label.endswith("(in progress)")
