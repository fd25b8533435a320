"""Agents: the interface (:mod:`palaestra.agents.base`) and the built-in ones.

Built-in names (usable wherever ``module:factory`` is, e.g. ``palaestra run --agent cem``):

* ``random``: :mod:`palaestra.agents.random_agent`, samples the action space;
* ``cem``: :mod:`palaestra.agents.cem`, the cross-entropy method on a linear policy.

A user agent is any ``factory(observation_space, action_space) -> agent`` whose agent has
``act(observation)``, and optionally ``observe(observation, reward, terminated, truncated)`` and
``end_episode()``; name it ``package.module:factory``. A factory that also takes ``seed`` gets
``--seed``.

A trained policy submitted to a scoreboard, which evaluates it itself, is an *agent artifact*: an ONNX
model with a JSON descriptor (:mod:`palaestra.agents.artifact`, the ``agents`` extra).
"""

from palaestra.agents.base import (
    BUILTIN_AGENTS,
    Agent,
    AgentFactory,
    AgentSpecError,
    LearningAgent,
    end_episode,
    load_agent_factory,
    observe,
)

__all__ = [
    "BUILTIN_AGENTS",
    "Agent",
    "AgentFactory",
    "AgentSpecError",
    "LearningAgent",
    "end_episode",
    "load_agent_factory",
    "observe",
]
