"""``palaestra results DIR [--plot FILE.png] [--json]``: summary, solved-at and the learning curve."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "results",
        help="summarise a training directory: episodes, best 100-episode mean, solved-at; plot it",
        description="Load the training directory DIR (as written by palaestra.Monitor or gym 0.9's Monitor), "
        "score it against its environment's solving rule (the scoreboard's numbers) and print a summary. "
        "--plot draws the learning curve (needs matplotlib: pip install 'palaestra[plot]').",
    )
    parser.add_argument("directory", metavar="DIR", help="the training directory")
    parser.add_argument(
        "--plot", metavar="FILE", help="write the learning curve to FILE (.png, .svg or .pdf)"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from palaestra.results_report import format_summary, plot_learning_curve, summarize

    summary = summarize(args.directory)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        print(format_summary(summary))
    if args.plot:
        path = plot_learning_curve(summary, args.plot)
        if not args.json:
            print(f"Learning curve:      {path}")
    return 0
