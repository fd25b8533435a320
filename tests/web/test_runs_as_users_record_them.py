"""Runs recorded the way users record them, as ``palaestra results`` and the evaluation page show them.

- A run recorded by several worker processes into one directory (an ``AsyncVectorEnv`` of
  ``vector_env_fns``, as SB3's ``SubprocVecEnv`` would run it) has one video of episode 0 from each;
  every card on the evaluation page gets a title of its own.
- A run with training and evaluation episodes and an episode reset before its end: ``palaestra
  results`` gives the scoreboard's "Training timesteps", under that name, and all steps apart.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import pytest

import palaestra
from palaestra.monitoring import vector_env_fns
from palaestra.scoreboard.client import upload
from palaestra.scoreboard.server.evaluations.records import StoredVideo
from palaestra.scoreboard.server.web.views import video_titles
from tests.cli.cli_helpers import palaestra as palaestra_cli


def _frozenlake() -> gym.Env[Any, Any]:
    return gym.make("FrozenLake-v1", render_mode="ansi")


def _page(server: Any, evaluation_id: str) -> str:
    response = httpx.get(f"{server.url}/evaluations/{evaluation_id}", timeout=60)
    assert response.status_code == 200, response.text[:500]
    return response.text


def _captions(page: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", c)).split(" · openaigym")[0].strip()
            for c in re.findall(r"<figcaption>(.*?)</figcaption>", page, re.S)]


@pytest.mark.slow
def test_videos_of_a_run_recorded_by_several_processes_have_titles_of_their_own(tmp_path: Path, web_server: Any) -> None:
    directory = tmp_path / "workers"
    fns = vector_env_fns([_frozenlake] * 3, directory, video_callable=lambda episode_id: episode_id == 0)
    envs = gym.vector.AsyncVectorEnv(fns)
    envs.reset(seed=0)
    for _ in range(60):
        envs.step(envs.action_space.sample())
    envs.close()
    assert len(palaestra.load_results(directory)["videos"]) == 3

    page = _page(web_server, upload(directory, server=web_server.url, api_key=web_server.api_key))
    captions = _captions(page)
    assert len(captions) == 3 and len(set(captions)) == 3, captions
    for caption in captions:
        assert re.fullmatch(r"Episode 0 · uid \d+-[012], monitor \d+", caption), caption


def test_a_lone_video_of_an_episode_is_titled_by_the_episode_alone() -> None:
    def video(name: str, episode_id: int | None) -> StoredVideo:
        return StoredVideo(name, name + ".meta.json", episode_id, "video/mp4", 1, "k", "m")

    titles = video_titles([
        video("openaigym.video.0.4242.video000000.mp4", 0),
        video("openaigym.video.0.4242.video000001.mp4", 1),
        video("openaigym.video.0.777.video000001.mp4", 1),
        video("renamed.mp4", 1),
        video("old.mp4", None),
    ])
    assert titles == [
        "Episode 0", "Episode 1 · uid 4242, monitor 0", "Episode 1 · uid 777, monitor 0", "Episode 1 · renamed.mp4",
        "Episode ?",
    ]


@pytest.mark.slow
def test_palaestra_results_and_the_scoreboard_count_the_same_training_timesteps(tmp_path: Path, web_server: Any) -> None:
    directory = tmp_path / "mixed"
    env = palaestra.Monitor(gym.make("CartPole-v1"), directory, video_callable=False)
    env.action_space.seed(0)

    def episode(seed: int, cut_after: int | None = None) -> None:
        env.reset(seed=seed)
        steps = 0
        while not any(env.step(env.action_space.sample())[2:4]):
            steps += 1
            if steps == cut_after:
                return  # reset before the end: its steps count in all steps, not in an episode

    for seed in range(5):
        episode(seed)
    episode(5, cut_after=4)
    env.set_monitor_mode("evaluation")
    for seed in range(6, 9):
        episode(seed)
    env.close()
    results = palaestra.load_results(directory)
    types = results["episode_types"]
    training = sum(n for n, t in zip(results["episode_lengths"], types) if t == "t")
    everything = sum(results["episode_lengths"]) + 4

    report = json.loads(palaestra_cli("results", str(directory), "--json").stdout)
    assert (report["training_timesteps"], report["steps"]) == (training, everything)
    text = palaestra_cli("results", str(directory)).stdout
    assert f"Training timesteps:  {training} (of the completed training episodes" in text
    assert f"All steps:           {everything} (with the evaluation episodes'" in text

    page = _page(web_server, upload(directory, server=web_server.url, api_key=web_server.api_key))
    shown = re.search(r"<dt>Training timesteps</dt><dd>([\d,  ]+)</dd>", page)
    assert shown is not None and int(re.sub(r"\D", "", shown.group(1))) == training
