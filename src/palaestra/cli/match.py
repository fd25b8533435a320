"""``palaestra match ENV_ID PLAYER PLAYER [--games N] [--out DIR]``: a match between two players."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "match",
        help="play N board games between two players (colours alternating) into a match folder",
        description="Play GAMES games of ENV_ID (Go9x9-v0, Go13x13-v0, Go19x19-v0, Hex9x9-v0, Hex11x11-v0) "
        "between two players, the first playing black in the odd games, with the env's board and komi "
        "(Go is counted on the board, Tromp-Taylor). A player is [NAME=]SPEC: random, mcts:SIMS, "
        "gnugo[:LEVEL], pachi:ENGINE:TIME, gtp:COMMAND, onnx:PATH (an agent artifact) or python:MODULE:CALLABLE (a policy "
        "f(observation, action_mask) -> action). Each game is written as SGF (Go) or a Hex record, "
        "and match.json after every game; `palaestra upload DIR` puts the match on a scoreboard ladder.",
    )
    parser.add_argument("env_id", metavar="ENV_ID", help="the board game, e.g. Go9x9-v0")
    parser.add_argument("first", metavar="PLAYER", help="black in the odd games")
    parser.add_argument("second", metavar="PLAYER", help="black in the even games")
    parser.add_argument("--games", type=int, default=10, help="games to play (default 10)")
    parser.add_argument("--out", metavar="DIR", help="the match folder (new or empty; default match-<time>)")
    parser.add_argument(
        "--move-time", type=float, default=None, metavar="SECONDS",
        help="seconds a player has for each move before it loses on time (default 30)",
    )  # fmt: skip
    parser.add_argument("--komi", type=float, default=None, help="Go: the komi (default: the env's)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the players of every game (default 0)")
    parser.set_defaults(handler=run)


def print_game(label: str, number: int, total: int, summary: Any, points: dict[str, float]) -> None:
    """One progress line on stderr after a game."""
    standing = ", ".join(f"{name} {value:g}" for name, value in points.items())
    print(
        f"{label}game {number}/{total}: {summary.black} (B) - {summary.white} (W) {summary.result} "
        f"({summary.reason}, {summary.moves} moves, {summary.seconds:.1f} s); {standing}",
        file=sys.stderr,
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    import time

    from palaestra.ladder.match import DEFAULT_MOVE_TIME, play_match, rules_of_env
    from palaestra.ladder.players import parse_player

    rules = rules_of_env(args.env_id, args.komi)
    folder = args.out or time.strftime("match-%Y%m%d-%H%M%S")
    play_match(
        rules, parse_player(args.first), parse_player(args.second), args.games, folder,
        move_time=args.move_time or DEFAULT_MOVE_TIME, seed=args.seed,
        on_game=lambda number, summary, points: print_game("", number, args.games, summary, points),
    )  # fmt: skip
    print(folder)
    return 0
