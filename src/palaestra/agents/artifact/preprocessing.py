"""The observation preprocessings a descriptor may name, as Gymnasium wrappers around the protocol's env.

:func:`wrap` puts the descriptor's preprocessing on an env (under which the Monitor already records,
so that the recorded rewards, lengths and video are the env's own, not the preprocessed ones).
"""

from __future__ import annotations

from typing import Any

import gymnasium

from palaestra.agents.artifact.descriptor import AgentDescriptor

__all__ = ["wrap"]


def wrap(env: gymnasium.Env[Any, Any], descriptor: AgentDescriptor) -> gymnasium.Env[Any, Any]:
    """``env`` with the descriptor's preprocessing on it."""
    pre = descriptor.preprocessing
    if pre.name == "flatten":
        return gymnasium.wrappers.FlattenObservation(env)
    if pre.name == "atari":
        env = gymnasium.wrappers.AtariPreprocessing(
            env,
            noop_max=pre.noop_max,
            frame_skip=pre.frame_skip,
            screen_size=pre.screen_size,
            terminal_on_life_loss=False,
            grayscale_obs=pre.grayscale_obs,
            grayscale_newaxis=pre.grayscale_newaxis,
            scale_obs=pre.scale_obs,
        )
        return gymnasium.wrappers.FrameStackObservation(env, pre.stack)
    return env
