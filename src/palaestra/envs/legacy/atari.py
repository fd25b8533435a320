"""The 720 Atari ids of 2017 (spec §7), on ale-py, with their 2017 semantics.

* :data:`GAMES`, :data:`ROWS`, :data:`ATARI_IDS` — the 60 games, and their ids as rows of the 2017
  registry (:class:`~palaestra.envs.legacy.table.Env2017`, group ``atari``):
  ``{Name}{-ram}{variant}-v{0,4}`` for the variants ``''``, ``Deterministic`` and ``NoFrameskip``.
* :func:`register_atari_envs` — registers them (done on ``import palaestra``, by
  :mod:`palaestra.envs.legacy`), without importing ale-py.
* ``AtariEnv`` — the entry point: ale-py's ``AtariEnv`` with 2017's constructor (its defaults:
  ``obs_type='ram'``, ``frameskip=(2, 5)``, ``repeat_action_probability=0.0``; ``obs_type='image'``
  is ale-py's ``'rgb'``) and 2017's ``info["ale.lives"]`` beside ale-py's ``lives``.

Each id has its 2017 constructor arguments, ``max_episode_steps`` and ``nondeterministic`` flag:

=============================  ============  =============  ==========================
id                             frameskip     sticky prob.   max_episode_steps
=============================  ============  =============  ==========================
``Pong-v0``                    2, 3 or 4     0.25           10,000
``Pong-v4``                    2, 3 or 4     0              100,000
``PongDeterministic-v0``       4             0.25           100,000
``PongDeterministic-v4``       4             0              100,000
``PongNoFrameskip-v0``         1             0.25           400,000 (4 x 100,000)
``PongNoFrameskip-v4``         1             0              400,000
=============================  ============  =============  ==========================

(SpaceInvaders' deterministic frameskip is 3, its ``NoFrameskip`` limit 300,000.) The ``-ram`` ids
(``Pong-ramNoFrameskip-v4``) observe the 128 bytes of the console's RAM. The six ``ElevatorAction-ram``
ids are ``nondeterministic``, as in 2017. No id has a reward threshold, and none has ale-py's
108,000-frame cap: the step limit is the only one, as in 2017.

**Meeting ale-py's own ids.** ale-py registers 248 of these ids itself (``Pong-v0``, ``Pong-v4``,
``PongNoFrameskip-v0``, ``PongNoFrameskip-v4``, for each game) when ``ale_py`` is imported, without
step limits and with its frame cap. A program that never imports palaestra gets exactly ale-py's;
one that imports palaestra gets 2017's for all 720, whatever the order of the imports, and never a
Gymnasium "Overriding environment" warning: ale-py imported first, its specs are replaced here;
ale-py imported later (by the user, ``gymnasium.register_envs(ale_py)`` or the first ``make``), a
finder on ``sys.meta_path`` runs ale-py's registration with palaestra's specs set aside and puts
them back right after. ``import palaestra`` never imports ale-py (about 110 ms, a fifth of
palaestra's own import), so the finder, not an early import, keeps the order right.
``ale_py.registration.register_v0_v4_envs()`` brings ale-py's definitions back, with Gymnasium's
warnings. The ``ALE/{Name}-v5`` ids are ale-py's alone.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from gymnasium.envs.registration import EnvSpec, registry

from palaestra.envs import engines
from palaestra.envs.legacy.table import Env2017
from palaestra.errors import DependencyNotInstalled

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

# AtariEnv (the entry point) is built on first access, through __getattr__ at the end.
__all__ = ["ATARI_IDS", "GAMES", "ROWS", "register_atari_envs"]

#: The 60 games of 2017's gym, by ale-py's ROM names (ale-py's wheel ships all of them).
GAMES = (
    "air_raid", "alien", "amidar", "assault", "asterix", "asteroids", "atlantis", "bank_heist",
    "battle_zone", "beam_rider", "berzerk", "bowling", "boxing", "breakout", "carnival", "centipede",
    "chopper_command", "crazy_climber", "demon_attack", "double_dunk", "elevator_action", "enduro",
    "fishing_derby", "freeway", "frostbite", "gopher", "gravitar", "hero", "ice_hockey", "jamesbond",
    "journey_escape", "kangaroo", "krull", "kung_fu_master", "montezuma_revenge", "ms_pacman",
    "name_this_game", "phoenix", "pitfall", "pong", "pooyan", "private_eye", "qbert", "riverraid",
    "road_runner", "robotank", "seaquest", "skiing", "solaris", "space_invaders", "star_gunner",
    "tennis", "time_pilot", "tutankham", "up_n_down", "venture", "video_pinball", "wizard_of_wor",
    "yars_revenge", "zaxxon",
)  # fmt: skip

ENTRY_POINT = "palaestra.envs.legacy.atari:AtariEnv"


def _name(game: str) -> str:
    """``space_invaders`` -> ``SpaceInvaders``, as 2017 spelt it (``up_n_down`` -> ``UpNDown``)."""
    return "".join(part.capitalize() for part in game.split("_"))


def _rows() -> tuple[Env2017, ...]:
    """The 720 rows, in 2017's order (game, then image/ram, then the six variants)."""
    rows = []
    for game in GAMES:
        # 2017's "Deterministic" frameskip (as in DeepMind's papers): 3 for SpaceInvaders, whose lasers
        # blink at 4.
        frameskip = 3 if game == "space_invaders" else 4
        for obs_type in ("image", "ram"):
            name = _name(game) + ("-ram" if obs_type == "ram" else "")
            base = {"game": game, "obs_type": obs_type}
            sticky = {"repeat_action_probability": 0.25}
            variants = (
                (f"{name}-v0", {**base, **sticky}, 10_000),
                (f"{name}-v4", base, 100_000),
                (f"{name}Deterministic-v0", {**base, "frameskip": frameskip, **sticky}, 100_000),
                (f"{name}Deterministic-v4", {**base, "frameskip": frameskip}, 100_000),
                (f"{name}NoFrameskip-v0", {**base, "frameskip": 1, **sticky}, frameskip * 100_000),
                (f"{name}NoFrameskip-v4", {**base, "frameskip": 1}, frameskip * 100_000),
            )
            for env_id, kwargs, steps in variants:
                rows.append(
                    Env2017(
                        env_id,
                        "atari",
                        max_episode_steps=steps,
                        # "ElevatorAction-ram-v0 seems to yield slightly non-deterministic observations
                        # about 10% of the time" (2017's registration)
                        nondeterministic=game == "elevator_action" and obs_type == "ram",
                        entry_point=ENTRY_POINT,
                        kwargs=kwargs,
                        requires="atari",
                    )
                )
    return tuple(rows)


