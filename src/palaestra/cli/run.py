"""``palaestra run ENV_ID --agent A (--episodes N | --steps N) --monitor DIR``: record an agent's run."""

from __future__ import annotations

import argparse
from typing import Any

from palaestra.cli import add_progress_arguments, exits

#: The --agent choices, for every command that runs agents (run, benchmark run).
AGENTS_HELP = """\
agents:
  random           samples the action space
  cem              the cross-entropy method on a linear policy (numpy); solves CartPole-v1
  module:factory   your own: factory(observation_space, action_space) -> agent, where agent.act(obs)
                   returns an action and the optional agent.observe(obs, reward, terminated, truncated)
                   and agent.end_episode() let it learn; a factory with a `seed` argument gets --seed.
                   The module must be importable (e.g. in the current directory or on PYTHONPATH).
"""

AGENT_HELP = AGENTS_HELP + """
example:
  palaestra run CartPole-v1 --agent cem --episodes 1000 --stop-when-solved --monitor runs/cartpole
  palaestra results runs/cartpole --plot cartpole.png
  palaestra run Hex9x9-v0 --agent random --episodes 2000 --num-envs 64 --monitor runs/hex

With --num-envs N the run is one vector env of N sub-environments (gymnasium.make_vec) under one
vector Monitor, each sub-environment with an agent of its own; --steps then counts the steps of all.
"""


def positive_int(value: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run an agent on an environment under the Monitor",
        description="Run an agent on ENV_ID, recording every episode (and videos on the capped cubic "
        "schedule: episodes 0, 1, 8, 27, ..., 1000, 2000, ...) into the training directory DIR.",
        epilog=AGENT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("env_id", metavar="ENV_ID", help="a registered environment id (see `palaestra envs`)")
    parser.add_argument("--agent", required=True, help="random, cem or module:factory (see below)")
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("--episodes", type=positive_int, metavar="N", help="stop after N episodes")
    budget.add_argument("--steps", type=positive_int, metavar="N", help="stop after N steps")
    parser.add_argument(
        "--monitor", required=True, metavar="DIR", help="the training directory to record into"
    )
    video = parser.add_mutually_exclusive_group()
    video.add_argument(
        "--video",
        dest="video",
        action="store_true",
        default=True,
        help="record videos (the default; needs an env that renders rgb_array or ansi)",
    )
    video.add_argument("--no-video", dest="video", action="store_false", help="record no videos")
    parser.add_argument("--seed", type=int, default=None, help="seed the environment, action space and agent")
    parser.add_argument(
        "--num-envs",
        type=positive_int,
        default=1,
        metavar="N",
        help="run N sub-environments in one vector env, one agent each (default 1: a single env)",
    )
    parser.add_argument(
        "--vectorization",
        choices=["sync", "async", "vector_entry_point"],
        default=None,
        help="how --num-envs runs them (default: the env's own vector env if it has one, else sync)",
    )
    parser.add_argument(
        "--mode",
        choices=["training", "evaluation"],
        default="training",
        help="the episodes' type: only training episodes count towards 'solved' (default training)",
    )
    parser.add_argument(
        "--stop-when-solved",
        action="store_true",
        help="stop early once the environment's solving rule is met",
    )
    existing = parser.add_mutually_exclusive_group()
    existing.add_argument("--force", action="store_true", help="delete earlier results in DIR first")
    existing.add_argument("--resume", action="store_true", help="add this run to earlier results in DIR")
    add_progress_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import logging

    from palaestra.training import run_agent

    log = logging.getLogger("palaestra")
    _check_directory(args.monitor, args.force, args.resume)
    summary = run_agent(
        args.env_id,
        args.agent,
        args.monitor,
        episodes=args.episodes,
        steps=args.steps,
        video=args.video,
        seed=args.seed,
        mode=args.mode,
        force=args.force,
        resume=args.resume,
        stop_when_solved=args.stop_when_solved,
        progress=args.progress,
        num_envs=args.num_envs,
        vectorization_mode=args.vectorization,
    )
    print(
        f"Recorded {summary.episodes} episodes ({summary.steps} steps, {summary.videos} videos) of "
        f"{summary.env_id} in {summary.seconds:.1f} s into {summary.directory}"
    )
    if summary.best_mean is not None:
        print(f"Best {summary.trials}-episode mean: {summary.best_mean:.2f}")
    if summary.solved_at is not None:
        print(f"Solved after {summary.solved_at} episodes.")
    print(f"Next: palaestra results {summary.directory}    palaestra upload {summary.directory}")
    if summary.interrupted:
        log.warning("palaestra run: %s; the directory holds every episode that finished.", exits.interruption())
        return exits.interrupted_code()
    return exits.OK


def _check_directory(directory: str, force: bool, resume: bool) -> None:
    """Refuse a directory that already holds a run, in the command line's terms (--force/--resume)."""
    import os

    from palaestra.errors import MonitorError
    from palaestra.monitoring import detect_training_manifests

    if force or resume or not os.path.isdir(directory):
        return
    manifests = detect_training_manifests(directory)
    if manifests:
        raise MonitorError(
            f"{directory} already holds a run ({os.path.basename(manifests[0])}); use another --monitor "
            "directory, --force to replace the run or --resume to add to it"
        )
