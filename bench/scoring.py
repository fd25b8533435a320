"""Benchmark scoring speed on 1,000,000 episodes (against the 2017 code) and the runner's speed-up.

    .venv/bin/python bench/scoring.py [--episodes 1000000] [--repeats 5] [--steps 200000] [--no-runner]

Scoring: one evaluation of N episodes (Python lists, as ``load_results`` returns them; 10% of them
evaluation episodes, two data sources, a step budget that cuts the run at 80%) is scored by
``ClipTo01ThenAverage`` (fixed and ``legacy=True``), ``TotalReward``, and the per-env "solved"
statistics of ``palaestra.solved_stats.score_from_merged``; best of ``--repeats``. When the gym 0.9.4
venv exists (.cache/gym094-venv, built by the test suite), the 2017 scorers are timed on the same
episodes in that interpreter and the ratio is printed. Target (issue 7): well under a second each.

Statistics: IQM/mean/median/optimality gap with 50,000 stratified bootstrap replicates on a
7 tasks x 3 runs table.

Runner: a benchmark of 4 CartPole-v1 trials of ``--steps`` steps each, run with ``--workers 1`` and
``--workers 2`` (process start-up included); prints the speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
LEGACY_PYTHON = ROOT / ".cache" / "gym094-venv" / "bin" / "python"

# The same episodes are generated here and in the gym 0.9.4 interpreter (numpy's PCG64 stream is stable).
MAKE_EPISODES = """
import numpy as np
def make_episodes(n):
    rng = np.random.default_rng(12345)
    lengths = rng.integers(10, 500, n)
    rewards = rng.normal(100.0, 80.0, n).round(3)
    types = np.where(rng.random(n) < 0.1, "e", "t")
    timestamps = 1000.0 + np.cumsum(rng.uniform(0.001, 0.01, n))
    sources = rng.integers(0, 2, n)
    budget = int(lengths[types == "t"].sum() * 0.8)
    return dict(data_sources=sources.tolist(), initial_reset_timestamps=[1000.0, 1000.0],
                episode_lengths=lengths.tolist(), episode_rewards=rewards.tolist(),
                episode_types=types.tolist(), timestamps=timestamps.tolist()), budget
"""

LEGACY_TIMER = (
    MAKE_EPISODES
    + """
import json, sys, time
from gym.benchmarks import scoring
from gym.benchmarks.registration import Benchmark
n, repeats = int(sys.argv[1]), int(sys.argv[2])
ev, budget = make_episodes(n)
out = {}
for name, scorer in (("ClipTo01ThenAverage", scoring.ClipTo01ThenAverage()), ("TotalReward", scoring.TotalReward())):
    b = Benchmark(id="Bench", scorer=scorer, tasks=[{"env_id": "CartPole-v0", "trials": 1, "max_timesteps": budget,
                                                     "reward_floor": 0.0, "reward_ceiling": 200.0}])
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        r = b.score_evaluation("CartPole-v0", **ev)
        best, best_cpu = min(best, time.perf_counter() - t), min(best_cpu, time.process_time() - c)
    out[name] = [best, best_cpu, float(r["scores"][0])]
print(json.dumps(out))
"""
)

namespace: dict[str, Any] = {}
exec(MAKE_EPISODES, namespace)
make_episodes: Callable[[int], tuple[dict[str, Any], int]] = namespace["make_episodes"]


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Best wall-clock and best CPU seconds of ``repeats`` calls, and the last value."""
    best, best_cpu, value = float("inf"), float("inf"), None
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        value = fn()
        best, best_cpu = min(best, time.perf_counter() - t), min(best_cpu, time.process_time() - c)
    return best, best_cpu, value


