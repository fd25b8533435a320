"""The calibration games: every pair of anchor players that this machine can run plays a match.

The anchor players of a ladder (:data:`CALIBRATION_PLAYERS`) are the built-in opponents and the
GTP engines that are installed; ``palaestra anchors ENV_ID`` plays a round robin of matches between
them into one folder per pair, which ``palaestra upload`` sends and ``palaestra ratings`` rates.
The ratings' anchor (:data:`palaestra.ladder.ratings.DEFAULT_ANCHORS`) is among them.

Their names are reserved on a scoreboard (:func:`is_reserved_player`): a rating is only as good as
its anchor, so only the server's operator uploads games that name them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path

from palaestra.envs.board.gtp import find_binary
from palaestra.errors import DependencyNotInstalled
from palaestra.ladder.match import DEFAULT_MOVE_TIME, GameSummary, MatchRules, play_match, rules_of_env
from palaestra.ladder.players import parse_player
from palaestra.ladder.ratings import DEFAULT_ANCHORS

__all__ = [
    "AGENT_ANCHORS",
    "CALIBRATION_PLAYERS",
    "RESERVED_PLAYERS",
    "agent_anchors",
    "calibration_players",
    "is_reserved_player",
    "play_anchors",
]

#: Per game, the players of the calibration round robin, weakest first.
CALIBRATION_PLAYERS = {
    "Go": ("random", "mcts:100", "gnugo:0", "gnugo:10"),
    "Hex": ("random", "mcts:100", "mcts:1000"),
}

#: Per game, the anchors an uploaded agent plays when the board rates it (a subset of the calibration
#: players: the weakest, so that a job takes seconds, and two whose ratings are fixed anchors).
AGENT_ANCHORS = {
    "Go": ("random", "gnugo:0"),
    "Hex": ("random", "mcts:100"),
}

#: The player names only an operator uploads games of: the ratings' anchors, the calibration
#: players, and the short specs that stand for them (``gnugo`` is ``gnugo:10``, ``mcts`` is ``mcts:1000``).
RESERVED_PLAYERS = frozenset(
    {name for name, _ in DEFAULT_ANCHORS} | {p for players in CALIBRATION_PLAYERS.values() for p in players}
    | {"gnugo", "mcts"}
)


def is_reserved_player(name: str) -> bool:
    """Whether ``name`` is an anchor's (or calibration player's) name, in any letter case."""
    return name.strip().lower() in RESERVED_PLAYERS


def agent_anchors(env_id: str) -> list[str]:
    """The anchors an agent of ``env_id`` plays (:data:`AGENT_ANCHORS` whose programs are installed
    here): the board's worker and ``palaestra agent check`` play the same ones; [] for an env that is
    no board game."""
    import palaestra.envs

    if env_id not in palaestra.envs.BOARD_GAME_IDS:
        return []
    game = rules_of_env(env_id).game
    return calibration_players(game, AGENT_ANCHORS[game])


def calibration_players(game: str, players: tuple[str, ...] | None = None) -> list[str]:
    """The calibration players of ``game`` whose programs are installed here."""
    available = []
    for spec in players or CALIBRATION_PLAYERS[game]:
        if spec.startswith(("gnugo", "pachi")):
            try:
                find_binary(spec.split(":")[0])
            except DependencyNotInstalled:
                continue
        available.append(spec)
    return available


def play_anchors(
    rules: MatchRules,
    folder: str | os.PathLike[str],
    games: int,
    players: tuple[str, ...] | None = None,
    move_time: float = DEFAULT_MOVE_TIME,
    seed: int = 0,
    on_game: Callable[[str, int, GameSummary, dict[str, float]], None] | None = None,
) -> list[Path]:
    """Play ``games`` games between every pair of calibration players; the match folders."""
    folders = []
    for first, second in itertools.combinations(calibration_players(rules.game, players), 2):
        label = f"{first}-vs-{second}".replace(":", "")
        target = Path(folder) / label
        callback = None if on_game is None else (lambda n, s, p, label=label: on_game(label, n, s, p))
        play_match(rules, parse_player(first), parse_player(second), games, target, move_time, seed, callback)
        folders.append(target)
    return folders
