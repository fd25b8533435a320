"""A core install (``pip install palaestra``, no extra) runs every env that ``palaestra envs`` lists.

The rest of the suite has every extra installed, so an env whose code imports something only an
extra or the dev tools bring (``KellyCoinflipGeneralized-v0`` once imported scipy in ``reset()``)
passes there and fails for a user. Here a venv with only ``pip install <this checkout>``
(:mod:`tests.core_install`) lists its runnable ids and makes, resets and steps each one; and every
id it cannot run names an extra that pyproject.toml declares, or says why no install helps.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.core_install import CORE, build_venv, run_in

# Run in the core venv: make, reset (seeded) and step each id given on stdin; one JSON line per id
# with the error of the first failing call, or null.
CHECK_ENVS = r"""
import json, sys, traceback
import gymnasium as gym
import palaestra  # registers palaestra's ids (the 2017 registry, Go, Hex)

def check(env_id):
    env = gym.make(env_id)
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(5):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
    finally:
        env.close()

for env_id in json.load(sys.stdin):
    try:
        check(env_id)
        error = None
    except Exception as exc:
        error = "".join(traceback.format_exception_only(exc)).strip() + " at " + traceback.extract_tb(exc.__traceback__)[-1].filename
    print(json.dumps({"env_id": env_id, "error": error}))
"""
# What a core install has no extra for: the reasons that name no palaestra extra, on purpose
NO_EXTRA_REASONS = (
    "is not provided",  # CNNClassifierTraining, ConvergenceControl: they trained Keras models
    "has no successor",  # Thrower, Striker: Gymnasium dropped them
    "only to explain",  # ids Gymnasium registers to say they are gone (mujoco-py, shimmy)
    "pip install 'gymnasium[jax]'",  # Gymnasium's own JAX envs, which palaestra does not wrap
)


@pytest.fixture(scope="module")
def core_venv() -> None:
    problem = build_venv(CORE)
    if problem:
        pytest.fail(f"cannot build the core-install venv: {problem}")


def _ok(*args: str, stdin: str | None = None) -> str:
    done = run_in(CORE, *args, stdin=stdin)
    assert done.returncode == 0, f"{args}\n--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}"
    return done.stdout


def _listed(*flags: str) -> list[dict[str, object]]:
    return list(json.loads(_ok("palaestra", "envs", "--json", *flags)))


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the first run builds a venv (pip downloads what it has no wheel of)
def test_every_env_a_core_install_lists_as_runnable_makes_resets_and_steps(core_venv: None) -> None:
    installed = _ok("python", "-m", "pip", "list", "--format=freeze").lower()
    assert "scipy==" not in installed and "open-spiel==" not in installed and "fastapi==" not in installed
    runnable = [str(entry["env_id"]) for entry in _listed()]
    assert {"CartPole-v1", "KellyCoinflipGeneralized-v0", "Copy-v0", "SemisuperPendulumNoise-v0"} <= set(runnable)
    assert "Go9x9-v0" not in runnable and "LunarLander-v3" not in runnable
    results = [json.loads(line) for line in _ok("python", "-c", CHECK_ENVS, stdin=json.dumps(runnable)).splitlines()]
    assert [r["env_id"] for r in results] == runnable
    failures = {r["env_id"]: r["error"] for r in results if r["error"]}
    assert failures == {}, f"listed as runnable in a core install, but failed: {json.dumps(failures, indent=1)}"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_env_a_core_install_cannot_run_names_a_declared_extra_or_why_none_helps(core_venv: None) -> None:
    declared = "import importlib.metadata as m; print(*m.metadata('palaestra').get_all('Provides-Extra'))"
    extras = set(_ok("python", "-c", declared).split())
    assert {"board", "atari", "mujoco", "box2d"} <= extras
    unavailable = [entry for entry in _listed("--all") if not entry["available"]]
    assert {"Go9x9-v0", "LunarLander-v3", "HalfCheetah-v5", "Pong-v0"} <= {e["env_id"] for e in unavailable}
    for entry in unavailable:
        reason = str(entry["unavailable_reason"])
        named = re.findall(r"pip install 'palaestra\[(\w+)\]'", reason)
        if named:
            assert set(named) <= extras, f"{entry['env_id']}: {reason} names an extra palaestra does not declare"
        else:
            assert any(why in reason for why in NO_EXTRA_REASONS), f"{entry['env_id']}: {reason}"
