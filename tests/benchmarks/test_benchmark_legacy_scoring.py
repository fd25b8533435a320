"""Benchmark scores pinned against the 2017 code, and the two 2017 defects fixed.

PINNED_2017 was produced by running ``legacy_cases_2017.LEGACY_SCRIPT`` once under the original
gym 0.9.4 (``pip install gym==0.9.4 'numpy<2' six`` into .cache/gym094-venv; its
``gym.benchmarks.scoring`` is the mid-2017 code of spec §5.3/§5.4) and pasting its JSON output.
``test_live_2017_code_agrees`` reruns that script when the gym 0.9.4 venv can be built.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from typing import Any

import numpy as np
import pytest

from palaestra.benchmarks import Benchmark, benchmark_aggregate_score, scoring
from tests.benchmarks.legacy_cases_2017 import (
    AGGREGATE_CASE,
    CASES,
    aggregate_evaluation,
    evaluation_of,
    legacy_script,
)

PINNED_2017: dict[str, Any] = {
    "aggregate": {
        "num_envs_solved": 2,
        "score": 0.7094444444444443,
        "start_to_finish_seconds": 404.5,
        "summed_task_wall_time": 25.5,
        "summed_training_seconds": 25.5,
    },
    "all_training": {
        "elapsed_times": [3.0],
        "initial_reset_timestamp": 50.0,
        "lengths": [[5, 5, 0]],
        "rewards": [[1.0, 2.0, 0.0]],
        "scores": [0.25],
        "solves": [[False, False, False]],
        "timestamps": [53.0],
    },
    "interleaved": {
        "elapsed_times": [2.5, 3.5],
        "initial_reset_timestamp": 1000.0,
        "lengths": [[10, 20, 0, 0], [5, 5, 5, 5]],
        "rewards": [[10.0, 20.0, 0.0, 0.0], [120.0, 100.0, 80.0, 110.0]],
        "scores": [0.07500000000000001, 0.95],
        "solves": [[False, False, False, False], [True, True, False, True]],
        "timestamps": [1003.5, 1006.0],
    },
    "two_sources_reward_per_time": {
        "elapsed_times": [3.5, 2.1000000000000227],
        "initial_reset_timestamp": 1000.0,
        "lengths": [[10, 8, 12, 6, 9], [10, 8, 12]],
        "rewards": [[-50.0, 10.0, 30.0, 100.0, 120.0], [-50.0, 10.0, 30.0]],
        "scores": [1.0, 0.0],
        "solves": [[0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
        "timestamps": [1002.3, 1001.6],
    },
    "two_sources_total_reward": {
        "elapsed_times": [3.5, 2.1000000000000227],
        "initial_reset_timestamp": 1000.0,
        "lengths": [[10, 8, 12, 6, 9], [10, 8, 12]],
        "rewards": [[-50.0, 10.0, 30.0, 100.0, 120.0], [-50.0, 10.0, 30.0]],
        "scores": [0.71, 0.48333333333333334],
        "solves": [[False, False, False, True, True], [False, False, False]],
        "timestamps": [1002.3, 1001.6],
    },
}

AGGREGATE_KEYS = (
    "score",
    "num_envs_solved",
    "start_to_finish_seconds",
    "summed_task_wall_time",
    "summed_training_seconds",
)


def _scorer(spec: list[Any]) -> Any:
    return getattr(scoring, spec[0])(*spec[1:])


def _plain(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


def score_case(name: str, legacy: bool) -> dict[str, Any]:
    case = CASES[name]
    bench = Benchmark(id=f"Pin-{name}", scorer=_scorer(case["scorer"]), tasks=case["tasks"])
    ev = evaluation_of(name)
    return _plain(
        bench.score_evaluation(
            case["env_id"],
            ev["data_sources"],
            ev["initial_reset_timestamps"],
            ev["episode_lengths"],
            ev["episode_rewards"],
            ev["episode_types"],
            ev["timestamps"],
            legacy=legacy,
        )
    )


def score_aggregate(legacy: bool) -> dict[str, Any]:
    bench = Benchmark(
        id="PinAggregate", scorer=_scorer(AGGREGATE_CASE["scorer"]), tasks=AGGREGATE_CASE["tasks"]
    )
    per_env: dict[str, list[Any]] = {}
    for env_id, rewards, start in AGGREGATE_CASE["evaluations"]:
        ev = aggregate_evaluation(rewards, start)
        per_env.setdefault(env_id, []).append(scoring.score_results(bench, env_id, ev, legacy=legacy))
    return dict(benchmark_aggregate_score(bench, per_env, legacy=legacy))


@pytest.mark.parametrize("name", sorted(CASES))
def test_legacy_evaluation_scores_equal_2017(name: str) -> None:
    assert score_case(name, legacy=True) == PINNED_2017[name]


def test_legacy_aggregate_equals_2017() -> None:
    got = score_aggregate(legacy=True)
    for key in AGGREGATE_KEYS:
        # the 2017 code iterates a set of env ids, so only summation order can differ
        assert got[key] == pytest.approx(PINNED_2017["aggregate"][key], rel=1e-12, abs=0), key


def test_fixed_evaluation_indexing_scores_the_evaluation_episodes() -> None:
    fixed = score_case("interleaved", legacy=False)
    # 2017 scored rewards[[0, 1]] (the first two episodes, training ones) because positions in the
    # evaluation-index list were used as indices into all episodes; fixed: episodes 2 and 4 ('e').
    assert fixed["rewards"][0] == [150.0, 90.0, 0.0, 0.0]
    assert fixed["scores"][0] == pytest.approx((1.0 + 0.9) / 4)
    assert fixed["solves"][0] == [True, False, False, False]
    # the task without a cut-off, and everything else, are the same as 2017
    assert fixed["scores"][1] == PINNED_2017["interleaved"]["scores"][1]
    assert fixed["timestamps"] == PINNED_2017["interleaved"]["timestamps"]
    assert fixed["elapsed_times"] == PINNED_2017["interleaved"]["elapsed_times"]


@pytest.mark.parametrize("name", ["all_training", "two_sources_total_reward", "two_sources_reward_per_time"])
def test_fixed_equals_legacy_where_2017_was_right(name: str) -> None:
    assert score_case(name, legacy=False) == PINNED_2017[name]


def test_fixed_solved_rule_needs_every_scored_episode_at_the_ceiling() -> None:
    fixed = score_aggregate(legacy=False)
    legacy = score_aggregate(legacy=True)
    # 2017: CartPole counted as solved because one episode per trial reached the ceiling
    assert legacy["env_solved"] == {"CartPole-v0": True, "MountainCar-v0": True, "Acrobot-v1": False}
    assert fixed["env_solved"] == {"CartPole-v0": False, "MountainCar-v0": True, "Acrobot-v1": False}
    assert fixed["num_envs_solved"] == 1
    for key in AGGREGATE_KEYS:
        if key != "num_envs_solved":
            assert fixed[key] == pytest.approx(legacy[key], rel=1e-12), key


def test_fixed_solved_rule_ignores_padding() -> None:
    # PrivateEye-style task (floor above ceiling): the padding "reaches" the ceiling; 2017 counted it
    bench = Benchmark(
        id="Pad",
        scorer=scoring.ClipTo01ThenAverage(num_episodes=3),
        tasks=[
            {"env_id": "X-v0", "trials": 1, "max_timesteps": 100, "reward_floor": 10.0, "reward_ceiling": 5.0}
        ],
    )
    ev = aggregate_evaluation([], 0.0)
    for legacy, solved in ((True, 1), (False, 0)):
        result = scoring.score_results(bench, "X-v0", ev, legacy=legacy)
        assert (
            benchmark_aggregate_score(bench, {"X-v0": [result]}, legacy=legacy)["num_envs_solved"] == solved
        )


def test_total_reward_without_episodes_is_null_score_not_nan() -> None:
    bench = Benchmark(
        id="Empty", scorer=scoring.TotalReward(), tasks=[{"env_id": "X-v0", "trials": 1, "max_timesteps": 5}]
    )
    ev = aggregate_evaluation([1.0, 2.0], 0.0)  # the first episode (10 steps) is over the budget
    assert scoring.score_results(bench, "X-v0", ev)["scores"] == [0.0]
    assert math.isnan(scoring.score_results(bench, "X-v0", ev, legacy=True)["scores"][0])


@pytest.mark.legacy_gym
def test_live_2017_code_agrees(legacy_gym_python: str) -> None:
    # (not conftest.run_legacy_gym: "conftest" names a different module depending on collection order)
    env = {**os.environ, "GYM_NO_LOGGER_SETUP": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [legacy_gym_python, "-c", legacy_script()], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    live = json.loads(done.stdout)
    for name in CASES:
        assert live[name] == PINNED_2017[name], name
    for key in AGGREGATE_KEYS:  # the 2017 aggregate sums over a set: the order varies with the hash seed
        assert live["aggregate"][key] == pytest.approx(PINNED_2017["aggregate"][key], rel=1e-12, abs=0), key
