"""What guards ``/v1/live_evaluations`` on a real server process: a replayed sequence number with other
data, the rate limits of creating runs and sending chunks, the body cap of the protocol's largest chunk."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from palaestra.scoreboard.protocol.common import MAX_EPISODE_LENGTH
from palaestra.scoreboard.protocol.live import MAX_CHUNK_EPISODES
from tests.scoreboard.server_helpers import ScoreboardServer

LIVE = "/v1/live_evaluations"


def _create(server: ScoreboardServer) -> str:
    r = httpx.post(server.url + LIVE, json={"env": "CartPole-v1"}, headers=server.headers())
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def _chunk(source: str, start: int, n: int, reward: float = 1.0) -> dict[str, Any]:
    return {
        "source": source,
        "start": start,
        "initial_reset_timestamp": 1000.0,
        "timestamps": [1000.0 + start + i + 1 for i in range(n)],
        "episode_lengths": [10 + start + i for i in range(n)],
        "episode_rewards": [reward * (start + i) for i in range(n)],
        "episode_types": ["t"] * n,
        "episode_truncated": [False] * n,
    }


def _post(server: ScoreboardServer, live_id: str, chunk: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.url}{LIVE}/{live_id}/chunks", json=chunk, headers=server.headers(), timeout=30)


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_replayed_sequence_number_with_other_episodes_is_refused_naming_the_source_and_sequence_number(
    scoreboard_factory: Any, database: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("postgres_url") if database == "postgresql" else None
    scoreboard_server: ScoreboardServer = scoreboard_factory(database_url=url)
    live_id = _create(scoreboard_server)
    assert _post(scoreboard_server, live_id, _chunk("m.0.manifest.json", 0, 5)).json()["applied"] is True
    same = _post(scoreboard_server, live_id, _chunk("m.0.manifest.json", 0, 5))
    assert same.status_code == 200 and same.json()["applied"] is False  # a retry stays idempotent
    part = _post(scoreboard_server, live_id, _chunk("m.0.manifest.json", 2, 3))
    assert part.status_code == 200 and part.json()["applied"] is False  # a part of what is stored, as stored

    other = _chunk("m.0.manifest.json", 0, 5)
    other["episode_rewards"][3] = 99.5
    refused = _post(scoreboard_server, live_id, other)
    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert "'m.0.manifest.json'" in problem["detail"] and "sequence number 0" in problem["detail"]
    assert "from episode 3 on" in problem["detail"] and problem["type"] == "source"
    state = httpx.get(f"{scoreboard_server.url}{LIVE}/{live_id}").json()
    assert state["episodes"] == 5 and state["sources"] == {"m.0.manifest.json": 5}
    page = httpx.get(f"{scoreboard_server.url}/live/{live_id}.json").json()
    assert page["score"]["number_episodes"] == 5 and 99.5 not in page["curves"]["reward"]


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_creating_live_runs_and_sending_chunks_are_rate_limited_per_user(
    scoreboard_factory: Any, database: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("postgres_url") if database == "postgresql" else None
    server: ScoreboardServer = scoreboard_factory(
        database_url=url,
        env={"PALAESTRA_RATE_LIMIT_LIVE_RUNS_PER_HOUR": "2", "PALAESTRA_RATE_LIMIT_LIVE_CHUNKS_PER_MINUTE": "3"},
    )
    first = _create(server)
    _create(server)
    third = httpx.post(server.url + LIVE, json={"env": "CartPole-v1"}, headers=server.headers())
    assert third.status_code == 429, third.text
    assert int(third.headers["Retry-After"]) >= 1
    assert "2 new live runs per user and hour" in third.json()["detail"]
    assert "PALAESTRA_RATE_LIMIT_LIVE_RUNS_PER_HOUR" in third.json()["detail"]

    for start in (0, 2, 4):
        assert _post(server, first, _chunk("s", start, 2)).status_code == 200
    fourth = _post(server, first, _chunk("s", 6, 2))
    assert fourth.status_code == 429, fourth.text
    assert "3 chunks per user and minute" in fourth.json()["detail"] and int(fourth.headers["Retry-After"]) >= 1
    assert httpx.get(f"{server.url}{LIVE}/{first}").json()["episodes"] == 6  # the refused chunk stored nothing
    other = server.create_user("another-follower")  # another user's limits are its own
    assert httpx.post(server.url + LIVE, json={"env": "CartPole-v1"}, headers=server.headers(other)).status_code == 201


def test_a_chunk_of_the_protocols_most_episodes_in_their_longest_spelling_is_accepted(
    scoreboard_server: ScoreboardServer,
) -> None:
    live_id = _create(scoreboard_server)
    n = MAX_CHUNK_EPISODES
    chunk = {
        "source": "m" * 280 + ".manifest.json",
        "start": 0,
        "initial_reset_timestamp": -1.2345678901234567e-300,
        "timestamps": [-1.2345678901234567e-300 + i * 1e-310 for i in range(n)],
        "episode_lengths": [MAX_EPISODE_LENGTH] * n,
        "episode_rewards": [-1.2345678901234567e-300] * n,
        "episode_types": ["e"] * n,
        "episode_truncated": [False] * n,
    }
    r = _post(scoreboard_server, live_id, chunk)
    assert len(r.request.content) > 256 * 1024  # past the cap of the other JSON routes
    assert r.status_code == 200, r.text[:500]
    assert r.json()["position"] == n
    too_many = _post(scoreboard_server, live_id, _chunk("s", 0, n + 1))
    assert too_many.status_code == 413 and f"at most {n}" in too_many.json()["detail"]


def test_the_followers_chunks_and_the_protocols_largest_fit_the_body_cap_however_their_numbers_are_spelt() -> None:
    from palaestra.scoreboard.client.follow import CHUNK_EPISODES
    from palaestra.scoreboard.protocol.live import MAX_CHUNK_BODY_BYTES, LiveChunk

    longest = -1.2345678901234567e-300
    for n in (CHUNK_EPISODES, MAX_CHUNK_EPISODES):
        chunk = LiveChunk(
            source="m" * 300, start=2**62, initial_reset_timestamp=longest, timestamps=[longest] * n,
            episode_lengths=[MAX_EPISODE_LENGTH] * n, episode_rewards=[longest] * n, episode_types=["e"] * n,
            episode_truncated=[False] * n,
        )  # fmt: skip
        body = json.dumps(chunk.model_dump(mode="json", exclude_none=True)).encode()  # as the client sends it
        assert len(body) <= MAX_CHUNK_BODY_BYTES, (n, len(body))
    assert CHUNK_EPISODES * 5 <= MAX_CHUNK_EPISODES
