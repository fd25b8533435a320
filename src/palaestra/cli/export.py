"""``palaestra export results [--where NAME=VALUE,...] [--format csv|parquet] [-o FILE] [--server URL]``:
a scoreboard's results as one table, a row per evaluation (docs/export.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from palaestra.errors import ConfigurationError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="take a scoreboard's results out as a table",
        description="Take a scoreboard's results out as a table that pandas, polars or a spreadsheet reads.",
    )
    what = parser.add_subparsers(dest="export_what", metavar="WHAT", required=True)
    results = what.add_parser(
        "results",
        help="one row per evaluation (CSV or parquet)",
        description="Download the scoreboard's evaluations as one table (GET /v1/evaluations.csv or "
        ".parquet): env, algorithm, owner, conditions key, score, solved, episodes, steps, seeds, created, "
        "verified and the code's commit, one row per evaluation, oldest first.",
        epilog="The server comes from --server / $PALAESTRA_SERVER / $OPENAI_GYM_API_BASE, else from "
        "'palaestra login'; an API key is sent where one is configured.",
    )
    results.add_argument(
        "--where",
        metavar="NAME=VALUE,...",
        help="only these rows: env, algorithm, owner, conditions_key, solved, verified "
        "(e.g. env=CartPole-v1,solved=true)",
    )
    results.add_argument("--format", choices=("csv", "parquet"), help="default: from -o's suffix, else csv")
    results.add_argument("-o", "--output", metavar="FILE", help="write here (default: CSV on stdout)")
    results.add_argument("--server", metavar="URL", help="the scoreboard's base URL")
    results.set_defaults(handler=_export_results)


def _export_results(args: argparse.Namespace) -> int:
    from palaestra.scoreboard.client.results_export import export_results, format_of, parse_where

    fmt = format_of(args.format, args.output)
    if fmt == "parquet" and args.output is None:
        raise ConfigurationError("A parquet table is written to a file: add -o FILE.parquet")
    output = args.output if args.output else sys.stdout.buffer
    done = export_results(output, parse_where(args.where), fmt, server=args.server)
    if done.output is not None:
        print(f"Wrote {done.output} ({done.format}, {done.bytes} bytes) from {done.url}")
    else:
        sys.stdout.flush()
    return 0
