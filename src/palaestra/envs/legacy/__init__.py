"""The 2017 registry inside Gymnasium's: gym 0.9.x's env ids, registered when palaestra is imported.

* :func:`rows` / :func:`row` -- the 2017 table (:mod:`palaestra.envs.legacy.table`): limits,
  thresholds, trials, the nondeterministic flag, and what makes each id today.
* :func:`register_rows` -- registers rows in Gymnasium's registry (entry points are strings, so
  nothing is imported until ``gymnasium.make``), skipping ids already there: Gymnasium's own
  ``CartPole-v0`` and the like, palaestra's board games, and a second import.

After ``import palaestra`` every id of the table makes with ``gymnasium.make`` with its 2017 time
limit, threshold and arguments -- palaestra's re-implementations (algorithmic, toy text, debugging,
safety), or today's Gymnasium code for ids it kept under a newer version -- or raises one error that
says why it cannot (an engine to install, or no code left: ``Thrower-v0``, ``Striker-v0``, the
``parameter_tuning`` ids). The 720 Atari ids are rows of their own, registered by
:mod:`palaestra.envs.legacy.atari` (which keeps them over ale-py's registrations of the same ids).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from gymnasium.envs.registration import register, registry

from palaestra.envs.legacy import atari
from palaestra.envs.legacy.table import GROUPS_2017, ROWS, Env2017

__all__ = ["GROUPS_2017", "SUCCESSORS_MODULE", "Env2017", "register_rows", "registration", "row", "rows"]

#: entry points ``palaestra.envs.legacy.successors:<2017 id>`` resolve to today's code, or say why not
SUCCESSORS_MODULE = "palaestra.envs.legacy.successors"


def rows() -> tuple[Env2017, ...]:
    """Every row of the 2017 registry that palaestra knows (the Atari ids last)."""
    return ROWS + atari.ROWS


@functools.cache
def _rows_by_id() -> dict[str, Env2017]:
    return {r.id: r for r in rows()}


def row(env_id: str) -> Env2017 | None:
    """The 2017 row of ``env_id``, or ``None`` for an id the 2017 registry did not have."""
    return _rows_by_id().get(env_id)


def registration(entry: Env2017) -> dict[str, Any]:
    """The ``gymnasium.register`` arguments that make ``entry``'s id."""
    if entry.entry_point is not None:
        entry_point, kwargs = entry.entry_point, dict(entry.kwargs)
    else:
        successor = registry.get(entry.successor) if entry.successor else None
        # The successor's own arguments (LunarLanderContinuous-v3: continuous=True), then 2017's.
        kwargs = {**(successor.kwargs if successor else {}), **entry.kwargs}
        entry_point = f"{SUCCESSORS_MODULE}:{entry.id}"
    return {
        "id": entry.id,
        "entry_point": entry_point,
        "kwargs": kwargs,
        "max_episode_steps": entry.max_episode_steps,
        "reward_threshold": entry.reward_threshold,
        "nondeterministic": entry.nondeterministic,
    }


def register_rows(entries: Iterable[Env2017]) -> None:
    """Register each row not yet in Gymnasium's registry (so importing twice never warns)."""
    for entry in entries:
        if entry.id not in registry:
            register(**registration(entry))


register_rows(ROWS)
atari.register_atari_envs()
