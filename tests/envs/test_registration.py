"""The ids palaestra registers in Gymnasium's registry, and that registering them is cheap."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import pytest

import palaestra.envs
from palaestra.envs import BOARD_GAME_IDS


def test_ids_are_registered_with_the_2017_arguments() -> None:
    for env_id in BOARD_GAME_IDS:
        spec = gymnasium.spec(env_id)
        assert spec.max_episode_steps is None  # the game has its own length limit
        assert spec.kwargs["player_color"] == "black" and spec.kwargs["illegal_move_mode"] == "lose"
    # Go9x9-v0 and Go19x19-v0 play Pachi as in 2017: tests/envs/test_pachi.py.
    assert gymnasium.spec("Go13x13-v0").kwargs == {
        "player_color": "black",
        "opponent": "gnugo",
        "observation_type": "image3c",
        "illegal_move_mode": "lose",
        "board_size": 13,
    }
    assert gymnasium.spec("Hex9x9-v0").kwargs["opponent"] == "random"
    assert gymnasium.spec("Hex9x9-v0").kwargs["observation_type"] == "numpy3c"
    assert gymnasium.spec("Go19x19-v0").kwargs["board_size"] == 19


def test_make_with_overrides() -> None:
    env = gymnasium.make("Go13x13-v0", opponent="random", komi=6.5)
    assert env.unwrapped.board_size == 13 and env.unwrapped.komi == 6.5
    assert gymnasium.make("Hex11x11-v0").unwrapped.action_space.n == 122


def test_importing_registers_without_loading_the_engine() -> None:
    code = (
        "import sys, gymnasium, palaestra.envs; "
        "print('Go9x9-v0' in gymnasium.registry, 'pyspiel' in sys.modules, 'palaestra.envs.board.env' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False", "False"]


def test_importing_twice_does_not_warn() -> None:
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.reload(palaestra.envs)


def test_make_adds_no_wrappers_and_the_envs_enforce_the_order_themselves() -> None:
    from gymnasium.utils.env_checker import check_env

    for env_id in BOARD_GAME_IDS:
        env = gymnasium.make(env_id, opponent="random", render_mode="ansi")
        assert env.unwrapped is env  # no OrderEnforcing / PassiveEnvChecker on the step path
        with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
            env.step(0)
        with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
            env.render()
        if env_id in ("Go9x9-v0", "Hex9x9-v0"):
            check_env(env)
        env.close()
    checked = gymnasium.make("Hex9x9-v0", disable_env_checker=False)
    assert type(checked).__name__ == "PassiveEnvChecker"
