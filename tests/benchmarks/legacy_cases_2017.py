"""Fixed synthetic inputs for pinning palaestra's ``legacy=True`` scores against the 2017 code.

``LEGACY_SCRIPT`` runs the original scorers of gym 0.9.4 (``gym.benchmarks.scoring``, identical to
the mid-2017 code of spec §5.3/§5.4) on ``CASES`` and prints the results as JSON; the numbers pinned
in test_benchmark_legacy_scoring.py were produced by running it once (see that file).
"""

from __future__ import annotations

from typing import Any

# The evaluations use env ids that gym 0.9.4 registers (its scorers call gym.envs.spec(env_id)).
CASES: dict[str, dict[str, Any]] = {
    # Interleaved training ('t') and evaluation ('e') episodes with a timestep cut-off: the 2017
    # evaluation-episode indexing quirk changes the score.
    "interleaved": {
        "scorer": ["ClipTo01ThenAverage", 4],
        "env_id": "CartPole-v0",
        "tasks": [
            {
                "env_id": "CartPole-v0",
                "trials": 1,
                "max_timesteps": 60,
                "reward_floor": 0.0,
                "reward_ceiling": 100.0,
            },
            {
                "env_id": "CartPole-v0",
                "trials": 1,
                "max_timesteps": 1000,
                "reward_floor": 0.0,
                "reward_ceiling": 100.0,
            },
        ],
        "evaluation": {
            "data_sources": [0] * 12,
            "initial_reset_timestamps": [1000.0],
            "episode_lengths": [10, 20, 5, 15, 5, 25, 5, 5, 30, 5, 10, 5],
            "episode_rewards": [10.0, 20.0, 150.0, 30.0, 90.0, 40.0, 120.0, 100.0, 50.0, 80.0, 60.0, 110.0],
            "episode_types": ["t", "t", "e", "t", "e", "t", "e", "e", "t", "e", "t", "e"],
            "timestamps": [1001.0 + 0.5 * i for i in range(12)],
        },
    },
    # Only training episodes: every episode is also an evaluation episode (no divergence).
    "all_training": {
        "scorer": ["ClipTo01ThenAverage", 3],
        "env_id": "CartPole-v0",
        "tasks": [
            {
                "env_id": "CartPole-v0",
                "trials": 1,
                "max_timesteps": 12,
                "reward_floor": 0.0,
                "reward_ceiling": 4.0,
            }
        ],
        "evaluation": {
            "data_sources": [0, 0, 0, 0],
            "initial_reset_timestamps": [50.0],
            "episode_lengths": [5, 5, 5, 5],
            "episode_rewards": [1.0, 2.0, 3.0, 4.0],
            "episode_types": ["t", "t", "t", "t"],
            "timestamps": [51.0, 52.5, 53.0, 55.25],
        },
    },
    # Two sources (two monitors merged), a step budget and a seconds budget.
    "two_sources_total_reward": {
        "scorer": ["TotalReward"],
        "env_id": "Pendulum-v0",
        "tasks": [
            {
                "env_id": "Pendulum-v0",
                "trials": 1,
                "max_timesteps": 50,
                "reward_floor": -100.0,
                "reward_ceiling": 100.0,
            },
            {
                "env_id": "Pendulum-v0",
                "trials": 1,
                "max_seconds": 3.2,
                "reward_floor": -100.0,
                "reward_ceiling": 100.0,
            },
        ],
        "evaluation": {
            "data_sources": [0, 1, 0, 1, 1, 0, 1, 0],
            "initial_reset_timestamps": [1000.0, 1000.4],
            "episode_lengths": [10, 8, 12, 6, 9, 7, 11, 5],
            "episode_rewards": [-50.0, 10.0, 30.0, 100.0, 120.0, -20.0, 60.0, 90.0],
            "episode_types": ["t", "e", "t", "t", "e", "t", "t", "e"],
            "timestamps": [1000.5, 1000.9, 1001.6, 1002.0, 1002.3, 1002.9, 1003.5, 1004.1],
        },
    },
    "two_sources_reward_per_time": {
        "scorer": ["RewardPerTime"],
        "env_id": "Pendulum-v0",
        "tasks": [
            {
                "env_id": "Pendulum-v0",
                "trials": 1,
                "max_timesteps": 50,
                "reward_floor": 0.0,
                "reward_ceiling": 50.0,
            },
            {
                "env_id": "Pendulum-v0",
                "trials": 1,
                "max_seconds": 3.2,
                "reward_floor": 0.0,
                "reward_ceiling": 50.0,
            },
        ],
        "evaluation": "two_sources_total_reward",
    },
}

