"""A live run's seal against real server processes: the sealed evaluation is, in everything, the one an
upload of the same directory makes (episodes, videos, provenance, conditions, score); a seal that
cannot be made leaves the run in progress and says why; a run longer than one upload may carry seals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx

import palaestra
from palaestra.scoreboard.client import ScoreboardClient
from palaestra.scoreboard.client.follow import Follower
from palaestra.scoreboard.server.evaluations.conditions import conditions_key
from tests.scoreboard.live.live_helpers import cli, live_state
from tests.scoreboard.server_helpers import ScoreboardServer

LIVE = "/v1/live_evaluations"


def _record(directory: Path, episodes: int, videos: int = 2) -> None:
    """A finished CartPole run with videos of its first episodes and the Monitor's provenance."""
    env = palaestra.Monitor(
        gym.make("CartPole-v1", render_mode="rgb_array"), directory, video_callable=lambda e: e < videos
    )
    for i in range(episodes):
        env.reset(seed=i)
        while not any(env.step(env.action_space.sample())[2:4]):
            pass
    env.close()


def _evaluation(server: ScoreboardServer, evaluation_id: str) -> dict[str, Any]:
    r = httpx.get(f"{server.url}/v1/evaluations/{evaluation_id}", timeout=10)
    r.raise_for_status()
    return dict(r.json())


def _batch(server: ScoreboardServer, evaluation_id: str) -> bytes:
    r = httpx.get(f"{server.url}/evaluations/{evaluation_id}/episode_batch.json", timeout=10)
    r.raise_for_status()
    return r.content


def _what_an_upload_carries(ev: dict[str, Any]) -> dict[str, Any]:
    return {
        "score": ev["score"],
        "provenance": ev["provenance"],
        "conditions": ev["conditions"],
        "videos": [(v["name"], v["content_type"], v["size"], v["episode_id"]) for v in ev["videos"]],
        "env": ev["env"],
        "gym_version": ev["gym_version"],
    }


def test_a_sealed_run_equals_the_upload_of_its_directory_in_episodes_videos_provenance_conditions_and_score(
    scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    server, run = scoreboard_server, tmp_path / "run"
    _record(run, episodes=15)
    with ScoreboardClient(server.url, server.api_key) as client:
        sealed = Follower(client, run, interval=0.1).follow()
    assert sealed is not None and sealed.status == "sealed" and sealed.evaluation_id
    with ScoreboardClient(server.url, server.create_user("plain-uploader")) as other:
        uploaded = other.upload(run)  # the same directory, uploaded plainly by someone else
    assert uploaded.id != sealed.evaluation_id

    ours, theirs = _evaluation(server, sealed.evaluation_id), _evaluation(server, uploaded.id)
    assert _what_an_upload_carries(ours) == _what_an_upload_carries(theirs)
    assert ours["provenance"] is not None and ours["conditions"]["recorded"] is True
    assert conditions_key(ours["conditions"]) == conditions_key(theirs["conditions"])  # one leaderboard row group
    assert len(ours["videos"]) == 2 and ours["training_video"] is not None
    assert _batch(server, sealed.evaluation_id) == _batch(server, uploaded.id)
    page = httpx.get(f"{server.url}/evaluations/{sealed.evaluation_id}", timeout=10).text
    assert "not recorded" not in page

    # the owner uploading the directory again gets the sealed evaluation, complete, and nothing new
    with ScoreboardClient(server.url, server.api_key) as client:
        again = client.upload(run)
    assert again.id == sealed.evaluation_id
    mine = httpx.get(f"{server.url}/v1/evaluations", params={"owner": "tester", "env": "CartPole-v1", "limit": 100})
    assert [e["id"] for e in mine.json()["data"]].count(sealed.evaluation_id) == 1


def test_a_run_longer_than_one_upload_may_carry_still_seals(scoreboard_factory: Any) -> None:
    server: ScoreboardServer = scoreboard_factory(env={"PALAESTRA_MAX_EPISODE_BATCH_BYTES": "20000"})
    headers = server.headers()
    live_id = httpx.post(server.url + LIVE, json={"env": "CartPole-v1"}, headers=headers).json()["id"]
    n = 1200  # about 60 KB as an episode batch: three times what this server takes in one upload
    chunk = {
        "source": "m.manifest.json",
        "start": 0,
        "initial_reset_timestamp": 1000.0,
        "timestamps": [1000.0 + i for i in range(1, n + 1)],
        "episode_lengths": [20] * n,
        "episode_rewards": [20.0] * n,
    }
    assert httpx.post(f"{server.url}{LIVE}/{live_id}/chunks", json=chunk, headers=headers).status_code == 200
    sealed = httpx.post(f"{server.url}{LIVE}/{live_id}/seal", headers=headers, timeout=60)
    assert sealed.status_code == 200, sealed.text
    assert sealed.json()["status"] == "sealed"
    assert _evaluation(server, sealed.json()["evaluation_id"])["score"]["number_episodes"] == n


def test_a_refused_seal_says_why_and_leaves_the_run_in_progress_taking_episodes(
    scoreboard_server: ScoreboardServer,
) -> None:
    server, headers = scoreboard_server, scoreboard_server.headers()
    live_id = httpx.post(server.url + LIVE, json={"env": "CartPole-v1"}, headers=headers).json()["id"]
    chunk = {"source": "s", "start": 0, "timestamps": [1.0, 2.0], "episode_lengths": [3, 4], "episode_rewards": [3.0, 4.0]}
    httpx.post(f"{server.url}{LIVE}/{live_id}/chunks", json=chunk, headers=headers).raise_for_status()
    refused = httpx.post(
        f"{server.url}{LIVE}/{live_id}/seal", json={"training_video": "file_doesnotexist"}, headers=headers
    )
    assert 400 <= refused.status_code < 500, refused.text
    detail = refused.json()["detail"]
    assert f"Live evaluation {live_id} was not sealed" in detail and "file_doesnotexist" in detail
    assert "in progress again" in detail
    assert live_state(server, live_id)["status"] == "in_progress"
    more = {**chunk, "start": 2, "timestamps": [5.0], "episode_lengths": [6], "episode_rewards": [6.0]}
    assert httpx.post(f"{server.url}{LIVE}/{live_id}/chunks", json=more, headers=headers).json()["applied"] is True
    sealed = httpx.post(f"{server.url}{LIVE}/{live_id}/seal", headers=headers).json()
    assert sealed["status"] == "sealed"
    assert _evaluation(server, sealed["evaluation_id"])["score"]["number_episodes"] == 3


def test_upload_seal_with_the_directory_carries_its_videos_and_provenance(
    scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    server, run = scoreboard_server, tmp_path / "abandoned"
    _record(run, episodes=6)
    with ScoreboardClient(server.url, server.api_key) as client:
        follower = Follower(client, run, interval=0.1)
        assert follower.poll_once() is True  # every episode sent; the follower died before its seal
    assert follower.live_id is not None
    evaluation_id = cli(server, "upload", "--seal", follower.live_id, str(run))["id"]
    sealed = _evaluation(server, evaluation_id)
    assert sealed["score"]["number_episodes"] == 6 and len(sealed["videos"]) == 2
    assert sealed["provenance"] is not None and sealed["conditions"]["recorded"] is True
