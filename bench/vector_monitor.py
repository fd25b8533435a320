"""Whole-run overhead of palaestra's vector Monitor against Gymnasium's vector RecordEpisodeStatistics
and Stable-Baselines3's VecMonitor, at 1, 8, 64 and 512 sub-environments, and the Monitor's close().

The environment is as cheap as a vector env gets (numpy counters: sub-environment i's episodes last
50 + (37 i mod 101) steps, reward 1 a step), so what is measured is the wrapper, not the env. A run is
what the user waits for: wrapping the env, reset, ``--steps`` vector steps (10,000 by default) and
``close()`` -- the Monitor's close writes the stats file durably (issue 27: leaving close out made
the Monitor look 5x cheaper than it was). Each contender runs bare and wrapped, interleaved and
repeated; the best time of each is kept. Time is the wall clock, since close waits for the disk
(``--cpu`` for this process's CPU time, which other processes on a busy machine do not slow down).
Overhead = (wrapped run - bare run) / (steps x sub-environments), in ns per env-step; the ratio is
palaestra's over Gymnasium's. Close is the median of the Monitor's ``close()`` calls, in ms.

* Gymnasium: ``gymnasium.wrappers.vector.RecordEpisodeStatistics`` over the ``VectorEnv``.
* palaestra: ``palaestra.Monitor(vector_env, video_callable=False)`` (a ``VectorMonitor``), which also
  journals every episode to disk.
* SB3 (when stable-baselines3 is installed; it is not a palaestra dependency):
  ``VecMonitor`` over an SB3 ``VecEnv`` running the same counters (SB3's API: same-step autoreset,
  a list of info dicts), measured against that bare ``VecEnv``.

Targets (issues 19 and 27): palaestra's whole-run overhead at most half of Gymnasium's at 64 and 512
sub-environments, below VecMonitor's; close at most 20 ms at 64 sub-environments and 50 ms at 512.

    .venv/bin/python bench/vector_monitor.py [--repeats 7] [--steps 10000] [--sizes 8 64 512] [--autoreset next-step]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import palaestra

SIZES = (1, 8, 64, 512)
clock = time.perf_counter
MODES = {"next-step": AutoresetMode.NEXT_STEP, "same-step": AutoresetMode.SAME_STEP}


class Counters:
    """The cheap batch both APIs step: per sub-environment a step counter and an episode length."""

    def __init__(self, num_envs: int) -> None:
        self.lengths = 50 + (np.arange(num_envs) * 37) % 101
        self.t = np.zeros(num_envs, np.int64)
        self.observations = np.zeros((num_envs, 1), np.float32)
        self.ones = np.ones(num_envs)
        self.falses = np.zeros(num_envs, bool)


class CountingVectorEnv(VectorEnv[np.ndarray, np.ndarray, np.ndarray]):
    """A Gymnasium ``VectorEnv`` over :class:`Counters`, in next-step or same-step autoreset."""

    def __init__(self, num_envs: int, autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP) -> None:
        self.num_envs = num_envs
        self.c = Counters(num_envs)
        self.single_observation_space = spaces.Box(0, np.inf, (1,), np.float32)
        self.single_action_space = spaces.Discrete(2)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.metadata = {"autoreset_mode": autoreset_mode}
        self.spec = gym.envs.registration.EnvSpec("palaestra-bench/CountingVector-v0")
        self._same_step = autoreset_mode is AutoresetMode.SAME_STEP
        self._restart: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        self.c.t[:] = 0
        self._restart = None
        return self.c.observations, {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        c = self.c
        c.t += 1
        rewards = c.ones
        if self._restart is not None:  # next-step: these sub-environments reset now, reward 0
            c.t[self._restart] = 0
            rewards = np.where(self._restart, 0.0, 1.0)
        terminated = c.t >= c.lengths
        if self._same_step:
            c.t[terminated] = 0
        else:
            self._restart = terminated if terminated.any() else None
        return c.observations, rewards, terminated, c.falses, {}


def make_sb3_counting_env(num_envs: int) -> Any:
    """An SB3 ``VecEnv`` over :class:`Counters` (SB3 resets a finished sub-environment in the same step)."""
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv

    class CountingVecEnv(VecEnv):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(num_envs, spaces.Box(0, np.inf, (1,), np.float32), spaces.Discrete(2))
            self.c = Counters(num_envs)
            self.infos: list[dict[str, Any]] = [{} for _ in range(num_envs)]

        def reset(self) -> np.ndarray:
            self.c.t[:] = 0
            return self.c.observations

        def step_async(self, actions: np.ndarray) -> None:
            pass

        def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
            c = self.c
            c.t += 1
            dones = c.t >= c.lengths
            c.t[dones] = 0
            return c.observations, c.ones, dones, self.infos

        def close(self) -> None:
            pass

        def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
            return [None] * num_envs

        def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
            pass

        def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
            return [None] * num_envs

        def env_is_wrapped(self, wrapper_class: Any, indices: Any = None) -> list[bool]:
            return [False] * num_envs

    return CountingVecEnv()


class Run:
    """One whole run: wrap (``make``), reset, step, close; its time and its close's (wall clock)."""

    def __init__(self, make: Callable[[], Any], steps: int, sb3_api: bool = False) -> None:
        start = clock()
        env = make()
        actions = np.zeros(env.num_envs, np.int64)
        step = env.step
        if sb3_api:
            env.reset()
        else:
            env.reset(seed=0)
        for _ in range(steps):
            step(actions)
        closing = time.perf_counter()
        env.close()
        self.close_seconds = time.perf_counter() - closing
        self.seconds = clock() - start


