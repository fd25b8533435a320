"""The 2017 registry in Gymnasium's: every id makes, or says in one line why not; importing is cheap."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import pytest

import palaestra
from palaestra.envs import engines, legacy
from palaestra.errors import DependencyNotInstalled, RetiredEnv


def _engine_installed(row: legacy.Env2017) -> bool:
    return row.requires is None or engines.missing(row.requires) is None


# (the board games and the 720 Atari ids have tests of their own: test_pachi.py, test_atari_2017.py)
@pytest.mark.parametrize(
    "row", [r for r in legacy.rows() if r.group not in ("board_game", "atari")], ids=lambda r: r.id
)
def test_every_2017_id_makes_with_its_2017_limits_or_says_why_not(
    row: legacy.Env2017, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # MuJoCo writes MUJOCO_LOG.TXT into the working directory
    if row.unavailable:
        with pytest.raises(RetiredEnv, match=row.id) as raised:
            gymnasium.make(row.id)
        assert "\n" not in str(raised.value)
        return
    if not _engine_installed(row):
        with pytest.raises(DependencyNotInstalled, match=rf"pip install 'palaestra\[{row.requires}\]'"):
            gymnasium.make(row.id)
        return
    env = gymnasium.make(row.id)
    try:
        assert env.spec is not None and env.spec.id == row.id
        assert (env.spec.max_episode_steps, env.spec.reward_threshold) == (
            row.max_episode_steps,
            row.reward_threshold if row.id != "Acrobot-v1" else -100.0,  # Gymnasium's own id
        )
        if row.successor and row.entry_point is None:  # today's code, exactly
            successor = gymnasium.spec(row.successor)
            assert type(env.unwrapped) is gymnasium.envs.registration.load_env_creator(successor.entry_point)
        env.reset(seed=0)
        env.step(env.action_space.sample())
    finally:
        env.close()


@pytest.mark.parametrize(
    ("env_id", "blocked", "extra"), [("HalfCheetah-v1", "mujoco", "mujoco"), ("LunarLander-v2", "Box2D", "box2d")]
)
def test_without_its_engine_a_2017_id_names_the_extra_to_install_in_one_line(
    monkeypatch: pytest.MonkeyPatch, env_id: str, blocked: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, blocked, None)  # as if not installed
    engines._installed.cache_clear()
    try:
        with pytest.raises(DependencyNotInstalled) as raised:
            gymnasium.make(env_id)
    finally:
        engines._installed.cache_clear()
    name = engines.ENGINES[extra].name
    assert str(raised.value) == f"{env_id} needs {name}, which is not installed: pip install 'palaestra[{extra}]'"


def test_palaestra_envs_lists_what_cannot_run_only_with_all_and_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['mujoco'] = None\n"
        "from palaestra.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    listed = subprocess.run([sys.executable, "-c", code, "envs", "--group", "mujoco"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert "HalfCheetah-v1" not in listed.stdout and "palaestra envs --all" in listed.stdout
    everything = subprocess.run(
        [sys.executable, "-c", code, "envs", "--group", "mujoco", "--all"], capture_output=True, text=True
    )
    line = next(x for x in everything.stdout.splitlines() if x.strip().startswith("HalfCheetah-v1 "))
    assert "2017 id, made by HalfCheetah-v5's code" in line
    assert "cannot run here: HalfCheetah-v1 needs MuJoCo, which is not installed: pip install 'palaestra[mujoco]'" in line
    thrower = next(x for x in everything.stdout.splitlines() if x.strip().startswith("Thrower-v0 "))
    assert "cannot run here: Thrower-v0 has no successor" in thrower


def test_importing_palaestra_registers_the_2017_ids_without_loading_their_code() -> None:
    code = (
        "import sys, gymnasium, palaestra\n"
        "print('Copy-v0' in gymnasium.registry, 'HalfCheetah-v1' in gymnasium.registry)\n"
        "loaded = [m for m in ('palaestra.envs.legacy.algorithmic', 'palaestra.envs.legacy.toy_text',\n"
        "    'palaestra.envs.legacy.safety', 'palaestra.envs.legacy.successors', 'mujoco', 'Box2D', 'scipy.stats')\n"
        "    if m in sys.modules]\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["True True", "[]"], out.stdout + out.stderr


def test_importing_the_2017_registry_twice_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.reload(legacy)
        importlib.reload(palaestra.envs)


def test_gymnasiums_own_2017_ids_are_not_registered_again() -> None:
    # CartPole-v0 is Gymnasium's registration (its entry point), not a copy of it
    assert gymnasium.spec("CartPole-v0").entry_point == "gymnasium.envs.classic_control.cartpole:CartPoleEnv"
    assert gymnasium.spec("FrozenLake-v0").entry_point == "palaestra.envs.legacy.successors:FrozenLake-v0"
    assert gymnasium.spec("Taxi-v2").entry_point == "palaestra.envs.legacy.toy_text:TaxiEnv"


def test_a_2017_id_takes_overrides_like_any_other() -> None:
    env = gymnasium.make("FrozenLake-v0", is_slippery=False)
    assert env.spec is not None and env.spec.kwargs == {"map_name": "4x4", "is_slippery": False}
    env.reset(seed=0)
    assert env.step(2)[0] == 1  # not slippery: right moves right
    env.close()
    assert gymnasium.make("Copy-v0", base=3).unwrapped.base == 3
