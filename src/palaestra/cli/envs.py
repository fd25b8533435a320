"""``palaestra envs [--group G] [--all]``: the environment ids, by scoreboard group."""

from __future__ import annotations

import argparse
from typing import Any

from palaestra.catalogue import GROUP_IDS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "envs",
        help="list environment ids by scoreboard group",
        description="List the environment ids this installation can run, by scoreboard group, with "
        "the reward threshold and the number of consecutive episodes (trials) that define 'solved'. "
        "Atari ids appear once ale-py is installed (pip install 'palaestra[atari]').",
    )
    parser.add_argument(
        "--group", choices=GROUP_IDS, metavar="GROUP", help=f"only this group: {', '.join(GROUP_IDS)}"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also list 2017 ids that no installed package registers any more (still scored by the scoreboard)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from palaestra import catalogue

    entries = catalogue.entries(args.group, include_unavailable=args.all)
    if not entries:
        print(f"No environments in group {args.group!r} in this installation.")
        if args.group == "atari":
            print("Atari environments need ale-py: pip install 'palaestra[atari]'")
        return 0
    width = max(len(e.env_id) for e in entries) + 2
    current = None
    for entry in entries:
        if entry.group != current:
            if current is not None:
                print()
            current = entry.group
            group = catalogue.group(entry.group)
            print(f"{group.name} ({group.id}): {group.description}")
            print(f"  {'ENV ID':<{width}}{'THRESHOLD':>10}  {'TRIALS':>6}  SUMMARY")
        threshold = "-" if entry.reward_threshold is None else f"{entry.reward_threshold:g}"
        if entry.reward_threshold is not None and float(entry.reward_threshold).is_integer():
            threshold = f"{entry.reward_threshold:.1f}"
        note = "" if entry.available else " (2017 id, not installed)"
        print(f"  {entry.env_id:<{width}}{threshold:>10}  {entry.trials:>6}  {entry.summary}{note}".rstrip())
    return 0