def bench_scoring(n: int, repeats: int) -> None:
    from palaestra.benchmarks import Benchmark, ClipTo01ThenAverage, TotalReward
    from palaestra.solved_stats import score_from_merged

    ev, budget = make_episodes(n)
    task = {
        "env_id": "CartPole-v0",
        "trials": 1,
        "max_timesteps": budget,
        "reward_floor": 0.0,
        "reward_ceiling": 200.0,
    }
    ours: dict[str, tuple[float, float, float]] = {}
    scorers: list[tuple[str, Any, bool]] = [
        ("ClipTo01ThenAverage", ClipTo01ThenAverage(), False),
        ("ClipTo01ThenAverage legacy", ClipTo01ThenAverage(), True),
        ("TotalReward", TotalReward(), False),
        ("TotalReward legacy", TotalReward(), True),
    ]
    for name, scorer, legacy in scorers:
        bench = Benchmark("Bench", scorer, [task])
        seconds, cpu, result = best_of(
            repeats, partial(bench.score_evaluation, "CartPole-v0", **ev, legacy=legacy)
        )
        ours[name] = (seconds, cpu, float(result["scores"][0]))
    seconds, cpu, _ = best_of(
        repeats,
        lambda: score_from_merged(
            ev["episode_lengths"],
            ev["episode_rewards"],
            ev["episode_types"],
            ev["timestamps"],
            1000.0,
            trials=100,
            reward_threshold=195.0,
        ),
    )
    ours["solved stats (palaestra.solved_stats)"] = (seconds, cpu, float("nan"))

    legacy_times: dict[str, list[float]] = {}
    if LEGACY_PYTHON.exists():
        env = {**os.environ, "GYM_NO_LOGGER_SETUP": "1"}
        env.pop("PYTHONPATH", None)
        done = subprocess.run(
            [str(LEGACY_PYTHON), "-c", LEGACY_TIMER, str(n), str(repeats)],
            capture_output=True,
            text=True,
            env=env,
            timeout=1200,
        )
        if done.returncode == 0:
            legacy_times = json.loads(done.stdout)
        else:
            print(f"(the 2017 scorers failed: {done.stderr.strip()[-300:]})")
    else:
        print(f"(no gym 0.9.4 venv at {LEGACY_PYTHON}: run the test suite once to build it)")

    print(f"Scoring one evaluation of {n:,} episodes, lists in (best of {repeats}; wall / CPU seconds):")
    print(f"  {'scorer':<34} {'palaestra':>15} {'gym 2017':>15} {'CPU ratio':>9}  score (palaestra / 2017)")
    for name, (seconds, cpu, score) in ours.items():
        peer = legacy_times.get(name.replace(" legacy", "")) if name.endswith("legacy") else None
        peer_s = f"{peer[0]:6.3f} / {peer[1]:6.3f}" if peer else ""
        ratio = f"{peer[1] / cpu:8.1f}x" if peer else ""
        scores = f"{score:.6f} / {peer[2]:.6f}" if peer else ("" if np.isnan(score) else f"{score:.6f}")
        print(f"  {name:<34} {seconds:6.3f} / {cpu:6.3f} {peer_s:>15} {ratio:>9}  {scores}")


def bench_statistics() -> None:
    from palaestra.benchmarks.statistics import interval_estimates, performance_profile

    table = np.random.default_rng(0).uniform(0, 1, (3, 7))
    seconds, _cpu, _ = best_of(3, lambda: interval_estimates(table, reps=50_000))
    print(
        f"\nStatistics: 4 metrics x 50,000 stratified bootstrap replicates on 7 tasks x 3 runs: {seconds:.3f}s"
    )
    seconds, _cpu, _ = best_of(3, lambda: performance_profile(table, reps=2_000))
    print(f"Performance profile, 101 thresholds x 2,000 replicates: {seconds:.3f}s")


def bench_runner(steps: int) -> None:
    from palaestra.benchmarks import TotalReward, register_benchmark
    from palaestra.benchmarks.runner import run_benchmark

    register_benchmark(
        "BenchRunner-v0",
        TotalReward(),
        [
            {
                "env_id": "CartPole-v1",
                "trials": 4,
                "max_timesteps": steps,
                "reward_floor": 0,
                "reward_ceiling": 500,
            },
        ],
    )
    times = {}
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as out:
            t = time.perf_counter()
            report = run_benchmark("BenchRunner-v0", "random", out, workers=workers, progress=False)
            times[workers] = time.perf_counter() - t
            assert report.count("finished") == 4, report.to_dict()
    print(f"\nRunner: 4 trials x {steps:,} CartPole-v1 steps (random agent), on {os.cpu_count()} CPUs:")
    print(
        f"  --workers 1: {times[1]:.2f}s   --workers 2: {times[2]:.2f}s   speed-up {times[1] / times[2]:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200_000, help="steps per runner trial (large enough that work, not process start-up, dominates)")
    parser.add_argument("--no-runner", action="store_true")
    args = parser.parse_args()
    bench_scoring(args.episodes, args.repeats)
    bench_statistics()
    if not args.no_runner:
        bench_runner(args.steps)


if __name__ == "__main__":
    main()
