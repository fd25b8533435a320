"""The players of a match: what ``palaestra match`` accepts for each side.

A player is written ``[NAME=]SPEC``; NAME (default: SPEC itself) is its name on the ladder, which
ratings are kept under. SPEC is one of the env opponents' forms
(:func:`palaestra.envs.board.opponents.make_opponent`) or a Python policy:

====================================  ========================================================
``random``                            uniform over the legal moves (pass included in Go)
``mcts:SIMS``                         OpenSpiel's UCT search, SIMS simulations a move
``gnugo`` / ``gnugo:LEVEL``           GNU Go over GTP (Go)
``pachi:ENGINE:TIME``                 Pachi over GTP (Go)
``gtp:COMMAND``                       any GTP engine, e.g. ``gtp:gnugo --mode gtp --level 3`` (Go)
``python:MODULE:CALLABLE``            ``CALLABLE(observation, action_mask) -> action`` (the env's
                                      observation planes and legal mask; returns an env action)
``onnx:PATH``                         an agent artifact: the ONNX model at PATH and its descriptor
                                      beside it, checked as the board checks it, its best legal move
                                      (:mod:`palaestra.agents.artifact.board`; the ``agents`` extra)
====================================  ========================================================

A :class:`PlayerSpec` may also carry its policy itself (``policy``: a callable as ``python:``'s),
as the board's sandbox plays an uploaded agent.

GTP engines get the match's time per move (the engine is stopped past it) and are never restarted
within a game: a crash is that game's forfeit; the next game starts the engine again.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from palaestra.envs.board.opponents import CallableOpponent, GTPOpponent, Opponent, make_opponent
from palaestra.envs.board.rules import BoardGame
from palaestra.errors import Error

__all__ = ["PlayerSpec", "make_player", "parse_player"]


#: The default settings of the short specs, spelt out, so that a setting has one ladder name.
_CANONICAL = {"gnugo": "gnugo:10", "mcts": "mcts:1000"}


@dataclasses.dataclass(frozen=True)
class PlayerSpec:
    """A side of a match: its ladder name and what plays it."""

    name: str
    spec: str
    #: the policy itself, ``policy(observation, action_mask) -> action``, instead of loading ``spec``
    policy: Any = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def in_process(self) -> bool:
        """Whether it plays in palaestra's own process (timed by a thread, not by a GTP timeout)."""
        return not self.spec.startswith(("gnugo", "pachi:", "gtp:"))


def parse_player(text: str) -> PlayerSpec:
    """``[NAME=]SPEC`` -> :class:`PlayerSpec` (the name defaults to the spec)."""
    name, equals, spec = text.partition("=")
    if not equals or " " in name or ":" in name:
        name, spec = text, text
    name, spec = name.strip(), spec.strip()
    if not equals or name == spec:  # one name for one setting: "gnugo" is "gnugo:10"
        name = _CANONICAL.get(spec, spec)
    if not spec or not name:
        raise Error(f"{text!r} is not a player: write SPEC or NAME=SPEC, e.g. 'gnugo:1' or 'mine=python:my.agent:act'")
    return PlayerSpec(name, spec)


def load_policy(spec: str) -> Any:
    """The callable that ``python:MODULE:CALLABLE`` names (imported: this runs the module's code)."""
    _, _, target = spec.partition(":")
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise Error(f"{spec!r}: write a Python policy as 'python:MODULE:CALLABLE', e.g. 'python:my.agent:act'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise Error(f"{spec!r}: cannot import {module_name!r}: {exc}") from None
    policy: Any = module
    for part in attribute.split("."):
        policy = getattr(policy, part, None)
        if policy is None:
            raise Error(f"{spec!r}: {module_name} has no {attribute!r}")
    if not callable(policy):
        raise Error(f"{spec!r}: {module_name}.{attribute} is not callable")
    return policy


def load_onnx_policy(spec: str) -> Any:
    """The agent artifact that ``onnx:PATH`` names, checked, as a policy (errors name the problem)."""
    from palaestra.agents.artifact.board import load_board_policy
    from palaestra.agents.artifact.checks import ArtifactError
    from palaestra.agents.artifact.descriptor import DescriptorError

    path = spec.partition(":")[2]
    if not path:
        raise Error(f"{spec!r}: write an agent artifact as 'onnx:PATH', e.g. 'onnx:agent.onnx' (its descriptor beside it)")
    try:
        return load_board_policy(path)
    except (ArtifactError, DescriptorError, OSError) as exc:
        raise Error(f"{spec!r}: {exc}") from None


def make_player(player: PlayerSpec, game: BoardGame, move_time: float) -> Opponent:
    """A new, unbound :class:`Opponent` playing ``player`` on ``game``, with ``move_time`` seconds a move."""
    if player.policy is not None:
        opponent: Opponent = CallableOpponent(player.policy)
    elif player.spec.startswith("python:"):
        opponent = CallableOpponent(load_policy(player.spec))
    elif player.spec.startswith("onnx:"):
        opponent = CallableOpponent(load_onnx_policy(player.spec))
    else:
        opponent = make_opponent(player.spec, game)
    if isinstance(opponent, GTPOpponent):
        opponent.engine.move_timeout = move_time
        opponent.engine.name = player.name  # its errors name the player
        opponent.max_restarts = 0  # a crash forfeits the game; the next game starts the engine again
    opponent.name = player.name
    return opponent
