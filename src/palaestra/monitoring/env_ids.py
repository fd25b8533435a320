"""The env id a vector Monitor records, for every kind of vector env.

* :func:`vector_env_id` -- the id: the ``env_id`` argument (checked against the env), else the env's.
* :func:`vector_spec` -- the Gymnasium spec of a vector env, or of its first sub-environment.

Where the id comes from:

* Gymnasium's vector envs: their spec (``gym.make_vec`` sets one), else their first sub-environment's
  (a ``SyncVectorEnv`` or ``AsyncVectorEnv`` of ``gym.make`` envs).
* EnvPool's: an EnvPool env keeps its spec class and its settings (``config``) but not its task id, so
  the id is the one task of EnvPool's registry with that spec class whose registered settings all
  equal the env's (EnvPool's own id: its ``Pong-v5`` is its Atari preprocessing, not ale-py's
  ``ALE/Pong-v5``).
* ale-py's ``AtariVectorEnv`` made directly keeps neither its game nor its settings (only a handle to
  its C++ batch): ``gym.make_vec("ALE/Pong-v5", vectorization_mode="vector_entry_point")`` makes the
  same class with a spec, or ``env_id=`` names it.

Without an id the Monitor refuses to start, with a hint for the kind of env it was given: an upload
files every run under its env id.
"""

from __future__ import annotations

import sys
from typing import Any

from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import SyncVectorEnv, VectorEnv

from palaestra.errors import MonitorError

__all__ = ["envpool_task_id", "vector_env_id", "vector_spec"]


def vector_env_id(env: VectorEnv[Any, Any, Any], spec: EnvSpec | None, env_id: str | None) -> str:
    """The env id to record: ``env_id`` where given (it must agree with the env's), else the env's.

    Raises:
        MonitorError: there is none (with a hint that works for this kind of env), ``env_id`` is not a
            non-empty string, or it disagrees with the env's own.
    """
    known = spec.id if spec is not None else envpool_task_id(env)
    if env_id is not None:
        if not isinstance(env_id, str) or not env_id.strip():
            raise MonitorError(f"env_id must be a non-empty string such as 'ALE/Pong-v5', not {env_id!r}")
        if known is not None and known != env_id:
            where = "spec" if spec is not None else "EnvPool task"
            raise MonitorError(
                f"env_id={env_id!r} disagrees with the vector environment's {where}, which says {known!r}: "
                "leave env_id out (that id is recorded) or make the env you mean"
            )
        return env_id
    if known is not None:
        return known
    raise MonitorError(_no_env_id_hint(env))


def vector_spec(env: VectorEnv[Any, Any, Any]) -> EnvSpec | None:
    """The Gymnasium spec of the env id: the vector env's (``make_vec`` sets it), else its first
    sub-environment's; None when neither has one (EnvPool's ``spec`` is its own kind, not one)."""
    if isinstance(env.spec, EnvSpec):
        return env.spec
    unwrapped = env.unwrapped
    if isinstance(unwrapped, SyncVectorEnv):
        first = unwrapped.envs[0].spec
        return first if isinstance(first, EnvSpec) else None
    if _is_envpool(unwrapped):
        return None
    get_attr = getattr(unwrapped, "get_attr", None)  # AsyncVectorEnv's, and most vector envs'
    try:
        first = get_attr("spec")[0] if get_attr is not None else None
    except Exception:  # sub-environments without a spec attribute
        return None
    return first if isinstance(first, EnvSpec) else None


def envpool_task_id(env: VectorEnv[Any, Any, Any]) -> str | None:
    """EnvPool's task id of an EnvPool env: the one registered task with the env's spec class and
    whose registered settings all equal the env's (an id without a namespace, among aliases); None
    for another env, or when no task or several match (settings changed at ``envpool.make``, such as
    ``max_episode_steps``)."""
    unwrapped: Any = env.unwrapped
    if not _is_envpool(unwrapped):
        return None
    from envpool.registration import registry  # an EnvPool env exists, so envpool is installed

    spec_class = type(unwrapped.spec).__name__
    config = dict(unwrapped.config)
    matches = [
        task_id
        for task_id, (_module, registered_class, kwargs) in registry.specs.items()
        if registered_class == spec_class and all(config.get(k) == v for k, v in kwargs.items())
    ]
    if len(matches) > 1:  # EnvPool registers aliases too (phys2d/CartPole-v1 is CartPole-v1)
        matches = [task_id for task_id in matches if "/" not in task_id]
    return matches[0] if len(matches) == 1 else None


def _is_envpool(env: Any) -> bool:
    """Whether ``env`` is an EnvPool env (its classes are made at run time, in module ``abc``, over
    EnvPool's own)."""
    return "envpool" in sys.modules and any(c.__module__.startswith("envpool") for c in type(env).__mro__)


def _no_env_id_hint(env: VectorEnv[Any, Any, Any]) -> str:
    unwrapped = env.unwrapped
    message = (
        f"The vector environment {type(unwrapped).__name__} has no spec, so the Monitor cannot tell which env id "
        "to record (an upload files the run under it)."
    )
    if type(unwrapped).__module__.startswith("ale_py"):
        return (
            f"{message} ale-py's AtariVectorEnv keeps neither its game nor its settings. Make it with "
            "gymnasium.make_vec('ALE/Pong-v5', num_envs=N, vectorization_mode='vector_entry_point') "
            "(the same AtariVectorEnv, with a spec; after import ale_py), or pass the id: "
            "palaestra.Monitor(envs, directory, env_id='ALE/Pong-v5')."
        )
    if _is_envpool(unwrapped):
        return (
            f"{message} No single EnvPool task has its spec class and settings (changed at envpool.make?): pass "
            "the id, as in palaestra.Monitor(envs, directory, env_id='Pong-v5')."
        )
    return (
        f"{message} Pass it, as in palaestra.Monitor(envs, directory, env_id='CartPole-v1'), or make the "
        "env with gymnasium.make_vec(env_id, num_envs=N), which gives it a spec."
    )
