"""Board-game agents: a Go or Hex artifact as a match player, and the plan of the board's matches.

* :func:`is_board_game` -- whether an env id is one of palaestra's board games (``Go9x9-v0``,
  ``Hex11x11-v0``, ...): their agents are rated by matches against the ladder's anchors, not by
  episodes.
* :func:`board_policy` -- a checked model as ``policy(observation, action_mask) -> action``, the form
  :class:`~palaestra.envs.board.opponents.CallableOpponent` plays: the model gets the env's
  observation (the planes black, white, empty of the player to move, as the env gives them) and gives
  one score per env action; the descriptor's ``argmax`` (or ``sample``) picks among the legal moves
  only (pass and resign included: a model that scores resign highest resigns).
* :func:`load_board_policy` -- the same from a model file and the descriptor beside it (checked first):
  ``onnx:PATH`` in ``palaestra match`` (:mod:`palaestra.ladder.players`).
* :class:`MatchPlan` -- what the board's worker asks the sandbox to play: the agent's ladder name, the
  anchors, the games against each, a seed per anchor and the time per move.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from palaestra.agents.artifact.checks import ArtifactInfo, check_artifact_bytes
from palaestra.agents.artifact.descriptor import AgentDescriptor, descriptor_path_for, load_descriptor
from palaestra.agents.artifact.policy import OnnxPolicy

__all__ = ["MatchPlan", "board_policy", "is_board_game", "load_board_policy"]


def is_board_game(env_id: str) -> bool:
    """Whether ``env_id`` is one of palaestra's board games (rated by matches, not episodes)."""
    import palaestra.envs

    return env_id in palaestra.envs.BOARD_GAME_IDS


@dataclasses.dataclass(frozen=True)
class MatchPlan:
    """The matches the board plays with an agent: ``games`` against each of ``opponents`` (player
    specs of :mod:`palaestra.ladder.players`), the agent named ``player``, match ``i`` seeded ``seeds[i]``."""

    player: str
    opponents: tuple[str, ...]
    games: int
    seeds: tuple[int, ...]
    move_time: float

    def __post_init__(self) -> None:
        if not self.opponents or len(self.seeds) != len(self.opponents) or self.games < 1:
            raise ValueError(f"a match plan needs at least one game against each opponent and one seed each: {self}")

    @property
    def total_games(self) -> int:
        return self.games * len(self.opponents)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> MatchPlan:
        document = json.loads(text)
        return cls(
            player=str(document["player"]),
            opponents=tuple(str(o) for o in document["opponents"]),
            games=int(document["games"]),
            seeds=tuple(int(s) for s in document["seeds"]),
            move_time=float(document["move_time"]),
        )


def board_policy(model: bytes, descriptor: AgentDescriptor, info: ArtifactInfo) -> Callable[[Any, Any], int]:
    """The checked ``model`` as ``policy(observation, action_mask) -> env action`` (see the module docstring)."""
    import gymnasium

    from palaestra.agents.artifact.protocol import make_protocol_env

    env = make_protocol_env(descriptor.env_id)
    try:
        action_space = env.action_space
    finally:
        env.close()
    if not isinstance(action_space, gymnasium.spaces.Discrete):
        raise ValueError(f"env {descriptor.env_id!r} is not a board game with discrete moves: {action_space}")
    policy = OnnxPolicy(model, descriptor, info, action_space)

    def act(observation: Any, action_mask: Any) -> int:
        return int(policy.act(observation, np.asarray(action_mask, dtype=bool)))

    return act


def load_board_policy(model_path: str | os.PathLike[str]) -> Callable[[Any, Any], int]:
    """:func:`board_policy` of the model at ``model_path`` and its descriptor beside it, checked first
    (:func:`~palaestra.agents.artifact.checks.check_artifact_bytes`; its errors name the problem)."""
    descriptor = load_descriptor(descriptor_path_for(model_path))
    with open(model_path, "rb") as f:
        data = f.read()
    return board_policy(data, descriptor, check_artifact_bytes(data, descriptor))
