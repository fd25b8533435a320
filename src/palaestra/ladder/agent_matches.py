"""The board's matches of an uploaded agent: a Go or Hex artifact against the ladder's anchors.

:func:`play_agent_matches` plays, for each anchor of a :class:`~palaestra.agents.artifact.board.MatchPlan`,
one match (:func:`palaestra.ladder.match.play_match`, colours alternating) into its own match folder
``vs-<anchor>`` under ``directory``: the folders that ``palaestra match`` writes and the ladder
checks by replay. It runs in whatever process calls it; the board calls it inside the agent sandbox
(``python -m palaestra.agents.artifact --match PLAN``, :func:`palaestra.agents.artifact.run_sandboxed`),
where GNU Go, spawned from inside, runs under the same limits and seccomp filter as the agent.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from palaestra.agents.artifact.board import MatchPlan, board_policy
from palaestra.agents.artifact.checks import ArtifactInfo
from palaestra.agents.artifact.descriptor import AgentDescriptor
from palaestra.agents.artifact.evaluate import load_checked
from palaestra.ladder.match import play_match, rules_of_env
from palaestra.ladder.players import PlayerSpec, parse_player

__all__ = ["match_folder_name", "play_agent_matches"]


def match_folder_name(opponent: str) -> str:
    """The match folder of the games against ``opponent`` (``vs-gnugo0`` for ``gnugo:0``)."""
    return "vs-" + "".join(c for c in opponent if c.isalnum() or c in "-_")


def play_agent_matches(
    model_path: str | os.PathLike[str],
    descriptor: AgentDescriptor,
    plan: MatchPlan,
    directory: str | os.PathLike[str],
    *,
    checked: ArtifactInfo | None = None,
    on_game: Callable[[int, float], None] | None = None,
) -> list[Path]:
    """Play the plan's matches (see the module docstring); the match folders, in the plan's order.

    ``on_game(index, points)`` follows each game: its index over the whole plan and the agent's points
    in it (1 a win, 0.5 a draw, 0 a loss).
    """
    data, info = load_checked(model_path, descriptor, checked)
    agent = PlayerSpec(plan.player, "onnx:artifact", policy=board_policy(data, descriptor, info))
    rules = rules_of_env(descriptor.env_id)
    folders = []
    for number, (opponent, seed) in enumerate(zip(plan.opponents, plan.seeds, strict=True)):
        folder = Path(directory) / match_folder_name(opponent)
        before = [0.0]

        def after_game(
            n: int, _summary: object, points: dict[str, float], number: int = number, before: list[float] = before
        ) -> None:
            gained, before[0] = points[plan.player] - before[0], points[plan.player]
            if on_game is not None:
                on_game(number * plan.games + n - 1, gained)

        play_match(rules, agent, parse_player(opponent), plan.games, folder, plan.move_time, seed, after_game)
        folders.append(folder)
    return folders
