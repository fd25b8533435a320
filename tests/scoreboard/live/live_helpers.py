"""Real processes for the live-run tests: a training process (a single or vector Monitor on CartPole
that sleeps between steps, so it trains for a while) and a follower (``palaestra upload --follow``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.scoreboard.server_helpers import ScoreboardServer

TRAIN_SCRIPT = r"""
import sys, time
import gymnasium as gym
import palaestra

directory, episodes, pause, num_envs, resume = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
if num_envs:
    env = palaestra.Monitor(gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="sync"), directory,
                            video_callable=False, resume=resume)
    env.reset(seed=0)
    done = 0
    while done < episodes:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        done += int((term | trunc).sum())
        time.sleep(pause / 20)
else:
    env = palaestra.Monitor(gym.make("CartPole-v1"), directory, video_callable=False, resume=resume)
    for i in range(episodes):
        env.reset(seed=i)
        finished = False
        while not finished:
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            finished = term or trunc
        time.sleep(pause)
env.close()
"""


def start_training(
    directory: Path, episodes: int, pause: float, num_envs: int = 0, resume: bool = False
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            TRAIN_SCRIPT,
            str(directory),
            str(episodes),
            str(pause),
            str(num_envs),
            "1" if resume else "0",
        ]
    )


def start_follower(server: ScoreboardServer, directory: Path, interval: float = 0.3) -> subprocess.Popen[str]:
    env = {**server.env, "PALAESTRA_SERVER": server.url, "PALAESTRA_API_KEY": server.api_key}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "palaestra",
            "upload",
            "--follow",
            str(directory),
            "--interval",
            str(interval),
            "--json",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition: Callable[[], Any], timeout: float = 90.0, what: str = "a condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except (httpx.HTTPError, OSError, ValueError, KeyError):
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def live_id_of(directory: Path) -> str | None:
    from palaestra.scoreboard.client.follow import dump_state

    state = dump_state(os.fspath(directory))
    return None if state is None else str(state["id"])


def live_state(server: ScoreboardServer, live_id: str) -> dict[str, Any]:
    r = httpx.get(f"{server.url}/v1/live_evaluations/{live_id}", timeout=5)
    r.raise_for_status()
    return dict(r.json())


def cli(server: ScoreboardServer, *args: str, api_key: str | None = None) -> dict[str, Any]:
    """``palaestra ARGS --json`` as a user of ``server`` (its first user by default): the JSON it printed."""
    env = {**server.env, "PALAESTRA_SERVER": server.url, "PALAESTRA_API_KEY": api_key or server.api_key}
    result = subprocess.run(
        [sys.executable, "-m", "palaestra", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))
