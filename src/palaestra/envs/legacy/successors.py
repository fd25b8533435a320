"""Entry points for the 2017 ids that palaestra has no code of its own for.

``palaestra.envs.legacy.successors:<2017 id>`` (the attribute is the id, ``FrozenLake-v0``) resolves,
when ``gymnasium.make`` loads it, to the class of the id's successor in Gymnasium's registry
(``FrozenLake-v1``'s ``FrozenLakeEnv``), so the environment is exactly today's Gymnasium code with
the 2017 arguments and limits. When it cannot be made, the lookup raises one error that says why:

* the successor's engine is not installed -- :class:`palaestra.errors.DependencyNotInstalled`
  naming the palaestra extra (``pip install 'palaestra[mujoco]'``);
* no maintained code makes it any more (``Thrower-v0``) -- :class:`palaestra.errors.RetiredEnv`;
* this Gymnasium does not register the successor -- :class:`palaestra.errors.Error` (upgrade it).
"""

from __future__ import annotations

from typing import Any

import gymnasium
from gymnasium.envs.registration import load_env_creator

from palaestra.envs.legacy.table import Env2017
from palaestra.errors import DependencyNotInstalled, Error, RetiredEnv


def __getattr__(name: str) -> Any:
    from palaestra.envs.legacy import row

    entry = row(name)
    if entry is None or entry.entry_point is not None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return creator(entry)


def creator(entry: Env2017) -> Any:
    """The class (or factory) that makes ``entry``'s id today; raises why when there is none, in the
    catalogue's words (:func:`palaestra.catalogue.unavailable_reason`, the one answer)."""
    from palaestra import catalogue

    reason = catalogue.unavailable_reason(entry.id, import_probe=True)
    if reason is not None:
        raise _error_kind(entry)(reason)
    assert entry.successor is not None
    spec = gymnasium.registry[entry.successor]
    return spec.entry_point if not isinstance(spec.entry_point, str) else load_env_creator(spec.entry_point)


def _error_kind(entry: Env2017) -> type[Error]:
    """Which error says why ``entry`` cannot be made (the module docstring's three cases)."""
    if entry.unavailable:
        return RetiredEnv
    if entry.successor is not None and entry.successor not in gymnasium.registry:
        return Error
    return DependencyNotInstalled
