"""``palaestra upload --follow`` on real processes: training processes, the follower and the server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from palaestra.monitoring.results import load_results
from tests.scoreboard.live.live_helpers import (
    cli,
    live_id_of,
    live_state,
    start_follower,
    start_training,
    wait_for,
)
from tests.scoreboard.server_helpers import ScoreboardServer

pytestmark = pytest.mark.slow


def _finish(proc: subprocess.Popen[Any], timeout: float = 120) -> None:
    assert proc.wait(timeout=timeout) == 0


def _evaluation(server: ScoreboardServer, evaluation_id: str) -> dict[str, Any]:
    return dict(httpx.get(f"{server.url}/v1/evaluations/{evaluation_id}", timeout=10).json())


def _batch(server: ScoreboardServer, evaluation_id: str) -> bytes:
    r = httpx.get(f"{server.url}/evaluations/{evaluation_id}/episode_batch.json", timeout=10)
    r.raise_for_status()
    return r.content


def test_a_followed_run_survives_a_server_kill_and_its_seal_equals_the_upload_of_the_directory(
    fresh_scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    server, run = fresh_scoreboard_server, tmp_path / "run"
    first = start_training(run, episodes=60, pause=0.05)
    wait_for(lambda: list(run.glob("openaigym.manifest.*")), what="the first Monitor's manifest")
    second = start_training(run, episodes=40, pause=0.07, resume=True)  # two processes, one directory
    follower = start_follower(server, run)
    live_id = wait_for(lambda: live_id_of(run), what="the live evaluation")
    wait_for(lambda: live_state(server, live_id)["episodes"] >= 10, what="episodes on the server")
    server.kill()  # mid-run: the follower keeps retrying, the Monitors keep journalling
    time.sleep(1.0)
    server.start()
    _finish(first)
    _finish(second)
    out, err = follower.communicate(timeout=120)
    assert follower.returncode == 0, err
    sealed_id = json.loads(out.strip().splitlines()[-1])["id"]

    recorded = load_results(run)
    state = live_state(server, live_id)
    assert state["status"] == "sealed" and state["evaluation_id"] == sealed_id
    assert state["episodes"] == len(recorded["episode_lengths"]) == 100  # none lost, none twice
    assert len(state["sources"]) == 2

    # the same finished directory uploaded by someone else: the same stored batch, the same score
    uploaded_id = cli(server, "upload", str(run), api_key=server.create_user("uploader"))["id"]
    assert uploaded_id != sealed_id
    assert _batch(server, sealed_id) == _batch(server, uploaded_id)
    assert _evaluation(server, sealed_id)["score"] == _evaluation(server, uploaded_id)["score"]

    # the owner uploading it again after the seal maps to the sealed evaluation: nothing new
    assert cli(server, "upload", str(run))["id"] == sealed_id


def test_a_killed_training_process_leaves_an_abandoned_evaluation_with_every_journalled_episode(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    server: ScoreboardServer = scoreboard_factory(env={"PALAESTRA_LIVE_ABANDONED_AFTER_S": "2"})
    run = tmp_path / "run"
    training = start_training(run, episodes=100_000, pause=0.05, num_envs=2)  # a vector Monitor
    follower = start_follower(server, run)
    try:
        live_id = wait_for(lambda: live_id_of(run), what="the live evaluation")
        wait_for(lambda: live_state(server, live_id)["episodes"] >= 10, what="episodes on the server")
        training.send_signal(signal.SIGKILL)
        training.wait(timeout=30)
        journalled = len(load_results(run)["episode_lengths"])
        state = wait_for(
            lambda: (s := live_state(server, live_id))["status"] == "abandoned" and s,
            timeout=60,
            what="abandoned",
        )
        assert state["episodes"] == journalled
        assert sum(state["sources"].values()) == journalled
    finally:
        follower.terminate()
        follower.wait(timeout=30)
    evaluation_id = cli(server, "upload", "--seal", live_id)["id"]
    assert _evaluation(server, evaluation_id)["score"]["number_episodes"] == journalled
    assert live_state(server, live_id)["status"] == "sealed"


BACKGROUND_SCRIPT = r"""
import os, sys
import gymnasium as gym
import palaestra

directory = sys.argv[1]
envs = palaestra.Monitor(gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync"), directory,
                         video_callable=False, live=True)
envs.reset(seed=0)
done = 0
while done < 30:
    _, _, term, trunc, _ = envs.step(envs.action_space.sample())
    done += int((term | trunc).sum())
envs.close()
"""


def test_a_vector_monitor_with_live_true_is_sealed_when_it_closes_and_the_process_exits(
    scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    env = {**scoreboard_server.env, "PALAESTRA_SERVER": scoreboard_server.url,
           "PALAESTRA_API_KEY": scoreboard_server.api_key}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", BACKGROUND_SCRIPT, str(run)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    live_id = live_id_of(run)
    assert live_id is not None
    recorded = len(load_results(run)["episode_lengths"])
    state = live_state(scoreboard_server, live_id)
    assert state["status"] == "sealed" and state["episodes"] == recorded >= 30
    assert len(state["sources"]) == 1  # a vector run writes one manifest, whatever its sub-environments
    assert _evaluation(scoreboard_server, state["evaluation_id"])["score"]["number_episodes"] == recorded


def test_monitor_live_prints_the_live_pages_url_once_and_names_the_run_after_the_env_and_directory(
    scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    run = tmp_path / "cartpole-ppo"
    env = {**scoreboard_server.env, "PALAESTRA_SERVER": scoreboard_server.url,
           "PALAESTRA_API_KEY": scoreboard_server.api_key}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", BACKGROUND_SCRIPT, str(run)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    live_id = live_id_of(run)
    url = f"{scoreboard_server.url}/live/{live_id}"
    assert result.stderr.count(url) == 1, result.stderr
    assert f"Following {run} live at {url}" in result.stderr
    state = live_state(scoreboard_server, str(live_id))
    assert state["name"] == "CartPole-v1 · cartpole-ppo"


KILLED_SCRIPT = r"""
import sys, time
import gymnasium as gym
import palaestra

env = palaestra.Monitor(gym.make("CartPole-v1"), sys.argv[1], video_callable=False, live=True)
print(env.follower.pid, flush=True)
env.reset(seed=0)
while True:  # until killed, never closed
    _, _, terminated, truncated, _ = env.step(env.action_space.sample())
    if terminated or truncated:
        env.reset()
    time.sleep(0.002)
"""


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie nobody reaped yet has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def test_the_follower_of_a_live_monitor_stops_unsealed_when_its_training_process_is_killed(
    scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    env = {**scoreboard_server.env, "PALAESTRA_SERVER": scoreboard_server.url,
           "PALAESTRA_API_KEY": scoreboard_server.api_key}  # fmt: skip
    training = subprocess.Popen(
        [sys.executable, "-c", KILLED_SCRIPT, str(run)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert training.stdout is not None
        follower_pid = int(training.stdout.readline())
        live_id = wait_for(lambda: live_id_of(run), timeout=60, what="the live evaluation")
        wait_for(lambda: live_state(scoreboard_server, live_id)["episodes"] > 0, timeout=60, what="episodes")
    finally:
        training.send_signal(signal.SIGKILL)
        training.wait(timeout=30)
    wait_for(lambda: not _running(follower_pid), timeout=60, what="the follower's end")
    assert live_state(scoreboard_server, live_id)["status"] != "sealed"  # abandoned, for --seal to end
