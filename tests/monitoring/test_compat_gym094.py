"""Both directions of the 2017 contract: gym 0.9.4 loads palaestra's directories and vice versa."""

from __future__ import annotations

import json
import textwrap

import gymnasium as gym
import pytest

import palaestra
from tests.legacy_gym import run_legacy_gym
from tests.monitoring.monitoring_helpers import play

pytestmark = pytest.mark.legacy_gym


def test_gym094_loads_a_directory_written_by_palaestra(tmp_path, legacy_gym_python):
    env = palaestra.Monitor(gym.make("FrozenLake-v1", render_mode="ansi"), tmp_path / "run")
    lengths = play(env, 4)
    env.close()
    env = palaestra.Monitor(gym.make("FrozenLake-v1"), tmp_path / "run", resume=True, mode="evaluation")
    lengths += play(env, 2, seed=3)
    env.close()
    code = textwrap.dedent(f"""
        import json, gym.monitoring
        r = gym.monitoring.load_results({str(tmp_path / "run")!r})
        print(json.dumps({{"lengths": r["episode_lengths"], "types": r["episode_types"],
                          "env_info": r["env_info"], "videos": len(r["videos"])}}))
    """)
    loaded = json.loads(run_legacy_gym(legacy_gym_python, code).strip().splitlines()[-1])
    assert loaded["lengths"] == lengths
    assert loaded["types"] == ["t"] * 4 + ["e"] * 2
    assert loaded["env_info"]["env_id"] == "FrozenLake-v1"
    assert loaded["videos"] == len(palaestra.load_results(tmp_path / "run")["videos"]) > 0


def test_palaestra_loads_a_directory_written_by_gym094(tmp_path, legacy_gym_python):
    code = textwrap.dedent(f"""
        import gym
        from gym import wrappers
        env = wrappers.Monitor(gym.make("FrozenLake-v0"), {str(tmp_path / "old")!r})
        env.seed(0)
        lengths = []
        for _ in range(5):
            env.reset()
            done, n = False, 0
            while not done:
                _, _, done, _ = env.step(env.action_space.sample())
                n += 1
            lengths.append(n)
        env.reset()  # an unfinished last episode: 2017 leaves an extra episode type behind
        env.close()
        print(lengths)
    """)
    lengths = json.loads(run_legacy_gym(legacy_gym_python, code).strip().splitlines()[-1])
    results = palaestra.load_results(tmp_path / "old")
    assert results["episode_lengths"] == lengths
    assert results["episode_types"] == ["t"] * 5
    assert results["env_info"] == {"env_id": "FrozenLake-v0", "gym_version": "0.9.4"}
    assert results["videos"] and all(v.endswith(".json") for v, _ in results["videos"])


def test_gym094_loads_a_vector_monitors_directory_as_one_run(tmp_path, legacy_gym_python):
    envs = palaestra.Monitor(gym.make_vec("FrozenLake-v1", num_envs=3, render_mode="ansi"), tmp_path / "run")
    envs.reset(seed=0)
    envs.action_space.seed(0)
    for _ in range(60):
        envs.step(envs.action_space.sample())
    envs.close()
    code = textwrap.dedent(f"""
        import json, gym.monitoring
        r = gym.monitoring.load_results({str(tmp_path / "run")!r})
        print(json.dumps({{"lengths": r["episode_lengths"], "timestamps": r["timestamps"],
                          "sources": r["data_sources"], "env_info": r["env_info"], "videos": len(r["videos"])}}))
    """)
    loaded = json.loads(run_legacy_gym(legacy_gym_python, code).strip().splitlines()[-1])
    ours = palaestra.load_results(tmp_path / "run")
    # gym 0.9.4 sorts with an unstable argsort (episodes that ended in the same vector step may swap)
    assert loaded["timestamps"] == ours["timestamps"]
    assert sorted(zip(loaded["timestamps"], loaded["lengths"])) == sorted(
        zip(ours["timestamps"], ours["episode_lengths"])
    )
    # one run, one data source; which sub-environment played each episode is palaestra's env_index
    assert set(loaded["sources"]) == set(ours["data_sources"]) == {0}
    assert set(ours["env_index"]) == {0, 1, 2}
    assert loaded["env_info"]["env_id"] == "FrozenLake-v1"
    assert loaded["videos"] == len(ours["videos"]) > 0
