"""Per-step overhead of palaestra's Monitor (statistics only) against Gymnasium's RecordEpisodeStatistics.

Runs the bare environment, the environment under ``RecordEpisodeStatistics`` and under
``palaestra.Monitor(video_callable=False)`` with the same seeded action sequence, interleaved and
repeated, and keeps each one's best time. Overhead = wrapped time - bare time, per step.
Target (issue 2): the Monitor's overhead at most half of RecordEpisodeStatistics'; issue 27 asks
for a margin, at most 0.4.

The times are the thread's CPU time (``time.thread_time``), not the wall clock: the overhead is CPU
work, and on a shared machine the wall clock also counts the time other processes hold the CPU,
which swamps differences of tens of nanoseconds. (An idle machine gives the same numbers either way.)
The load average is printed with the figures.

Issue 24: the Monitor with provenance (the default) against ``provenance=False`` (the Monitor before
provenance existed) in the same run: the per-step ratio (target: no measurable change, since the
provenance work happens at reset and close) and the one-off cost of its probe (first reset + close).

    .venv/bin/python bench/monitor_overhead.py [--steps 50000] [--repeats 21]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import RecordEpisodeStatistics

import palaestra


class ConstantEnv(gym.Env[int, int]):
    """As cheap as an environment gets: episodes of 100 steps returning constants."""

    observation_space = spaces.Discrete(1)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.t = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        self.t = 0
        return 0, {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return 0, 1.0, self.t >= 100, False, {}


def make_cheap() -> gym.Env[Any, Any]:
    env: gym.Env[Any, Any] = ConstantEnv()
    env.spec = gym.envs.registration.EnvSpec("palaestra-bench/Constant-v0", entry_point=ConstantEnv)
    return env


def make_cartpole() -> gym.Env[Any, Any]:
    return gym.make("CartPole-v1", disable_env_checker=True)


def one_off(make: Callable[[], gym.Env[Any, Any]], tmp: str, provenance: bool, repeats: int) -> float:
    """Seconds of a Monitor's first reset and its close (where the provenance work happens), best of."""
    best = float("inf")
    for i in range(repeats):
        env = palaestra.Monitor(
            make(), f"{tmp}/one-off-{provenance}-{i}", video_callable=False, provenance=provenance
        )
        start = time.perf_counter()
        env.reset(seed=0)
        env.close()
        best = min(best, time.perf_counter() - start)
    return best


def run(env: gym.Env[Any, Any], actions: np.ndarray) -> float:
    step, reset = env.step, env.reset
    reset(seed=0)
    start = time.thread_time()
    for a in actions:
        _, _, terminated, truncated, _ = step(a)
        if terminated or truncated:
            reset()
    return time.thread_time() - start


def measure(make: Callable[[], gym.Env[Any, Any]], steps: int, repeats: int) -> dict[str, float]:
    actions = np.random.default_rng(0).integers(0, 2, steps).tolist()
    best = dict.fromkeys(
        ["bare", "RecordEpisodeStatistics", "palaestra.Monitor", "no provenance"], float("inf")
    )
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            variants = {
                "bare": make(),
                "RecordEpisodeStatistics": RecordEpisodeStatistics(make()),
                "palaestra.Monitor": palaestra.Monitor(make(), f"{tmp}/{i}", video_callable=False),
                "no provenance": palaestra.Monitor(
                    make(), f"{tmp}/{i}-off", video_callable=False, provenance=False
                ),
            }
            for name, env in variants.items():
                best[name] = min(best[name], run(env, actions))
                env.close()
        ns = {name: t / steps * 1e9 for name, t in best.items()}  # ns per step
        ns["one-off with provenance"] = one_off(make, tmp, True, max(3, repeats // 4)) * 1e9
        ns["one-off without"] = one_off(make, tmp, False, max(3, repeats // 4)) * 1e9
    return ns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    for label, make in (("trivially cheap env", make_cheap), ("CartPole-v1", make_cartpole)):
        ns = measure(make, args.steps, args.repeats)
        res = ns["RecordEpisodeStatistics"] - ns["bare"]
        mon = ns["palaestra.Monitor"] - ns["bare"]
        print(f"{label}: bare {ns['bare']:.0f} ns/step")
        print(f"  RecordEpisodeStatistics overhead {res:6.0f} ns/step")
        print(f"  palaestra.Monitor       overhead {mon:6.0f} ns/step")
        off = ns["no provenance"] - ns["bare"]
        print(f"  ratio Monitor/RecordEpisodeStatistics overhead = {mon / res:.2f} (target <= 0.40)")
        print(f"  Monitor without provenance overhead {off:6.0f} ns/step")
        print(
            f"  ratio per-step time with/without provenance = {ns['palaestra.Monitor'] / ns['no provenance']:.3f}"
        )
        print(
            f"  first reset + close: {ns['one-off with provenance'] / 1e6:.1f} ms with provenance, "
            f"{ns['one-off without'] / 1e6:.1f} ms without"
        )


if __name__ == "__main__":
    main()
