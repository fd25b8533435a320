"""The benchmark runner: real worker processes, real Monitor directories, resume, failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import palaestra
from palaestra.benchmarks import (
    ClipTo01ThenAverage,
    TotalReward,
    benchmark_score_from_local,
    register_benchmark,
)
from palaestra.benchmarks.runner import DONE_MARKER, BenchmarkRunError, run_benchmark
from palaestra.errors import Error

AGENTS = "tests.benchmarks.bench_test_agents"


@pytest.fixture(scope="module")
def tiny() -> str:
    register_benchmark(
        "RunnerTiny-v0",
        ClipTo01ThenAverage(num_episodes=5),
        [
            {
                "env_id": "CartPole-v1",
                "trials": 2,
                "max_timesteps": 400,
                "reward_floor": 0,
                "reward_ceiling": 500,
            },
            {
                "env_id": "CartPole-v1",
                "trials": 2,
                "max_timesteps": 250,
                "reward_floor": 0,
                "reward_ceiling": 100,
            },
            {
                "env_id": "MountainCar-v0",
                "trials": 1,
                "max_timesteps": 300,
                "reward_floor": -200,
                "reward_ceiling": -100,
            },
            {"env_id": "Minecraft2017Only-v0", "trials": 1, "max_timesteps": 10},
        ],
    )
    return "RunnerTiny-v0"


def test_run_with_two_workers_then_resume(tiny: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    monkeypatch.setenv("PALAESTRA_TEST_HOOKS_DIR", str(hooks))
    out = tmp_path / "run"
    report = run_benchmark(tiny, f"{AGENTS}:counting", out, workers=2, seed=1, progress=False)
    assert report.count("finished") == 3 and report.count("unavailable") == 1 and not report.failed
    assert "Minecraft2017Only-v0" in report.unavailable
    assert sorted(p.name for p in out.iterdir()) == ["CartPole-v1-0", "CartPole-v1-1", "MountainCar-v0-0"]
    for trial_dir in out.iterdir():
        marker = json.loads((trial_dir / DONE_MARKER).read_text())
        results = palaestra.load_results(trial_dir)
        budget = 400 if trial_dir.name.startswith("CartPole") else 300
        # the trial ran the largest budget of its env's tasks; the steps of the unfinished last
        # episode are not in the files, the completed ones are
        assert marker["steps"] == budget
        assert results["total_steps"] <= budget and sum(results["episode_lengths"]) == results["total_steps"]
        assert marker["episodes"] == len(results["episode_lengths"]) > 0
    # the agent's optional hooks were called in the workers: observe once per step
    counts = [tuple(map(int, p.read_text().split())) for p in hooks.iterdir()]
    assert counts and all(observed > 0 and ended > 0 for observed, ended in counts)

    mtimes = {p.name: (p / DONE_MARKER).stat().st_mtime_ns for p in out.iterdir()}
    # an unfinished trial (no marker) runs again; the finished ones are skipped
    (out / "CartPole-v1-1" / DONE_MARKER).unlink()
    again = run_benchmark(tiny, f"{AGENTS}:counting", out, workers=2, seed=1, progress=False)
    assert again.count("skipped") == 2 and again.count("finished") == 1
    assert (out / "CartPole-v1-0" / DONE_MARKER).stat().st_mtime_ns == mtimes["CartPole-v1-0"]
    assert len(list((out / "CartPole-v1-1").glob("openaigym.manifest.*"))) == 1  # restarted, not appended

    scored = benchmark_score_from_local(tiny, out, reps=500)
    assert [t["trials_submitted"] for t in scored["tasks"]] == [2, 2, 1, 0]
    assert 0 <= scored["score"] <= 1

    # another run's trials in the same directory are refused, unless forced
    with pytest.raises(BenchmarkRunError, match="another run"):
        run_benchmark(tiny, "random", out, workers=2, progress=False)
    forced = run_benchmark(
        tiny, "random", out, workers=2, progress=False, force=True, env_ids=["MountainCar-v0"]
    )
    assert forced.count("finished") == 1 and len(forced.outcomes) == 1
    assert json.loads((out / "MountainCar-v0-0" / DONE_MARKER).read_text())["agent"] == "random"


def test_failing_trials_are_reported_when_others_finish(tmp_path: Path) -> None:
    register_benchmark(
        "RunnerSomeFail-v0",
        TotalReward(),
        [
            {"env_id": "CartPole-v1", "trials": 1, "max_timesteps": 50},
            {"env_id": "MountainCar-v0", "trials": 1, "max_timesteps": 50},
        ],
    )
    report = run_benchmark(
        "RunnerSomeFail-v0", f"{AGENTS}:broken_on_three_actions", tmp_path, workers=1, progress=False
    )
    (failed,) = report.failed
    assert failed.env_id == "MountainCar-v0" and report.count("finished") == 1
    assert "RuntimeError: this agent is broken on purpose" in (failed.error or "")
    assert not (tmp_path / "MountainCar-v0-0" / DONE_MARKER).exists()


def test_a_run_in_which_every_trial_fails_raises_naming_the_first_failure(tmp_path: Path) -> None:
    register_benchmark(
        "RunnerFail-v0",
        TotalReward(),
        [
            {"env_id": "CartPole-v1", "trials": 2, "max_timesteps": 50},
        ],
    )
    with pytest.raises(BenchmarkRunError, match="Every trial of RunnerFail-v0 that ran failed") as caught:
        run_benchmark("RunnerFail-v0", f"{AGENTS}:broken", tmp_path, workers=2, progress=False)
    assert "CartPole-v1-0: RuntimeError: this agent is broken on purpose" in str(caught.value)
    assert caught.value.report is not None and len(caught.value.report.failed) == 2


SCRIPT = """\
from palaestra.benchmarks import TotalReward, register_benchmark
from palaestra.benchmarks.runner import run_benchmark