# A benchmark run: CartPole-v0 has one ceiling episode per trial (2017 "solved", not solved by the
# fixed rule), MountainCar-v0 reaches the ceiling in every scored episode (solved by both),
# Acrobot-v1 is missing its second trial (unsolved, zero-padded).
AGGREGATE_CASE: dict[str, Any] = {
    "scorer": ["ClipTo01ThenAverage", 3],
    "tasks": [
        {
            "env_id": "CartPole-v0",
            "trials": 2,
            "max_timesteps": 1000,
            "reward_floor": 0.0,
            "reward_ceiling": 100.0,
        },
        {
            "env_id": "MountainCar-v0",
            "trials": 2,
            "max_timesteps": 1000,
            "reward_floor": -200.0,
            "reward_ceiling": -100.0,
        },
        {
            "env_id": "Acrobot-v1",
            "trials": 2,
            "max_timesteps": 1000,
            "reward_floor": -500.0,
            "reward_ceiling": 0.0,
        },
    ],
    "evaluations": [
        ["CartPole-v0", [50.0, 120.0, 60.0, 70.0], 100.0],
        ["CartPole-v0", [100.0, 20.0, 30.0], 200.0],
        ["MountainCar-v0", [-90.0, -100.0, -80.0], 300.0],
        ["MountainCar-v0", [-150.0, -100.0, -95.0, -99.0], 400.0],
        ["Acrobot-v1", [-10.0, 0.0, -5.0], 500.0],
    ],
}


def aggregate_evaluation(rewards: list[float], start: float) -> dict[str, Any]:
    """An all-training evaluation with episodes of 10 steps, one every 1.5 s from ``start``."""
    n = len(rewards)
    return {
        "data_sources": [0] * n,
        "initial_reset_timestamps": [start],
        "episode_lengths": [10] * n,
        "episode_rewards": rewards,
        "episode_types": ["t"] * n,
        "timestamps": [start + 1.5 * (i + 1) for i in range(n)],
    }


def evaluation_of(name: str) -> dict[str, Any]:
    evaluation = CASES[name]["evaluation"]
    return CASES[evaluation]["evaluation"] if isinstance(evaluation, str) else evaluation


LEGACY_SCRIPT = r"""
import json
import numpy as np
from gym.benchmarks import scoring
from gym.benchmarks.registration import Benchmark

CASES = json.loads(__CASES__)
AGG = json.loads(__AGG__)

def scorer(spec):
    return getattr(scoring, spec[0])(*spec[1:])

def plain(x):
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return plain(x.tolist())
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        return float(x)
    return x

def evaluation_of(name):
    ev = CASES[name]["evaluation"]
    return CASES[ev]["evaluation"] if isinstance(ev, str) else ev

out = {}
for name, case in CASES.items():
    b = Benchmark(id="Pin-" + name, scorer=scorer(case["scorer"]), tasks=case["tasks"])
    ev = evaluation_of(name)
    r = b.score_evaluation(case["env_id"], ev["data_sources"], ev["initial_reset_timestamps"],
                           ev["episode_lengths"],
                           ev["episode_rewards"], ev["episode_types"], ev["timestamps"])
    out[name] = plain(r)

b = Benchmark(id="PinAggregate", scorer=scorer(AGG["scorer"]), tasks=AGG["tasks"])
per_env = {}
for env_id, rewards, start in AGG["evaluations"]:
    n = len(rewards)
    ev = dict(data_sources=[0] * n, initial_reset_timestamps=[start], episode_lengths=[10] * n,
              episode_rewards=rewards, episode_types=["t"] * n,
              timestamps=[start + 1.5 * (i + 1) for i in range(n)])
    per_env.setdefault(env_id, []).append(b.score_evaluation(env_id, **ev))
out["aggregate"] = plain(scoring.benchmark_aggregate_score(b, per_env))
print(json.dumps(out))
"""


def legacy_script() -> str:
    """The script with the cases filled in (for ``run_legacy_gym``)."""
    import json

    return LEGACY_SCRIPT.replace("__CASES__", repr(json.dumps(CASES))).replace(
        "__AGG__", repr(json.dumps(AGGREGATE_CASE))
    )
