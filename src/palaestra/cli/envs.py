"""``palaestra envs [--group G] [--all] [--json]``: the environment ids, by scoreboard group."""

from __future__ import annotations

import argparse
import json
from typing import Any

from palaestra.catalogue import GROUP_IDS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "envs",
        help="list environment ids by scoreboard group",
        description="List the environment ids this installation can run, by scoreboard group, with "
        "the reward threshold and the number of consecutive episodes (trials) that define 'solved'. "
        "The ids of the 2017 registry are marked; --all also lists the ids that cannot run here, with "
        "the reason and what to install (Atari: pip install 'palaestra[atari]', MuJoCo: "
        "'palaestra[mujoco]', Box2D: 'palaestra[box2d]').",
    )
    parser.add_argument(
        "--group", choices=GROUP_IDS, metavar="GROUP", help=f"only this group: {', '.join(GROUP_IDS)}"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also list the ids this installation cannot run, with why (the scoreboard still scores them)",
    )
    parser.add_argument("--json", action="store_true", help="print the ids as JSON, for scripts")
    parser.set_defaults(handler=run)


def _threshold(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if float(value).is_integer() else f"{value:g}"


def _note(entry: Any) -> str:
    notes = []
    row = entry.legacy
    if row is not None:
        made_by = f", made by {row.made_by}" if row.successor and row.successor != entry.env_id else ""
        # a 2017 run of it is judged by 2017's threshold (catalogue.solving_criteria)
        era = f"; 2017 runs: threshold {_threshold(row.reward_threshold)}" if row.reward_threshold != entry.reward_threshold else ""
        notes.append(f"(2017 id{made_by}{era})")
    if entry.unavailable_reason:
        notes.append(f"-- cannot run here: {entry.unavailable_reason}")
    return " ".join(notes)


def run(args: argparse.Namespace) -> int:
    from palaestra import catalogue

    everything = catalogue.entries(args.group, include_unavailable=True)
    entries = everything if args.all else [e for e in everything if e.available]
    if args.json:
        print(json.dumps([_entry_document(e) for e in entries], indent=2))
        return 0
    if not entries:
        print(f"No environments in group {args.group!r} that this installation can run.")
        if args.group == "atari":
            print("Atari environments need ale-py: pip install 'palaestra[atari]'")
        elif everything:
            print("palaestra envs --all lists them with what to install.")
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
        line = f"  {entry.env_id:<{width}}{_threshold(entry.reward_threshold):>10}  {entry.trials:>6}  {entry.summary}"
        print(f"{line} {_note(entry)}".rstrip())
    hidden = len(everything) - len(entries)
    if hidden:
        print(f"\n{hidden} more ids cannot run in this installation: palaestra envs --all lists them, with why.")
    return 0


def _entry_document(entry: Any) -> dict[str, Any]:
    """One id of ``palaestra envs --json``."""
    return {
        "env_id": entry.env_id,
        "group": entry.group,
        "summary": entry.summary,
        "reward_threshold": entry.reward_threshold,
        "trials": entry.trials,
        "max_episode_steps": entry.max_episode_steps,
        "available": entry.available,
        "unavailable_reason": entry.unavailable_reason,
        "legacy_2017": entry.legacy is not None,
    }
