"""The board's protocol: how every evaluation of an env id is run, whoever's agent it is.

One function, :func:`protocol_kwargs`, gives the arguments the board makes each env with, and
:func:`make_protocol_env` makes it. For Atari (ale-py's ids and palaestra's 2017 ids alike) they are
Machado et al.'s recommendations (2018, "Revisiting the Arcade Learning Environment"): sticky
actions with probability 0.25, the full action set of 18 actions, and at most 108,000 frames (30
minutes of play) an episode; an episode is the whole game, never a life. Every other env is made as
registered. The Monitor records these arguments in the provenance, so the evaluation's conditions
card (:mod:`palaestra.scoreboard.server.evaluations.conditions`) says them.
"""

from __future__ import annotations

from typing import Any

import gymnasium

__all__ = ["ATARI_PROTOCOL", "is_atari", "make_protocol_env", "protocol_kwargs"]

#: The arguments of every Atari evaluation (Machado et al. 2018).
ATARI_PROTOCOL: dict[str, Any] = {
    "repeat_action_probability": 0.25,
    "full_action_space": True,
    "max_num_frames_per_episode": 108_000,
}


def is_atari(env_id: str) -> bool:
    """Whether ``env_id`` is an Atari game (ale-py's ids, or palaestra's 2017 ids on ale-py)."""
    from palaestra.catalogue import register_ale_py

    if env_id.startswith("ALE/"):
        register_ale_py()
    spec = gymnasium.spec(env_id)
    entry_point = spec.entry_point if isinstance(spec.entry_point, str) else ""
    return "ale_py" in entry_point or entry_point.startswith("palaestra.envs.legacy.atari")


def protocol_kwargs(env_id: str) -> dict[str, Any]:
    """The arguments the board makes ``env_id`` with (beyond its registered ones)."""
    return dict(ATARI_PROTOCOL) if is_atari(env_id) else {}


def make_protocol_env(env_id: str, render_mode: str | None = None) -> gymnasium.Env[Any, Any]:
    """``gymnasium.make(env_id, **protocol_kwargs(env_id))``, rendering as asked."""
    kwargs = protocol_kwargs(env_id)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    return gymnasium.make(env_id, **kwargs)
