"""Benchmark scoring beyond the 2017 pins: abandoned steps, durations, whole-run scoring."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest

import palaestra
from palaestra.benchmarks import (
    Benchmark,
    ClipTo01ThenAverage,
    TotalReward,
    benchmark_score_from_local,
    register_benchmark,
    runs,
    score_benchmark_run,
    scoring,
)
from palaestra.errors import ResultsError, Unregistered, UnregisteredBenchmark


def evaluation(
    rewards: list[float], lengths: list[int], types: list[str] | None = None, **extra: Any
) -> dict:
    n = len(rewards)
    return {
        "timestamps": [100.0 + i for i in range(1, n + 1)],
        "episode_lengths": lengths,
        "episode_rewards": rewards,
        "episode_types": types,
        "initial_reset_timestamp": 100.0,
        **extra,
    }


def test_abandoned_steps_count_toward_the_budget() -> None:
    bench = Benchmark(
        "Ab",
        TotalReward(),
        [{"env_id": "X-v0", "trials": 1, "max_timesteps": 25, "reward_floor": 0, "reward_ceiling": 10}],
    )
    ev = evaluation([10.0, 10.0, 10.0], [10, 10, 10])
    assert scoring.score_results(bench, "X-v0", ev)["rewards"][0].tolist() == [10.0, 10.0]
    # 8 steps abandoned at t=101.5 (between episodes 0 and 1): episode 1 now ends at 28 steps > 25
    ev_abandoned = {**ev, "abandoned_steps": [8], "abandoned_timestamps": [101.5]}
    fixed = scoring.score_results(bench, "X-v0", ev_abandoned)
    assert fixed["rewards"][0].tolist() == [10.0]
    legacy = scoring.score_results(bench, "X-v0", ev_abandoned, legacy=True)  # 2017 knew no abandoned steps
    assert legacy["rewards"][0].tolist() == [10.0, 10.0]
    # abandoned after the last episode ended changes nothing
    late = {**ev, "abandoned_steps": [100], "abandoned_timestamps": [200.0]}
    assert scoring.score_results(bench, "X-v0", late)["rewards"][0].tolist() == [10.0, 10.0]


def test_abandoned_steps_before_counts_resets_at_or_before_each_episode_end() -> None:
    got = scoring.abandoned_steps_before(np.array([1.0, 2.0, 3.0, 4.0]), [5, 7, 1], [3.0, 0.5, 9.0])
    assert got.tolist() == [7, 7, 12, 12]
    with pytest.raises(ValueError, match="abandoned_timestamps"):
        scoring.abandoned_steps_before(np.array([1.0]), [1, 2], [0.5])


@pytest.mark.parametrize("sources", [1, 7, 40])
def test_episode_durations_match_the_2017_loop(sources: int) -> None:
    rng = np.random.default_rng(sources)
    n = 500
    data_sources = rng.integers(0, sources + 1, n)  # the last source has no initial reset: durations 0 (2017)
    timestamps = np.sort(rng.uniform(0, 100, n))
    initial = list(rng.uniform(-5, 0, sources))
    expected = np.zeros(n)
    for source, initial_ts in enumerate(initial):  # the 2017 _compute_episode_durations
        (idx,) = np.where(data_sources == source)
        if len(idx) == 0:
            continue
        expected[idx[0]] = timestamps[idx[0]] - initial_ts
        expected[idx[1:]] = timestamps[idx[1:]] - timestamps[idx[:-1]]
    assert np.array_equal(scoring.episode_durations(initial, data_sources.tolist(), timestamps), expected)


def test_clip_to_01_without_episode_types_and_with_only_evaluation_episodes() -> None:
    bench = Benchmark(
        "Ty",
        ClipTo01ThenAverage(num_episodes=2),
        [{"env_id": "X-v0", "trials": 1, "max_timesteps": 1000, "reward_ceiling": 10}],
    )
    none = scoring.score_results(bench, "X-v0", evaluation([5.0, 10.0, 20.0], [1, 1, 1], None))
    assert none["scores"] == [pytest.approx(1.0)] and none["solves"][0].tolist() == [True, True]
    only_e = scoring.score_results(bench, "X-v0", evaluation([5.0, 10.0], [1, 1], ["e", "e"]))
    assert only_e["scores"] == [pytest.approx(0.75)] and only_e["elapsed_times"] == [0.0]
    assert only_e["timestamps"] == [102.0]


def test_max_seconds_budget_uses_episode_durations() -> None:
    bench = Benchmark(
        "Sec", TotalReward(), [{"env_id": "X-v0", "trials": 1, "max_seconds": 2.5, "reward_ceiling": 10}]
    )
    result = scoring.score_results(bench, "X-v0", evaluation([1.0, 2.0, 3.0, 4.0], [1, 1, 1, 1]))
    assert result["rewards"][0].tolist() == [1.0, 2.0] and result["elapsed_times"] == [2.0]


def _tiny_benchmark(bench_id: str) -> Benchmark:
    return register_benchmark(
        bench_id,
        ClipTo01ThenAverage(num_episodes=3),
        [
            {
                "env_id": "CartPole-v1",
                "trials": 2,
                "max_timesteps": 100,
                "reward_floor": 0,
                "reward_ceiling": 10,
            },
            {
                "env_id": "Acrobot-v1",
                "trials": 1,
                "max_timesteps": 100,
                "reward_floor": -10,
                "reward_ceiling": 0,
            },
        ],
    )


def test_score_benchmark_run_returns_the_documented_keys() -> None:
    _tiny_benchmark("ScoreRun-v0")
    evaluations = [
        ("CartPole-v1", evaluation([5.0, 10.0, 20.0], [10, 10, 10], ["t"] * 3)),
        ("Acrobot-v1", evaluation([-5.0, 0.0, 0.0], [10, 10, 10])),
    ]
    result = score_benchmark_run("ScoreRun-v0", evaluations, reps=2000)
    json.dumps(result)  # JSON-ready for the scoreboard
    assert {
        "benchmark_id",
        "legacy",
        "score",
        "num_envs_solved",
        "start_to_finish_seconds",
        "summed_task_wall_time",
        "summed_training_seconds",
        "tasks",
        "statistics",
    } <= set(result)
    cart, acro = result["tasks"]
    assert cart["trial_scores"] == [pytest.approx(5 / 6), 0.0] and cart["trials_submitted"] == 1
    assert acro["trial_scores"] == [pytest.approx(5 / 6)] and acro["env_solved"] is False
    assert result["score"] == pytest.approx((5 / 6 + 0 + 5 / 6) / 3)
    stats = result["statistics"]
    assert stats["num_runs"] == 3 and set(stats) >= {"iqm", "mean", "median", "optimality_gap"}
    assert stats["mean"]["value"] == pytest.approx((5 / 12 + 5 / 6) / 2)
    assert stats["mean"]["low"] <= stats["mean"]["value"] <= stats["mean"]["high"]
    assert score_benchmark_run("ScoreRun-v0", evaluations, reps=2000) == result  # seeded
    with pytest.raises(Unregistered, match="MountainCar-v0"):
        score_benchmark_run("ScoreRun-v0", [("MountainCar-v0", evaluation([1.0], [1]))])
    with pytest.raises(UnregisteredBenchmark):
        score_benchmark_run("Nope-v0", [])


def test_benchmark_score_from_local_reads_monitor_directories(tmp_path: Path) -> None:
    _tiny_benchmark("ScoreLocal-v0")
    for trial in range(2):
        env = palaestra.Monitor(
            gymnasium.make("CartPole-v1"), tmp_path / f"CartPole-v1-{trial}", video_callable=False
        )
        env.reset(seed=trial)
        env.action_space.seed(trial)
        for _ in range(60):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        env.close()
    other = palaestra.Monitor(
        gymnasium.make("MountainCar-v0"), tmp_path / "nested" / "MountainCar-v0-0", video_callable=False
    )
    other.reset(seed=0)
    for _ in range(200):  # one episode (MountainCar-v0 truncates at 200 steps)
        other.step(0)
    other.close()
    result = benchmark_score_from_local("ScoreLocal-v0", tmp_path, reps=1000)
    assert [Path(d).name for d in result["directories"]] == ["CartPole-v1-0", "CartPole-v1-1"]
    assert [Path(d).name for d in result["skipped"]] == ["MountainCar-v0-0"]
    loaded = palaestra.load_results(tmp_path / "CartPole-v1-0")
    expected = scoring.score_results(palaestra.benchmark_spec("ScoreLocal-v0"), "CartPole-v1", loaded)[
        "scores"
    ]
    assert result["tasks"][0]["trial_scores"][0] == pytest.approx(expected[0])
    assert result["tasks"][1]["trial_scores"] == [0.0]  # Acrobot: no trial recorded
    with pytest.raises(ResultsError, match="does not exist"):
        benchmark_score_from_local("ScoreLocal-v0", tmp_path / "missing")


def test_the_run_walker_finds_nested_trials_in_natural_order(tmp_path: Path) -> None:
    for name in ["b/CartPole-v1-10", "b/CartPole-v1-9", "a/CartPole-v1-2", "b/CartPole-v1-1"]:
        env = palaestra.Monitor(gymnasium.make("CartPole-v1"), tmp_path / name, video_callable=False)
        env.reset(seed=0)
        env.close()
    (tmp_path / "b" / "not-a-run").mkdir()
    found = [Path(d).relative_to(tmp_path).as_posix() for d in runs.training_directories(tmp_path)]
    assert found == ["a/CartPole-v1-2", "b/CartPole-v1-1", "b/CartPole-v1-9", "b/CartPole-v1-10"]
    assert runs.trial_directory(str(tmp_path / "b"), "CartPole-v1", 10) == str(tmp_path / "b/CartPole-v1-10")
    with pytest.raises(ResultsError, match=r"missing does not exist or is not a directory"):
        runs.training_directories(tmp_path / "missing")