#: The 720 ids as rows of the 2017 registry, in 2017's order.
ROWS = _rows()
ATARI_IDS: tuple[str, ...] = tuple(row.id for row in ROWS)
_SPECS = tuple(
    EnvSpec(
        id=row.id,
        entry_point=ENTRY_POINT,
        kwargs=dict(row.kwargs),
        max_episode_steps=row.max_episode_steps,
        nondeterministic=row.nondeterministic,
    )
    for row in ROWS
)


def register_atari_envs() -> None:
    """Put the 720 specs in Gymnasium's registry, and keep them there if ale-py is imported later."""
    # Assigned, not gymnasium.register()ed: where ale-py registered the same ids first, register()
    # would warn "Overriding environment" 248 times.
    registry.update((spec.id, spec) for spec in _SPECS)
    if "ale_py" not in sys.modules and not any(isinstance(f, _KeepSpecsOverAlePy) for f in sys.meta_path):
        sys.meta_path.insert(0, _KeepSpecsOverAlePy())


# The finder and loader protocols, without importlib.abc's base classes (importing importlib.abc costs
# several milliseconds of `import palaestra`).
class _KeepSpecsOverAlePy:
    """A finder on ``sys.meta_path`` that finds ``ale_py`` with a loader that runs ale-py's registration
    while palaestra's specs are out of the registry and puts them back after it. It stays until ale-py
    has run: ``importlib.util.find_spec("ale_py")``, which only asks where ale-py is, also comes here."""

    def __init__(self) -> None:
        self._asking = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "ale_py" or self._asking:
            return None
        self._asking = True  # the other finders answer the question below, not this one again
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._asking = False
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringAfter(spec.loader, self)  # type: ignore[assignment]
        return spec


class _RegisteringAfter:
    """ale-py's own loader, with palaestra's specs set aside while its module runs."""

    def __init__(self, loader: Any, finder: _KeepSpecsOverAlePy) -> None:
        self._loader = loader
        self._finder = finder

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        ours = {spec.id: spec for spec in _SPECS if registry.get(spec.id) is spec}
        for env_id in ours:
            del registry[env_id]
        try:
            self._loader.exec_module(module)
        finally:
            registry.update(ours)
        if self._finder in sys.meta_path:  # ale-py is in sys.modules now: nothing more to watch
            sys.meta_path.remove(self._finder)

    def __getattr__(self, name: str) -> Any:  # get_filename, get_resource_reader, is_package, ...
        return getattr(self._loader, name)


@functools.cache
def _atari_env_class() -> type:
    """The entry point's class, built on first use: it subclasses ale-py's, and registering the ids
    must not import ale-py."""
    try:
        from ale_py.env import AtariEnv as AlePyAtariEnv
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"The Atari ids need ale-py, which is not installed: {engines.install_hint('atari')}"
        ) from exc

    class AtariEnv(AlePyAtariEnv):
        """ale-py's AtariEnv with 2017's constructor defaults and ``info["ale.lives"]``."""

        def __init__(
            self,
            game: str = "pong",
            obs_type: str = "ram",
            frameskip: tuple[int, int] | int = (2, 5),
            repeat_action_probability: float = 0.0,
            **kwargs: Any,
        ) -> None:
            super().__init__(
                game=game,
                obs_type="rgb" if obs_type == "image" else obs_type,  # type: ignore[arg-type]
                frameskip=frameskip,
                repeat_action_probability=repeat_action_probability,
                **kwargs,
            )

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            observation, info = super().reset(seed=seed, options=options)
            info["ale.lives"] = info["lives"]  # type: ignore[typeddict-unknown-key]
            return observation, info

        def step(self, action: Any) -> Any:
            observation, reward, terminated, truncated, info = super().step(action)
            info["ale.lives"] = info["lives"]  # type: ignore[typeddict-unknown-key]
            return observation, reward, terminated, truncated, info

    # Where pickle (EzPickle: vector envs, checkpoints) looks for it: this module's __getattr__.
    AtariEnv.__module__, AtariEnv.__qualname__ = __name__, "AtariEnv"
    return AtariEnv


def __getattr__(name: str) -> Any:
    if name == "AtariEnv":
        return _atari_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