def sb3_available() -> bool:
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        return False
    return True


def measure(
    num_envs: int, steps: int, repeats: int, mode: AutoresetMode, with_sb3: bool
) -> tuple[dict[str, float], float]:
    """Best whole-run time per vector step (seconds) of each contender; the median Monitor close (s)."""
    contenders: dict[str, tuple[Callable[[], Any], bool]] = {
        "bare": (lambda: CountingVectorEnv(num_envs, mode), False),
        "RecordEpisodeStatistics": (lambda: RecordEpisodeStatistics(CountingVectorEnv(num_envs, mode)), False),
        "palaestra": (lambda: palaestra.Monitor(CountingVectorEnv(num_envs, mode), next(dirs), video_callable=False), False),
    }
    if with_sb3:
        from stable_baselines3.common.vec_env import VecMonitor

        contenders["sb3 bare"] = (lambda: make_sb3_counting_env(num_envs), True)
        contenders["VecMonitor"] = (lambda: VecMonitor(make_sb3_counting_env(num_envs)), True)
    best = dict.fromkeys(contenders, float("inf"))
    closes = []
    with tempfile.TemporaryDirectory() as tmp:
        dirs = iter(f"{tmp}/{i}" for i in range(10**9))
        for _ in range(repeats):
            for name, (make, sb3_api) in contenders.items():
                run = Run(make, steps, sb3_api)
                best[name] = min(best[name], run.seconds)
                if name == "palaestra":
                    closes.append(run.close_seconds)
    return {name: t / steps for name, t in best.items()}, statistics.median(closes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10_000, help="vector steps per run")
    parser.add_argument("--autoreset", choices=list(MODES), default="next-step", help="the Gymnasium env's mode")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--cpu", action="store_true", help="time runs with this process's CPU time, not the wall clock")
    args = parser.parse_args()
    global clock
    if args.cpu:
        clock = time.process_time
    with_sb3 = sb3_available()
    if not with_sb3:
        print("stable-baselines3 is not installed: VecMonitor is not measured (pip install stable-baselines3)")
    print(
        f"autoreset mode {args.autoreset}; runs of {args.steps} vector steps, close included; overhead in ns per "
        f"env-step (wrapped run - bare run), best of {args.repeats}; {'CPU' if args.cpu else 'wall'} clock"
    )
    header = f"{'envs':>5} {'bare ns/step':>13} {'Gymnasium':>10} {'palaestra':>10} {'ratio':>6} {'close ms':>9}"
    if with_sb3:
        header += f" {'VecMonitor':>11} {'ratio':>6}"
    print(header)
    for n in args.sizes:
        t, close = measure(n, args.steps, args.repeats, MODES[args.autoreset], with_sb3)
        per_env_step = 1e9 / n
        gym_over = (t["RecordEpisodeStatistics"] - t["bare"]) * per_env_step
        ours = (t["palaestra"] - t["bare"]) * per_env_step
        line = f"{n:5d} {t['bare'] * 1e9:13.0f} {gym_over:10.1f} {ours:10.1f} {ours / gym_over:6.2f} {close * 1e3:9.1f}"
        if with_sb3:
            sb3_over = (t["VecMonitor"] - t["sb3 bare"]) * per_env_step
            line += f" {sb3_over:11.1f} {ours / sb3_over:6.2f}"
        print(line, flush=True)
    print(
        "targets: ratio to Gymnasium <= 0.50 at 64 and 512 sub-environments; below VecMonitor's; "
        "close <= 20 ms at 64 and <= 50 ms at 512"
    )


if __name__ == "__main__":
    main()
