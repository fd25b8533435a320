"""The agent Protocol and ``--agent`` resolution."""

from __future__ import annotations

import gymnasium
import pytest

from palaestra.agents import base
from palaestra.agents.random_agent import RandomAgent, make_agent


def test_random_agent_follows_the_protocol_and_is_seedable() -> None:
    space = gymnasium.spaces.Discrete(5)
    factory = base.load_agent_factory("random")
    agent = factory(gymnasium.spaces.Box(0, 1, (2,)), space)
    assert isinstance(agent, RandomAgent) and isinstance(agent, base.Agent)
    assert not isinstance(agent, base.LearningAgent)  # the hooks are optional
    a = [make_agent(space, gymnasium.spaces.Discrete(5), seed=4).act(None) for _ in range(3)]
    b = [make_agent(space, gymnasium.spaces.Discrete(5), seed=4).act(None) for _ in range(3)]
    assert a == b and all(space.contains(x) for x in a)
    base.observe(agent, None, 1.0, False, False)  # no-ops for an agent without hooks
    base.end_episode(agent)


def test_hooks_are_called_when_defined() -> None:
    calls: list[tuple[object, ...]] = []

    class Learner:
        def act(self, observation: object) -> int:
            return 0

        def observe(self, observation: object, reward: float, terminated: bool, truncated: bool) -> None:
            calls.append(("observe", observation, reward, terminated, truncated))

        def end_episode(self) -> None:
            calls.append(("end",))

    learner = Learner()
    assert isinstance(learner, base.LearningAgent)
    base.observe(learner, "o", 2.0, True, False)
    base.end_episode(learner)
    assert calls == [("observe", "o", 2.0, True, False), ("end",)]


def test_module_factory_specs() -> None:
    assert base.load_agent_factory("palaestra.agents.random_agent:make_agent") is make_agent
    assert base.load_agent_factory("palaestra.agents.random_agent:RandomAgent.act")  # dotted attribute
    for spec, message in [
        ("random_agent", "not of the form 'module:factory'"),
        (":make_agent", "not of the form"),
        ("no_such_module_abc:f", "cannot import module 'no_such_module_abc'"),
        ("palaestra.agents.random_agent:nothing", "has no attribute 'nothing'"),
        ("palaestra.agents.base:BUILTIN_AGENTS", "is not callable"),
    ]:
        with pytest.raises(base.AgentSpecError, match=message):
            base.load_agent_factory(spec)
