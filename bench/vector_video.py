"""What a video from observations costs the vector Monitor: ale-py's AtariVectorEnv, which cannot
render, at 64 sub-environments, recorded with video off and with video on, side by side.

With video on, every episode of sub-environment 0 is recorded (``video_callable=lambda e: True``), so
a video is open for the whole run: each vector step hands the newest 84x84 frame of sub-environment
0's observation stack to the streaming ffmpeg recorder (palaestra.monitoring.video), which encodes it
in its own process. The bare AtariVectorEnv runs too, for scale. Each contender runs ``--steps``
vector steps (reset and close included), interleaved and repeated; the best wall-clock time of each
is kept (wall clock, since ffmpeg's work is in another process and competes for the same cores).
The CPU time of each run is printed too, this process's (ALE's threads included) and its children's
(ffmpeg), as the least of the repeats: on a busy machine the wall clock is noise at the 1 % level,
while the extra CPU time that video on takes is what it costs a machine with no core to spare.

Target (issue 27): video on costs at most 1 % of the steps per second of video off.

    .venv/bin/python bench/vector_video.py [--envs 64] [--steps 2000] [--repeats 5] [--game pong] [--rgb]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from ale_py.vector_env import AtariVectorEnv

import palaestra


def cpu_seconds() -> float:
    """CPU time of this process (all its threads) and of its finished children (ffmpeg)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run(make: Callable[[], Any], steps: int, seed: int = 0) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run: make, reset, ``steps`` random vector steps, close."""
    cpu = cpu_seconds()
    start = time.perf_counter()
    envs = make()
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, envs.single_action_space.n, (steps, envs.num_envs))
    envs.reset(seed=seed)
    step = envs.step
    for a in actions:
        step(a)
    envs.close()
    return time.perf_counter() - start, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=2000, help="vector steps per run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--game", default="pong")
    parser.add_argument("--rgb", action="store_true", help="RGB observations instead of grey")
    args = parser.parse_args()
    env_id = f"ALE/{args.game.title().replace('_', '')}-v5"

    def atari() -> AtariVectorEnv:
        return AtariVectorEnv(args.game, args.envs, grayscale=not args.rgb)

    with tempfile.TemporaryDirectory() as tmp:
        dirs = iter(f"{tmp}/{i}" for i in range(10**9))
        contenders: dict[str, Callable[[], Any]] = {
            "bare": atari,
            "video off": lambda: palaestra.Monitor(atari(), next(dirs), env_id=env_id, video_callable=False),
            "video on": lambda: palaestra.Monitor(atari(), next(dirs), env_id=env_id, video_callable=lambda e: True),
        }
        best = dict.fromkeys(contenders, float("inf"))
        least_cpu = dict.fromkeys(contenders, float("inf"))
        for repeat in range(args.repeats):
            for name, make in contenders.items():
                wall, cpu = run(make, args.steps, seed=repeat)
                best[name] = min(best[name], wall)
                least_cpu[name] = min(least_cpu[name], cpu)
    env_steps = args.steps * args.envs
    print(
        f"AtariVectorEnv({args.game!r}, {args.envs}, grayscale={not args.rgb}): {args.steps} vector steps a run, "
        f"best of {args.repeats}, wall clock"
    )
    for name, seconds in best.items():
        print(f"{name:>10}: {env_steps / seconds:10.0f} env-steps/s, {1e6 * least_cpu[name] / env_steps:7.1f} CPU us/env-step")
    cost = 1 - best["video off"] / best["video on"]
    cpu_cost = least_cpu["video on"] / least_cpu["video off"] - 1
    print(f"video on costs {100 * cost:.2f} % of video off's steps per second (target <= 1 %)")
    print(f"video on takes {100 * cpu_cost:.2f} % more CPU time than video off (ffmpeg included)")


if __name__ == "__main__":
    main()
