"""The agent interface that ``palaestra run`` and the benchmark runner drive.

An agent is made by a *factory* ``factory(observation_space, action_space) -> Agent``; on the
command line it is named ``module:factory`` (or a built-in short name such as ``random``).

The loop that drives an agent (see :func:`palaestra.benchmarks.runner`) is::

    agent = factory(env.observation_space, env.action_space)
    obs, info = env.reset(seed=...)
    while budget left:
        action = agent.act(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        agent.observe(obs, reward, terminated, truncated)      # if the agent has it
        if terminated or truncated:
            agent.end_episode()                                # if the agent has it
            obs, info = env.reset()

Only ``act`` is required; ``observe`` and ``end_episode`` are optional hooks, called when the agent
defines them (use :func:`observe` and :func:`end_episode` here to call them safely).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, cast, runtime_checkable

import gymnasium as gym

from palaestra.errors import Error

__all__ = [
    "BUILTIN_AGENTS",
    "Agent",
    "AgentFactory",
    "LearningAgent",
    "end_episode",
    "load_agent_factory",
    "observe",
]


@runtime_checkable
class Agent(Protocol):
    """What every agent has: choose an action for an observation."""

    def act(self, observation: Any) -> Any:
        """Return an action (an element of the env's action space) for ``observation``."""
        ...


@runtime_checkable
class LearningAgent(Agent, Protocol):
    """An agent that also learns from what happens (both hooks are optional for plain agents)."""

    def observe(self, observation: Any, reward: float, terminated: bool, truncated: bool) -> None:
        """Called after every step with the step's result (``observation`` is the *next* observation)."""
        ...

    def end_episode(self) -> None:
        """Called once when an episode ends (terminated or truncated), before the next reset."""
        ...


AgentFactory = Callable[[gym.Space[Any], gym.Space[Any]], Agent]
"""``factory(observation_space, action_space) -> Agent``."""

#: Short names accepted wherever ``module:factory`` is: name -> "module:factory".
BUILTIN_AGENTS: dict[str, str] = {
    "random": "palaestra.agents.random_agent:make_agent",
    "cem": "palaestra.agents.cem:make_agent",
}


def observe(agent: Agent, observation: Any, reward: float, terminated: bool, truncated: bool) -> None:
    """Call ``agent.observe(...)`` if the agent defines it."""
    hook = getattr(agent, "observe", None)
    if hook is not None:
        hook(observation, reward, terminated, truncated)


def end_episode(agent: Agent) -> None:
    """Call ``agent.end_episode()`` if the agent defines it."""
    hook = getattr(agent, "end_episode", None)
    if hook is not None:
        hook()


class AgentSpecError(Error):
    """An ``--agent`` value that does not name an importable factory."""


def load_agent_factory(spec: str) -> AgentFactory:
    """Resolve ``"module:factory"`` or a built-in short name (``"random"``) to a factory.

    Raises :class:`AgentSpecError` naming the problem and the expected form.
    """
    target = BUILTIN_AGENTS.get(spec, spec)
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        known = ", ".join(sorted(BUILTIN_AGENTS))
        raise AgentSpecError(
            f"agent {spec!r} is not of the form 'module:factory' nor a built-in name ({known})"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentSpecError(f"agent {spec!r}: cannot import module {module_name!r}: {exc}") from exc
    factory: Any = module
    for part in attr.split("."):
        try:
            factory = getattr(factory, part)
        except AttributeError as exc:
            raise AgentSpecError(f"agent {spec!r}: module {module_name!r} has no attribute {attr!r}") from exc
    if not callable(factory):
        raise AgentSpecError(f"agent {spec!r}: {target} is not callable")
    return cast(AgentFactory, factory)
