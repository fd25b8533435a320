"""The 720 Atari ids of 2017 on ale-py: the registry against spec §7 and gym 0.9.4's own, what the ids
do when played, and how they meet ale-py's registrations of the same ids (import order, warnings)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

from palaestra import catalogue
from palaestra.envs.legacy.atari import ATARI_IDS, ENTRY_POINT, GAMES
from tests.legacy_gym import run_legacy_gym

ale_py = pytest.importorskip("ale_py", reason="the atari extra (ale-py) is not installed")

#: Spec §7's table, written out from the spec: variant -> (frameskip, sticky probability, steps);
#: None for the frameskip means 2017's default, a random 2, 3 or 4 frames; "fs" is 4 (3 for SpaceInvaders).
TABLE = {
    "-v0": (None, 0.25, 10_000),
    "-v4": (None, 0.0, 100_000),
    "Deterministic-v0": ("fs", 0.25, 100_000),
    "Deterministic-v4": ("fs", 0.0, 100_000),
    "NoFrameskip-v0": (1, 0.25, "fs x 100,000"),
    "NoFrameskip-v4": (1, 0.0, "fs x 100,000"),
}
#: The 60 games of spec §7, as 2017 spelt them.
NAMES_2017 = (
    "AirRaid", "Alien", "Amidar", "Assault", "Asterix", "Asteroids", "Atlantis", "BankHeist",
    "BattleZone", "BeamRider", "Berzerk", "Bowling", "Boxing", "Breakout", "Carnival", "Centipede",
    "ChopperCommand", "CrazyClimber", "DemonAttack", "DoubleDunk", "ElevatorAction", "Enduro",
    "FishingDerby", "Freeway", "Frostbite", "Gopher", "Gravitar", "Hero", "IceHockey", "Jamesbond",
    "JourneyEscape", "Kangaroo", "Krull", "KungFuMaster", "MontezumaRevenge", "MsPacman",
    "NameThisGame", "Phoenix", "Pitfall", "Pong", "Pooyan", "PrivateEye", "Qbert", "Riverraid",
    "RoadRunner", "Robotank", "Seaquest", "Skiing", "Solaris", "SpaceInvaders", "StarGunner", "Tennis",
    "TimePilot", "Tutankham", "UpNDown", "Venture", "VideoPinball", "WizardOfWor", "YarsRevenge",
    "Zaxxon",
)  # fmt: skip


def expected_rows() -> dict[str, dict]:
    """Every id of spec §7 with what the spec says about it."""
    rows = {}
    for name in NAMES_2017:
        fs = 3 if name == "SpaceInvaders" else 4
        for ram in (False, True):
            for variant, (frameskip, sticky, steps) in TABLE.items():
                env_id = f"{name}{'-ram' if ram else ''}{variant}"
                rows[env_id] = {
                    "frameskip": fs if frameskip == "fs" else frameskip,
                    "sticky": sticky,
                    "steps": fs * 100_000 if steps == "fs x 100,000" else steps,
                    "obs_type": "ram" if ram else "image",
                    "nondeterministic": name == "ElevatorAction" and ram,
                }
    return rows


def test_every_atari_id_has_its_2017_limits_frameskip_sticky_actions_and_flags() -> None:
    rows = expected_rows()
    assert len(rows) == 720 and set(ATARI_IDS) == set(rows)
    for env_id, row in rows.items():
        spec = gym.spec(env_id)
        assert spec.entry_point == ENTRY_POINT, env_id
        assert spec.max_episode_steps == row["steps"], env_id
        assert spec.nondeterministic is row["nondeterministic"], env_id
        assert spec.reward_threshold is None, env_id
        kwargs = spec.kwargs
        assert kwargs["obs_type"] == row["obs_type"], env_id
        assert kwargs.get("frameskip", None) == row["frameskip"], env_id  # absent: 2017's (2, 5)
        assert kwargs.get("repeat_action_probability", 0.0) == row["sticky"], env_id
        assert catalogue.lookup(env_id).group == "atari"
        assert catalogue.solving_criteria(env_id) == (100, None)
    assert sum(row["nondeterministic"] for row in rows.values()) == 6


@pytest.mark.legacy_gym
def test_the_ids_and_their_arguments_are_gym_094s(legacy_gym_python: str) -> None:
    code = textwrap.dedent(
        """
        import json, gym
        rows = {}
        for spec in gym.envs.registry.all():
            if spec._entry_point == "gym.envs.atari:AtariEnv":
                rows[spec.id] = [spec._kwargs, spec.max_episode_steps, spec.nondeterministic,
                                 spec.reward_threshold, spec.trials]
        print(json.dumps(rows))
        """
    )
    legacy = json.loads(run_legacy_gym(legacy_gym_python, code).strip().splitlines()[-1])
    assert set(legacy) == set(ATARI_IDS)
    for env_id, (kwargs, steps, nondeterministic, threshold, trials) in legacy.items():
        spec = gym.spec(env_id)
        assert spec.kwargs == kwargs, env_id
        assert (spec.max_episode_steps, spec.nondeterministic, spec.reward_threshold) == (
            steps, nondeterministic, threshold
        ), env_id  # fmt: skip
        assert catalogue.solving_criteria(env_id) == (trials, threshold)


def test_ale_py_ships_the_roms_of_all_60_games() -> None:
    assert len(GAMES) == 60
    assert set(GAMES) <= set(ale_py.roms.get_all_rom_ids())


@pytest.mark.parametrize(
    ("env_id", "frameskip", "sticky", "shape"),
    [
        ("Pong-ram-v0", (2, 5), 0.25, (128,)),
        ("Breakout-v4", (2, 5), 0.0, (210, 160, 3)),
        ("SpaceInvadersDeterministic-v0", 3, 0.25, (210, 160, 3)),
        ("MsPacman-ramDeterministic-v4", 4, 0.0, (128,)),
        ("Seaquest-ramNoFrameskip-v0", 1, 0.25, (128,)),
        ("BreakoutNoFrameskip-v4", 1, 0.0, (210, 160, 3)),
    ],
)
def test_playing_a_few_steps_gives_2017s_observations_and_ale_lives(
    env_id: str, frameskip: tuple[int, int] | int, sticky: float, shape: tuple[int, ...]
) -> None:
    env = gym.make(env_id)
    atari = env.unwrapped
    assert atari._frameskip == frameskip
    assert atari.ale.getFloat("repeat_action_probability") == pytest.approx(sticky)
    assert atari.ale.getInt("max_num_frames_per_episode") == 0  # no frame cap: the step limit only
    assert env.observation_space.shape == shape and env.observation_space.dtype == np.uint8
    observation, info = env.reset(seed=0)
    assert observation.shape == shape and observation.dtype == np.uint8
    assert info["ale.lives"] == info["lives"]
    env.action_space.seed(0)
    frames_before = info["episode_frame_number"]
    for _ in range(20):
        observation, _, _, _, info = env.step(env.action_space.sample())
        assert observation.shape == shape and info["ale.lives"] == info["lives"]
    played = info["episode_frame_number"] - frames_before
    if isinstance(frameskip, int):
        assert played == 20 * frameskip
    else:
        assert 20 * 2 <= played <= 20 * 4
    if env_id.startswith("Breakout"):
        assert info["ale.lives"] == 5
    env.close()


@pytest.mark.parametrize("env_id", ["Pong-ram-v4"])  # a few seconds each: seeding reloads the ROM
def test_a_2017_atari_env_passes_gymnasiums_check_env(env_id: str) -> None:
    from gymnasium.utils.env_checker import check_env

    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_a_2017_env_pickles_with_its_arguments() -> None:
    env = gym.make("Pong-ramDeterministic-v4").unwrapped
    copy = pickle.loads(pickle.dumps(env))
    assert type(copy) is type(env) and copy._frameskip == 4 and copy.observation_space.shape == (128,)
    assert copy.reset(seed=0)[1]["ale.lives"] == 0
    env.close()
    copy.close()


def test_atari_preprocessing_works_on_a_2017_id() -> None:
    from gymnasium.wrappers import AtariPreprocessing

    env = AtariPreprocessing(gym.make("PongNoFrameskip-v4"), frame_skip=4, screen_size=84)  # needs opencv
    observation, _ = env.reset(seed=0)
    observation, *_ = env.step(0)
    assert observation.shape == (84, 84) and observation.dtype == np.uint8
    env.close()


def run_python(code: str) -> list[str]:
    """Run ``code`` with every warning an error; its stdout lines."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize("order", ["palaestra first", "palaestra first, ale-py looked up", "ale-py first"])
