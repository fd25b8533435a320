"""Stable-Baselines3's own VecEnvs and PPO with the Monitor, in a venv with SB3 (tests/core_install.py).

``palaestra.Monitor(DummyVecEnv(...))`` is refused with the way to record it, and that way works: SB3's
``SubprocVecEnv`` of ``vector_env_fns``, trained by SB3's PPO, records one run from every worker
process, which ``load_results`` and ``palaestra results`` read as one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core_install import SB3, build_venv, run_in

TRAIN = """
import json, sys
import gymnasium as gym
import palaestra
from palaestra.errors import MonitorError
from palaestra.monitoring import vector_env_fns
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv


def make_env():
    return gym.make("CartPole-v1")


if __name__ == "__main__":
    directory = sys.argv[1]
    try:
        palaestra.Monitor(DummyVecEnv([make_env] * 2), directory)
        refused = None
    except MonitorError as error:
        refused = str(error)
    envs = SubprocVecEnv(vector_env_fns([make_env] * 2, directory, video_callable=False))
    PPO("MlpPolicy", envs, n_steps=256, seed=0, verbose=0).learn(total_timesteps=1024)
    envs.close()
    results = palaestra.load_results(directory)
    print(json.dumps({"refused": refused, "manifests": len(results["manifests"]),
                      "episodes": len(results["episode_rewards"]), "steps": sum(results["episode_lengths"])}))
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the first run builds a venv (pip downloads what it has no wheel of)
def test_sb3_vec_envs_are_refused_and_the_hint_records_a_ppo_run_from_every_worker(tmp_path: Path) -> None:
    problem = build_venv(SB3)
    if problem:
        pytest.fail(f"cannot build the Stable-Baselines3 venv: {problem}")
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    done = run_in(SB3, "python", str(script), str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "stable_baselines3.common.vec_env.dummy_vec_env.DummyVecEnv" in report["refused"]
    assert "2 sub-environments" in report["refused"] and "vector_env_fns" in report["refused"]
    assert report["manifests"] == 2  # one Monitor in each SubprocVecEnv worker
    # PPO took at least 1024 steps; all but the two unfinished episodes' are in completed episodes
    assert report["episodes"] >= 10 and 1024 - 2 * 500 <= report["steps"] <= 1024 + 2 * 256
    results = run_in(SB3, "palaestra", "results", str(tmp_path / "run"))
    assert results.returncode == 0 and "CartPole-v1" in results.stdout, results.stderr
