"""Seconds per move of palaestra's Go opponents, and of the 2017 opponent against 2017's own binding.

    .venv/bin/python bench/go_opponents.py [--moves 30] [--sizes 9 19]
        [--legacy-python /path/to/gym094/bin/python --legacy-pachi-py /path/to/built/pachi-py]

Each opponent answers the same random agent (legal points only, no pass, no resign) for ``--moves``
moves from the empty board of ``Go9x9-v0`` / ``Go19x19-v0``; an ``env.step`` is timed whole (the
agent's move, the opponent's reply, the observation) in wall-clock seconds, since the engines run in
their own processes. The median per opponent is printed.

The named peer is 2017's gym itself: ``--legacy-python`` (a Python with gym 0.9.4, such as the one
the test suite builds under .cache/gym094-venv) and ``--legacy-pachi-py`` (a folder holding a
``pachi_py`` package built from the pachi-py 0.0.21 source distribution) run the 2017
``Go9x9-v0`` / ``Go19x19-v0`` in a subprocess on the same moves' rules, and the ratio palaestra /
2017 is printed for the 2017 opponent. Built that way (docs/board-games.md says how), on a 2-core
machine: 0.10 s a move on 9x9 and 0.30 s on 19x19 for both.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import textwrap
import time

OPPONENTS = ["pachi:uct:_2400", "pachi:uct:=500", "gnugo:10", "gnugo:0", "mcts:200", "random"]

LEGACY_SCRIPT = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import gym
    env = gym.make(sys.argv[1])
    env.seed(0)
    obs = env.reset()
    rng = np.random.RandomState(0)
    n = env.unwrapped.board_size
    times = []
    for _ in range(int(sys.argv[2])):
        legal = np.flatnonzero(obs[2].reshape(-1) == 1)
        start = time.perf_counter()
        obs, reward, done, info = env.step(int(rng.choice(legal)))
        times.append(time.perf_counter() - start)
        if done:
            break
    print(" ".join(map(str, times)))
    """
)


def palaestra_seconds(env_id: str, opponent: str, moves: int) -> list[float]:
    """Wall-clock seconds of each env.step of a random agent against ``opponent``."""
    import gymnasium
    import numpy as np

    import palaestra.envs  # noqa: F401  (registers the ids)

    env = gymnasium.make(env_id, opponent=opponent)
    n = env.unwrapped.board_size  # type: ignore[attr-defined]
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    times = []
    try:
        for _ in range(moves):
            legal = np.flatnonzero(info["action_mask"][: n * n])
            start = time.perf_counter()
            _, _, terminated, truncated, info = env.step(int(rng.choice(legal)))
            times.append(time.perf_counter() - start)
            if terminated or truncated:
                break
    finally:
        env.close()
    return times


def legacy_seconds(python: str, pachi_py: str, env_id: str, moves: int) -> list[float]:
    """The same under gym 0.9.4 with 2017's pachi_py binding, in a subprocess."""
    done = subprocess.run(
        [python, "-c", LEGACY_SCRIPT, env_id, str(moves)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": pachi_py, "PATH": "/usr/bin:/bin"},
        timeout=3600,
    )
    return [float(t) for t in done.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=30, help="agent moves per opponent (default 30)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[9, 19], choices=[9, 19])
    parser.add_argument("--legacy-python", help="a Python with gym 0.9.4 installed")
    parser.add_argument("--legacy-pachi-py", help="a folder holding a built pachi_py package")
    args = parser.parse_args()
    for size in args.sizes:
        env_id = f"Go{size}x{size}-v0"
        print(f"{env_id}: median seconds per env.step over {args.moves} agent moves")
        medians = {}
        for opponent in OPPONENTS:
            # slow on 19x19; fewer moves suffice for the order of size
            slow = size == 19 and opponent in ("gnugo:10", "mcts:200")
            moves = min(args.moves, 10) if slow else args.moves
            times = palaestra_seconds(env_id, opponent, moves)
            medians[opponent] = statistics.median(times)
            print(f"  {opponent:<18} {medians[opponent]:8.4f} s   ({len(times)} moves)")
        if args.legacy_python and args.legacy_pachi_py:
            times = legacy_seconds(args.legacy_python, args.legacy_pachi_py, env_id, args.moves)
            legacy = statistics.median(times)
            ratio = medians["pachi:uct:_2400"] / legacy
            print(f"  2017 gym + pachi_py {legacy:8.4f} s   ({len(times)} moves)")
            print(f"  palaestra's 2017 opponent / 2017's: {ratio:.2f}x the time per move")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
