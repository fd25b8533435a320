"""``palaestra ratings DIR... [--anchor NAME=RATING] [--json]``: rate the games of match folders."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ratings",
        help="Bradley-Terry ratings, with 95%% intervals, of the games in match folders",
        description="Rate every player of the games in the match folders DIR (Bradley-Terry on the Elo "
        "scale with a weak prior, 95%% Wald intervals), anchored on the first of "
        "gnugo:10 = 1800, gnugo:0 = 1500, mcts:1000 = 1000, random = 0 that played, or on --anchor. "
        "Games of one ladder only: one game and board size (and komi).",
    )
    parser.add_argument("folders", nargs="+", metavar="DIR", help="match folders")
    parser.add_argument("--anchor", metavar="NAME=RATING", help="hold this player at this rating")
    parser.add_argument("--json", action="store_true", help="print the ratings as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from palaestra.errors import Error
    from palaestra.ladder.match import match_games, rated_games, read_match
    from palaestra.ladder.ratings import DEFAULT_ANCHORS, rate

    anchors = DEFAULT_ANCHORS
    if args.anchor:
        name, _, value = args.anchor.rpartition("=")
        try:
            anchors = ((name, float(value)),)
        except ValueError:
            raise Error(f"--anchor {args.anchor!r}: write NAME=RATING, e.g. gnugo:10=1800") from None
    ladders = set()
    records = []
    for folder in args.folders:
        document = read_match(folder)
        ladders.add((document["game"], document["board_size"], document.get("komi")))
        records += [record for _, record in match_games(folder)]
    if len(ladders) > 1:
        raise Error(f"The folders hold games of {len(ladders)} ladders ({sorted(ladders)}); rate one at a time")
    ratings = rate(rated_games(records), anchors)
    if args.json:
        print(json.dumps([dataclasses.asdict(r) for r in ratings], indent=1))
        return 0
    print(f"{'player':<24} {'rating':>7} {'95% interval':>15} {'games':>6} {'points':>7}")
    for r in ratings:
        mark = " (anchor)" if r.is_anchor else "" if r.anchored else " (not connected to the anchor)"
        print(f"{r.player:<24} {r.rating:7.0f} {r.low:7.0f}-{r.high:<7.0f} {r.games:6d} {r.points:7g}{mark}")
    return 0
