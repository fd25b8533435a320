"""The optional engines some environment families need, and the palaestra extra that installs each.

One place for "can this installation make it, and if not, what to install", read by the catalogue
(``palaestra envs``) and by the 2017 ids that today's code makes (:mod:`palaestra.envs.legacy`).

==========  ==========  ==================================================================
extra       module      environments
==========  ==========  ==================================================================
``board``   ``pyspiel`` palaestra's Go and Hex (OpenSpiel's rules engine)
``mujoco``  ``mujoco``  Gymnasium's MuJoCo envs (and their 2017 ids)
``box2d``   ``Box2D``   Gymnasium's Box2D envs (and their 2017 ids)
``atari``   ``ale_py``  ale-py's Atari envs (and the 2017 ids, palaestra.envs.legacy.atari)
(none)      ``jax``     Gymnasium's ``phys2d/`` and ``tabular/`` JAX envs (``gymnasium[jax]``)
==========  ==========  ==================================================================

The extras themselves, and the modules each brings, are in :mod:`palaestra.extras`.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass

from palaestra.extras import EXTRA_MODULES, install_command

__all__ = ["ENGINES", "Engine", "extra_for", "install_hint", "missing"]


@dataclass(frozen=True)
class Engine:
    extra: str
    module: str
    name: str
    #: the install command, when palaestra has no extra for it
    install: str | None = None


ENGINES = {
    engine.extra: engine
    for engine in (
        Engine("board", EXTRA_MODULES["board"][0], "OpenSpiel"),
        Engine("mujoco", EXTRA_MODULES["mujoco"][0], "MuJoCo"),
        Engine("box2d", EXTRA_MODULES["box2d"][0], "Box2D"),
        Engine("atari", EXTRA_MODULES["atari"][0], "ale-py"),
        Engine("jax", "jax", "JAX", install="pip install 'gymnasium[jax]'"),
    )
}

# entry-point module prefix -> engine
_ENTRY_POINTS = (
    ("palaestra.envs.board", "board"),
    ("gymnasium.envs.mujoco", "mujoco"),
    ("gymnasium.envs.box2d", "box2d"),
    ("ale_py", "atari"),
    ("palaestra.envs.legacy.atari", "atari"),
    ("gymnasium.envs.phys2d", "jax"),
    ("gymnasium.envs.tabular", "jax"),
)


def extra_for(entry_point: str) -> str | None:
    """The engine (by its extra's name) that an entry point (``"module:Attr"``) needs, or ``None``."""
    for prefix, extra in _ENTRY_POINTS:
        if entry_point.startswith(prefix):
            return extra
    return None


def install_hint(extra: str) -> str:
    """``pip install 'palaestra[mujoco]'`` (or the engine's own command where palaestra has no extra)."""
    return ENGINES[extra].install or install_command(extra)


@functools.cache
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def missing(extra: str, env_id: str | None = None) -> str | None:
    """Why ``env_id`` (or the engine of ``extra``) cannot be used here, in one line with the fix; or
    ``None`` when the engine is installed."""
    engine = ENGINES[extra]
    if _installed(engine.module):
        return None
    subject = f"{env_id} needs {engine.name}, which" if env_id else engine.name
    return f"{subject} is not installed: {install_hint(extra)}"
