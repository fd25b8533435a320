"""The runner on a local Ray instance (the optional ``ray`` extra)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.benchmarks import TotalReward, benchmark_score_from_local, register_benchmark
from palaestra.benchmarks.runner import DONE_MARKER, run_benchmark

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'palaestra[ray]')")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_trials_run_as_ray_tasks(local_ray: None, tmp_path: Path) -> None:
    register_benchmark(
        "RayTiny-v0",
        TotalReward(),
        [
            {
                "env_id": "CartPole-v1",
                "trials": 2,
                "max_timesteps": 300,
                "reward_floor": 0,
                "reward_ceiling": 500,
            },
            {
                "env_id": "Acrobot-v1",
                "trials": 1,
                "max_timesteps": 200,
                "reward_floor": -500,
                "reward_ceiling": 0,
            },
        ],
    )
    report = run_benchmark("RayTiny-v0", "random", tmp_path, ray_address="auto", seed=3, progress=False)
    assert report.count("finished") == 3 and not report.failed
    assert ray.is_initialized()  # a Ray instance the caller started is left running
    for name, steps in (("CartPole-v1-0", 300), ("CartPole-v1-1", 300), ("Acrobot-v1-0", 200)):
        trial_dir = tmp_path / name
        assert json.loads((trial_dir / DONE_MARKER).read_text())["steps"] == steps
        assert list(trial_dir.glob("openaigym.manifest.*.manifest.json"))
    scored = benchmark_score_from_local("RayTiny-v0", tmp_path, reps=500)
    assert [t["trials_submitted"] for t in scored["tasks"]] == [2, 1]
    assert scored["tasks"][0]["trial_scores"][0] > 0  # CartPole's random rewards are above the floor
    again = run_benchmark("RayTiny-v0", "random", tmp_path, ray_address="auto", seed=3, progress=False)
    assert again.count("skipped") == 3
