"""``/v1/live_evaluations`` on a real server process: chunks, their sequence numbers, sealing, bad input."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload_evaluation

LIVE = "/v1/live_evaluations"


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _chunk(source: str, start: int, n: int, t0: float = 1000.0, reward: float = 1.0) -> dict[str, Any]:
    return {
        "source": source,
        "start": start,
        "initial_reset_timestamp": t0,
        "timestamps": [t0 + start + i + 1 for i in range(n)],
        "episode_lengths": [10 + i for i in range(n)],
        "episode_rewards": [reward * (start + i) for i in range(n)],
        "episode_types": ["t"] * n,
        "episode_truncated": [False] * n,
    }


def _create(server: ScoreboardServer, key: str | None = None) -> str:
    r = httpx.post(server.url + LIVE, json={"env": "CartPole-v1"}, headers=_headers(key or server.api_key))
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "in_progress"
    return str(r.json()["id"])


def _post_chunk(
    server: ScoreboardServer, live_id: str, chunk: dict[str, Any], key: str | None = None
) -> httpx.Response:
    return httpx.post(
        f"{server.url}{LIVE}/{live_id}/chunks", json=chunk, headers=_headers(key or server.api_key)
    )


def _state(server: ScoreboardServer, live_id: str) -> dict[str, Any]:
    r = httpx.get(f"{server.url}{LIVE}/{live_id}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_chunks_append_per_source_and_a_repeated_chunk_is_acknowledged_without_change(
    scoreboard_server: ScoreboardServer,
) -> None:
    live_id = _create(scoreboard_server)
    a = _post_chunk(scoreboard_server, live_id, _chunk("m.0.manifest.json", 0, 3))
    assert a.json() == {"object": "live_chunk", "source": "m.0.manifest.json", "applied": True, "position": 3}
    _post_chunk(scoreboard_server, live_id, _chunk("m.1.manifest.json", 0, 2))
    again = _post_chunk(scoreboard_server, live_id, _chunk("m.0.manifest.json", 0, 3))
    assert again.status_code == 200 and again.json()["applied"] is False and again.json()["position"] == 3
    state = _state(scoreboard_server, live_id)
    assert state["episodes"] == 5
    assert state["timesteps"] == 10 + 11 + 12 + 10 + 11
    assert state["sources"] == {"m.0.manifest.json": 3, "m.1.manifest.json": 2}
    assert state["last_episode_at"] is not None


def test_a_gap_or_an_overlap_is_refused_with_the_next_expected_sequence_and_stores_nothing(
    scoreboard_server: ScoreboardServer,
) -> None:
    live_id = _create(scoreboard_server)
    _post_chunk(scoreboard_server, live_id, _chunk("s", 0, 4))
    for start in (6, 2):  # a gap after 4; an overlap of episodes 2-3
        r = _post_chunk(scoreboard_server, live_id, _chunk("s", start, 3))
        assert r.status_code == 409
        problem = r.json()
        assert "expects the chunk starting at episode 4" in problem["detail"], problem
        assert problem["type"] == "start"
    assert _state(scoreboard_server, live_id)["episodes"] == 4


def test_another_users_key_an_oversized_chunk_and_a_malformed_one_are_refused(
    scoreboard_server: ScoreboardServer,
) -> None:
    live_id = _create(scoreboard_server)
    other = scoreboard_server.create_user("live-intruder")
    r = _post_chunk(scoreboard_server, live_id, _chunk("s", 0, 2), key=other)
    assert r.status_code == 403 and "belongs to another user" in r.json()["detail"]
    big = _post_chunk(scoreboard_server, live_id, _chunk("s", 0, 5001))
    assert big.status_code == 413, big.text
    assert "at most" in big.json()["detail"]
    bad = _chunk("s", 0, 2)
    bad["episode_rewards"] = [1.0]
    r = _post_chunk(scoreboard_server, live_id, bad)
    assert r.status_code == 400, r.text
    assert "episode_rewards has 1 entries" in r.text
    assert _state(scoreboard_server, live_id)["episodes"] == 0
    sealed = httpx.post(
        f"{scoreboard_server.url}{LIVE}/{live_id}/seal", headers=_headers(scoreboard_server.api_key)
    )
    assert sealed.status_code == 400 and "no episodes" in sealed.json()["detail"]


def test_seal_makes_an_evaluation_once_and_later_chunks_are_refused(
    scoreboard_server: ScoreboardServer,
) -> None:
    live_id = _create(scoreboard_server)
    _post_chunk(scoreboard_server, live_id, _chunk("s", 0, 120))
    url = f"{scoreboard_server.url}{LIVE}/{live_id}/seal"
    first = httpx.post(url, headers=_headers(scoreboard_server.api_key))
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["status"] == "sealed" and body["evaluation_id"].startswith("eval_")
    again = httpx.post(url, headers=_headers(scoreboard_server.api_key))
    assert again.json()["evaluation_id"] == body["evaluation_id"]
    evaluation = httpx.get(f"{scoreboard_server.url}/v1/evaluations/{body['evaluation_id']}").json()
    assert evaluation["score"]["number_episodes"] == 120
    late = _post_chunk(scoreboard_server, live_id, _chunk("s", 120, 1))
    assert late.status_code == 409 and "was sealed" in late.json()["detail"]
    assert _state(scoreboard_server, live_id)["episodes"] == 120


@pytest.mark.parametrize("missing", ["env"])
def test_creating_needs_the_env(scoreboard_server: ScoreboardServer, missing: str) -> None:
    r = httpx.post(scoreboard_server.url + LIVE, json={}, headers=_headers(scoreboard_server.api_key))
    assert r.status_code in (400, 422) and missing in r.text


@pytest.mark.postgres
def test_on_postgresql_chunks_are_idempotent_and_the_seal_is_the_upload_of_the_same_episodes(
    scoreboard_factory: Any, postgres_url: str
) -> None:
    server: ScoreboardServer = scoreboard_factory(database_url=postgres_url)
    live_id = _create(server)
    assert _post_chunk(server, live_id, _chunk("a", 0, 50)).json()["applied"] is True
    assert _post_chunk(server, live_id, _chunk("a", 0, 50)).json()["applied"] is False
    assert _post_chunk(server, live_id, _chunk("b", 3, 1)).status_code == 409
    assert _post_chunk(server, live_id, _chunk("b", 0, 60, t0=1000.5)).status_code == 200
    sealed = httpx.post(f"{server.url}{LIVE}/{live_id}/seal", headers=_headers(server.api_key)).json()
    evaluation = httpx.get(f"{server.url}/v1/evaluations/{sealed['evaluation_id']}").json()
    assert evaluation["score"]["number_episodes"] == 110
    batch = httpx.get(f"{server.url}/evaluations/{sealed['evaluation_id']}/episode_batch.json").json()
    assert batch["data_sources"].count(0) == 50 and batch["data_sources"].count(1) == 60
    assert batch["timestamps"] == sorted(batch["timestamps"])


def test_compare_draws_a_running_evaluation_labelled_as_in_progress(scoreboard_server: ScoreboardServer) -> None:
    running = _create(scoreboard_server)
    _post_chunk(scoreboard_server, running, _chunk("s", 0, 30))
    finished = _create(scoreboard_server)
    _post_chunk(scoreboard_server, finished, _chunk("s", 0, 20))
    evaluation_id = httpx.post(
        f"{scoreboard_server.url}{LIVE}/{finished}/seal", headers=_headers(scoreboard_server.api_key)
    ).json()["evaluation_id"]
    page = httpx.get(f"{scoreboard_server.url}/compare", params=[("e", running), ("e", evaluation_id)])
    assert page.status_code == 200
    chart = json.loads(page.text.split('id="compare-data">', 1)[1].split("</script>", 1)[0])
    labels = {line["id"]: line["label"] for line in chart["series"]}
    assert labels[running].endswith("(in progress)") and not labels[evaluation_id].endswith("(in progress)")
    assert len(next(line for line in chart["series"] if line["id"] == running)["reward"]) == 30
    assert f'href="/live/{running}"' in page.text


def test_the_algorithm_curve_across_runs_includes_its_runs_in_progress_when_asked_labelled(
    scoreboard_server: ScoreboardServer,
) -> None:
    server, name = scoreboard_server, f"live-alg-{uuid.uuid4().hex[:6]}"
    with server.client() as c:
        finished = upload_evaluation(c, "CartPole-v1", make_batch(150), algorithm={"id": name})
    algorithm_id = finished["algorithm"]["id"]
    r = httpx.post(
        server.url + LIVE, json={"env": "CartPole-v1", "algorithm": {"id": name}}, headers=_headers(server.api_key)
    )
    running = r.json()["id"]
    _post_chunk(server, running, _chunk("s", 0, 150))
    page = httpx.get(f"{server.url}/algorithms/{algorithm_id}", params={"env": "CartPole-v1"}).text
    assert "1 run of this algorithm on CartPole-v1 is in progress" in page  # offered, not pooled
    assert "over 1 run" in " ".join(page.split())
    pooled = httpx.get(f"{server.url}/algorithms/{algorithm_id}", params={"env": "CartPole-v1", "live": "1"}).text
    assert 'id="across-live">Including 1 run in progress' in pooled
    assert "over 2 runs" in " ".join(pooled.split())
