"""``palaestra import sb3 FILE... --out DIR [--env-id ID]`` and ``palaestra import tensorboard PATH --out DIR
[--env-id ID]``: bring other tools' records into palaestra."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="turn other tools' episode records into a training directory",
        description="Turn other tools' episode records into a palaestra training directory that "
        "'palaestra results' reads and 'palaestra upload' uploads.",
    )
    kinds = parser.add_subparsers(dest="import_kind", metavar="KIND", required=True)
    sb3 = kinds.add_parser(
        "sb3",
        help="Stable-Baselines3 monitor.csv files",
        description="Convert Stable-Baselines3 monitor.csv files (one per environment process; a directory "
        "stands for the *monitor.csv files in it) into one training directory.",
    )
    sb3.add_argument("files", nargs="+", metavar="FILE", help="monitor.csv files or directories holding them")
    sb3.add_argument("--out", required=True, metavar="DIR", help="the training directory to write")
    sb3.add_argument("--env-id", metavar="ID", help="the env id (default: the one in the files' '#' header)")
    sb3.add_argument("--force", action="store_true", help="replace a training run already in --out")
    sb3.set_defaults(handler=_import_sb3)
    tensorboard = kinds.add_parser(
        "tensorboard",
        help="TensorBoard event files of a CleanRL or Stable-Baselines3 run",
        description="Convert one run's TensorBoard event files into a training directory: CleanRL's "
        "charts/episodic_return and charts/episodic_length (one episode each), else Stable-Baselines3's "
        "rollout/ep_rew_mean and rollout/ep_len_mean (approximate episodes; the import says so).",
    )
    tensorboard.add_argument("path", metavar="PATH", help="an event file, or the folder of one run's event files")
    tensorboard.add_argument("--out", required=True, metavar="DIR", help="the training directory to write")
    tensorboard.add_argument(
        "--env-id", metavar="ID", help="the env id (default: the one in a CleanRL run folder's name)"
    )
    tensorboard.add_argument("--force", action="store_true", help="replace a training run already in --out")
    tensorboard.set_defaults(handler=_import_tensorboard)


def _import_sb3(args: argparse.Namespace) -> int:
    from palaestra.monitoring.sb3_import import import_sb3

    summary = import_sb3(args.files, args.out, env_id=args.env_id, force=args.force)
    print(
        f"Imported {summary.episodes} episodes of {summary.env_id} from {len(summary.manifests)} file(s) "
        f"into {summary.directory}"
    )
    return 0


def _import_tensorboard(args: argparse.Namespace) -> int:
    from palaestra.monitoring.tensorboard_import import import_tensorboard

    done = import_tensorboard(args.path, args.out, env_id=args.env_id, force=args.force)
    print(
        f"Imported {done.episodes} episodes of {done.env_id} from {done.source} ({done.tags[0]}) "
        f"into {done.directory}"
    )
    for note in done.notes:
        print(f"Note: the episodes are {note}.")
    return 0