def test_palaestra_gets_2017s_ids_in_either_import_order_without_warnings(order: str) -> None:
    imports = {
        "palaestra first": "import palaestra; lazy = 'ale_py' not in sys.modules; import ale_py",
        # importlib.util.find_spec asks where ale-py is without importing it (palaestra's catalogue does)
        "palaestra first, ale-py looked up": (
            "import palaestra, importlib.util; importlib.util.find_spec('ale_py'); "
            "lazy = 'ale_py' not in sys.modules; import ale_py"
        ),
        "ale-py first": "import ale_py; lazy = True; import palaestra",
    }[order]
    out = run_python(
        f"""
        import sys
        import gymnasium as gym
        {imports}
        gym.register_envs(ale_py)
        print(lazy, gym.spec("Pong-v0").max_episode_steps, gym.spec("PongNoFrameskip-v4").max_episode_steps)
        print(gym.spec("Pong-v0").entry_point, gym.spec("ALE/Pong-v5").entry_point, "Pong-ram-v0" in gym.registry)
        env = gym.make("Pong-v0")  # no "Overriding environment" warning, here or at make
        print(env.spec.max_episode_steps)
        """
    )
    assert out == [
        "True", "10000", "400000", ENTRY_POINT, "ale_py.env:AtariEnv", "True", "10000",
    ]  # fmt: skip


def test_palaestra_envs_lists_the_atari_ids_without_warnings() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "palaestra", "envs", "--group", "atari"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and "Overriding" not in done.stderr, done.stderr
    assert "Pong-ramNoFrameskip-v4" in done.stdout and "with RAM as input" in done.stdout
    assert "ALE/Pong-v5" in done.stdout


def test_a_program_that_imports_only_ale_py_gets_ale_pys_ids() -> None:
    out = run_python(
        """
        import gymnasium as gym, ale_py
        gym.register_envs(ale_py)
        spec = gym.spec("Pong-v0")
        print(spec.entry_point, spec.max_episode_steps, "Pong-ram-v0" in gym.registry)
        """
    )
    assert out == ["ale_py.env:AtariEnv", "None", "False"]


def test_without_ale_py_the_2017_ids_say_which_extra_to_install() -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(
            """
            import sys
            sys.modules["ale_py"] = None  # as if ale-py were not installed
            import gymnasium as gym, palaestra
            gym.make("Pong-ram-v0")
            """
        )],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "DependencyNotInstalled" in last and "pip install 'palaestra[atari]'" in last
