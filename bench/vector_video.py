"""What a video from observations costs the vector Monitor: ale-py's AtariVectorEnv, which cannot
render, at 64 sub-environments, recorded with video off and with video on, side by side.

With video on, every episode of sub-environment 0 is recorded (``video_callable=lambda e: True``), so
a video is open for the whole run: each vector step hands the newest 84x84 frame of sub-environment
0's observation stack to the streaming ffmpeg recorder (palaestra.monitoring.video), which encodes it
in its own process. The bare AtariVectorEnv runs too, for scale. Each contender runs ``--steps``
vector steps (reset and close included), interleaved and repeated; the best wall-clock time of each
is kept (wall clock, since ffmpeg's work is in another process and competes for the same cores).
The CPU time of each run is printed too, this process's (ALE's threads included) and its children's
(ffmpeg), as the least of the repeats. Both totals move by several per cent from run to run with
ALE's threads alone (on 2 shared cores, video on has come out 4 % *cheaper* than video off), so the
video's cost is also measured where it is spent, which is exact: the CPU time of the calling thread
from reset to close outside the env's own methods (the Monitor's work, frame hand-off included:
video on minus video off) plus ffmpeg's CPU time (the children's), against video off's CPU time per env-step. That is
what the video costs a machine with no core to spare; with one spare, ffmpeg runs beside the env.

Target (issue 27): video on costs at most 1 % of the steps per second of video off.

    .venv/bin/python bench/vector_video.py [--envs 64] [--steps 2000] [--repeats 5] [--game pong] [--rgb]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from ale_py.vector_env import AtariVectorEnv

import palaestra


def cpu_seconds() -> float:
    """CPU time of this process (all its threads) and of its finished children (ffmpeg)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def children_cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


class Run(NamedTuple):
    wall: float  # seconds, make to close
    cpu: float  # this process's threads and the finished children
    own: float  # the calling thread from reset to close, outside the env's methods: the Monitor's work
    ffmpeg: float  # the children's


class Timed:
    """A method of the env (``step``, ``reset``, ``close``), counting the calling thread's CPU time in it."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method, self.seconds = method, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return self.method(*args, **kwargs)
        finally:
            self.seconds += time.thread_time() - start


def run(make: Callable[[Callable[[Timed], None]], Any], steps: int, seed: int = 0) -> Run:
    """One run: make, reset, ``steps`` random vector steps, close."""
    cpu, children = cpu_seconds(), children_cpu_seconds()
    start = time.perf_counter()
    timed: list[Timed] = []
    envs = make(timed.append)
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, envs.single_action_space.n, (steps, envs.num_envs))
    own = time.thread_time()  # from here, outside the env's methods: the Monitor's work
    envs.reset(seed=seed)
    step = envs.step
    for a in actions:
        step(a)
    envs.close()
    own = time.thread_time() - own - sum(t.seconds for t in timed)
    return Run(time.perf_counter() - start, cpu_seconds() - cpu, own, children_cpu_seconds() - children)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=2000, help="vector steps per run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--game", default="pong")
    parser.add_argument("--rgb", action="store_true", help="RGB observations instead of grey")
    args = parser.parse_args()
    env_id = f"ALE/{args.game.title().replace('_', '')}-v5"

    def atari(register: Callable[[Timed], None]) -> AtariVectorEnv:
        env = AtariVectorEnv(args.game, args.envs, grayscale=not args.rgb)
        for name in ("step", "reset", "close"):
            method = Timed(getattr(env, name))
            setattr(env, name, method)
            register(method)
        return env

    with tempfile.TemporaryDirectory() as tmp:
        dirs = iter(f"{tmp}/{i}" for i in range(10**9))
        contenders: dict[str, Callable[[Any], Any]] = {
            "bare": lambda register: atari(register),
            "video off": lambda register: palaestra.Monitor(
                atari(register), next(dirs), env_id=env_id, video_callable=False
            ),
            "video on": lambda register: palaestra.Monitor(
                atari(register), next(dirs), env_id=env_id, video_callable=lambda e: True
            ),
        }
        runs: dict[str, list[Run]] = {name: [] for name in contenders}
        for repeat in range(args.repeats):
            for name, make in contenders.items():
                runs[name].append(run(make, args.steps, seed=repeat))
    best = {name: min(r.wall for r in rs) for name, rs in runs.items()}
    least_cpu = {name: min(r.cpu for r in rs) for name, rs in runs.items()}
    own = {name: min(r.own for r in rs) for name, rs in runs.items()}
    ffmpeg = min(r.ffmpeg for r in runs["video on"])
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
    video = own["video on"] - own["video off"] + ffmpeg
    print(
        "the calling thread from reset to close, outside the env's methods (the loop and the Monitor): "
        + ", ".join(f"{name} {1e6 * seconds / env_steps:.2f}" for name, seconds in own.items())
        + " us/env-step"
    )
    print(
        f"the video's own CPU time: {1e6 * (own['video on'] - own['video off']) / env_steps:.2f} us/env-step in "
        f"the Monitor (hand-off; the Monitor's whole work: {1e6 * own['video off'] / env_steps:.2f} off, "
        f"{1e6 * own['video on'] / env_steps:.2f} on) + {1e6 * ffmpeg / env_steps:.2f} us/env-step in ffmpeg "
        f"= {100 * video / least_cpu['video off']:.2f} % of video off's CPU time (target <= 1 %)"
    )


if __name__ == "__main__":
    main()
