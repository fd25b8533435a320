"""``palaestra anchors ENV_ID [--games N] [--out DIR]``: the calibration games of a ladder."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "anchors",
        help="play the calibration games between the built-in opponents and the installed engines",
        description="Play a round robin of GAMES-game matches between the calibration players of ENV_ID "
        "(Go: random, mcts:100, gnugo:0, gnugo:10; Hex: random, mcts:100, mcts:1000; engines that are "
        "not installed are left out), one match folder per pair under DIR. Upload them (palaestra upload "
        "DIR/*) or rate them (palaestra ratings DIR/*): the ladder's scale is anchored on gnugo:10 = 1800.",
    )
    parser.add_argument("env_id", metavar="ENV_ID", help="the board game, e.g. Go9x9-v0")
    parser.add_argument("--games", type=int, default=10, help="games per pair (default 10)")
    parser.add_argument("--out", metavar="DIR", default="anchors", help="the folder of the matches (default anchors)")
    parser.add_argument("--players", nargs="+", metavar="SPEC", help="other calibration players")
    parser.add_argument("--move-time", type=float, default=30.0, metavar="SECONDS", help="seconds a move (30)")
    parser.add_argument("--komi", type=float, default=None, help="Go: the komi (default: the env's)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from palaestra.cli.match import print_game
    from palaestra.ladder.anchors import play_anchors
    from palaestra.ladder.match import rules_of_env

    rules = rules_of_env(args.env_id, args.komi)
    folders = play_anchors(
        rules, args.out, args.games, tuple(args.players) if args.players else None, args.move_time,
        on_game=lambda label, number, summary, points: print_game(f"{label}: ", number, args.games, summary, points),
    )  # fmt: skip
    for folder in folders:
        print(folder)
    return 0
