"""The vector Monitor on EnvPool's gymnasium-API envs (``envpool.make(..., env_type="gymnasium")``).

EnvPool is the ``envpool`` extra (not in ``all``: its wheel and assets are about 740 MB); without it
these tests skip, saying so. The envs run in a fresh Python each: a process that has loaded both
EnvPool's and ale-py's Atari engines segfaults in the children it forks next (the suite's
``AsyncVectorEnv`` tests), so EnvPool never loads in the test process itself.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import palaestra
from tests.monitoring.monitoring_helpers import decoded_frames

if importlib.util.find_spec("envpool") is None:
    pytest.skip("EnvPool is not installed (the envpool extra: pip install 'palaestra[envpool]')", allow_module_level=True)

REPO_ROOT = Path(__file__).resolve().parents[2]

SCENARIOS = textwrap.dedent('''
    import json, sys, warnings
    import numpy as np
    import envpool, palaestra
    from palaestra.errors import MonitorError

    warnings.filterwarnings("ignore", message=".*precision lowered by casting")
    scenario, out = sys.argv[1], sys.argv[2]


    def lengths_by_env(envs, steps):
        """Step with seeded random actions (next-step autoreset: a step after a done is the reset, in
        no episode); each sub-environment's episode lengths as the env itself reports them."""
        rng = np.random.default_rng(0)
        envs.reset()
        n = envs.num_envs
        counts, restarting = np.zeros(n, int), np.zeros(n, bool)
        found = {k: [] for k in range(n)}
        for _ in range(steps):
            _, _, terminated, truncated, _ = envs.step(rng.integers(0, 2, n).astype(np.int32))
            counts = np.where(restarting, 0, counts + 1)
            done = terminated | truncated
            for k in np.flatnonzero(done & ~restarting):
                found[int(k)].append(int(counts[k]))
            restarting = done & ~restarting
        return found


    said = {}
    if scenario == "cartpole":
        said["bare"] = lengths_by_env(envpool.make("CartPole-v1", env_type="gymnasium", num_envs=4, seed=3), 400)
        envs = palaestra.Monitor(envpool.make("CartPole-v1", env_type="gymnasium", num_envs=4, seed=3), out)
        said["env_id"] = envs.env_id
        lengths_by_env(envs, 400)
        envs.close()
    elif scenario == "changed":
        refused = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2, max_episode_steps=50)
        try:
            palaestra.Monitor(refused, out + "-refused")
        except MonitorError as e:
            said["refused"] = str(e)
        refused.close()
        envs = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2, max_episode_steps=50)
        envs = palaestra.Monitor(envs, out, env_id="CartPole-v1")
        lengths_by_env(envs, 120)
        envs.close()
    elif scenario == "pong":
        envs = palaestra.Monitor(
            envpool.make("Pong-v5", env_type="gymnasium", num_envs=3), out,
            video_callable=lambda episode_id: episode_id == 0,
        )
        said["env_id"] = envs.env_id
        obs, _ = envs.reset()
        newest = [obs[0, -1].copy()]
        for _ in range(20):
            obs, *_ = envs.step(np.zeros(3, np.int32))
            newest.append(obs[0, -1].copy())
        envs.close()
        np.save(out + "-newest.npy", np.stack(newest))
    print(json.dumps(said))
''')


def run_scenario(name: str, directory: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SCENARIOS, name, str(directory)], capture_output=True, text=True, cwd=REPO_ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_envpool_cartpole_is_recorded_under_its_task_id_with_the_episodes_it_plays(tmp_path):
    said = run_scenario("cartpole", tmp_path / "run")
    assert said["env_id"] == "CartPole-v1"  # read from EnvPool's registry: its spec class and settings
    results = palaestra.load_results(tmp_path / "run")
    recorded: dict[str, list[int]] = {str(k): [] for k in range(4)}
    for k, length in zip(results["env_index"], results["episode_lengths"]):
        recorded[str(k)].append(length)
    assert recorded == said["bare"] and len(results["episode_lengths"]) > 20
    assert results["env_info"]["env_id"] == "CartPole-v1" and results["timestamps"] == sorted(results["timestamps"])


def test_an_envpool_env_whose_settings_match_no_task_needs_env_id(tmp_path):
    said = run_scenario("changed", tmp_path / "run")
    assert "No single EnvPool task has its spec class and settings" in said["refused"] and "env_id=" in said["refused"]
    assert not (tmp_path / "run-refused").exists()
    results = palaestra.load_results(tmp_path / "run")
    assert results["env_info"]["env_id"] == "CartPole-v1" and max(results["episode_lengths"]) <= 50


def test_envpool_atari_gets_a_video_from_sub_environment_0s_observations(tmp_path):
    said = run_scenario("pong", tmp_path / "run")
    assert said["env_id"] == "Pong-v5"  # EnvPool's own id (its Atari preprocessing), not ale-py's ALE/Pong-v5
    (video, meta), = palaestra.load_results(tmp_path / "run")["videos"]
    assert json.loads(Path(meta).read_text())["frame_source"] == "observations"
    frames = decoded_frames(video, 84, 84, 1)[..., 0]
    newest = np.load(tmp_path / "run-newest.npy")
    assert frames.shape == newest.shape == (21, 84, 84)
    assert np.abs(frames.astype(int) - newest.astype(int)).mean() < 6