register_benchmark("Script-v0", TotalReward(), [{"env_id": "CartPole-v1", "trials": 2, "max_timesteps": 50}])
"""


@pytest.mark.parametrize(
    ("call", "guarded"),
    [
        ('report = run_benchmark("Script-v0", "random", "out", workers=2)\nprint(report.count("finished"))', False),
        (
            'if __name__ == "__main__":\n    print(run_benchmark("Script-v0", "random", "out", workers=2).count("finished"))',
            True,
        ),
        (
            'def main():\n    print(run_benchmark("Script-v0", "random", "out", workers=2).count("finished"))\n\n\n'
            'if "__main__" == __name__:\n    main()',
            True,
        ),
    ],
    ids=["unguarded", "guarded", "guarded-function"],
)
def test_a_script_that_runs_a_benchmark_needs_its_main_guard(call: str, guarded: bool, tmp_path: Path) -> None:
    """Spawned workers import the script again: without the guard each would start the benchmark anew."""
    script = tmp_path / "bench_script.py"
    script.write_text(SCRIPT + call + "\n")
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    if guarded:
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["2"]
        return
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "bench_script.py runs the benchmark at its top level (line 5)" in last
    assert 'if __name__ == "__main__":' in last
    assert "bootstrapping phase" not in result.stderr  # no worker was started
    assert not (tmp_path / "out").exists()


def test_max_seconds_budget(tmp_path: Path) -> None:
    register_benchmark(
        "RunnerSeconds-v0",
        TotalReward(),
        [
            {"env_id": "CartPole-v1", "trials": 1, "max_seconds": 0.3},
        ],
    )
    report = run_benchmark("RunnerSeconds-v0", "random", tmp_path, progress=False)
    (outcome,) = report.outcomes
    assert outcome.status == "finished" and outcome.steps > 0 and outcome.seconds >= 0.3


def test_bad_arguments(tiny: str, tmp_path: Path) -> None:
    with pytest.raises(Error, match="not of the form 'module:factory'"):
        run_benchmark(tiny, "nonsense", tmp_path, progress=False)
    with pytest.raises(Error, match="cannot import module"):
        run_benchmark(tiny, "no_such_module_xyz:make", tmp_path, progress=False)
    with pytest.raises(Error, match="has no attribute"):
        run_benchmark(tiny, f"{AGENTS}:nothing", tmp_path, progress=False)
    with pytest.raises(BenchmarkRunError, match="at least 1"):
        run_benchmark(tiny, "random", tmp_path, workers=0, progress=False)
    with pytest.raises(BenchmarkRunError, match="not part of benchmark"):
        run_benchmark(tiny, "random", tmp_path, env_ids=["Acrobot-v1"], progress=False)
    assert not os.listdir(tmp_path)
