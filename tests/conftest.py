"""Fixtures shared by the whole suite."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
LEGACY_GYM_VENV = REPO_ROOT / ".cache" / "gym094-venv"
LEGACY_GYM_REQUIREMENTS = ["gym==0.9.4", "numpy<2", "scipy<1.14", "six", "requests"]


def _legacy_python() -> Path:
    return LEGACY_GYM_VENV / "bin" / "python"


def _build_legacy_gym_venv() -> str | None:
    """Build (once, under a file lock) a venv with the original gym 0.9.4; returns why it failed."""
    LEGACY_GYM_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(LEGACY_GYM_VENV.parent / "gym094.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = _legacy_python()
        probe = [str(python), "-c", "import gym, gym.scoreboard.api, gym.benchmarks, scipy"]
        if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
            return None
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(LEGACY_GYM_VENV)],
            [str(python), "-m", "pip", "install", "-q", *LEGACY_GYM_REQUIREMENTS],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                return f"{' '.join(step)} failed: {done.stderr[-500:]}"
        if subprocess.run(probe, capture_output=True).returncode != 0:
            return "gym 0.9.4 installed but does not import"
    return None


@pytest.fixture(scope="session")
def legacy_gym_python() -> str:
    """A Python executable with the original gym 0.9.4 (its Monitor, loader, upload client, benchmarks)."""
    problem = _build_legacy_gym_venv()
    if problem:
        pytest.skip(f"cannot build the gym 0.9.4 venv: {problem}")
    return str(_legacy_python())


def run_legacy_gym(python: str, code: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    """Run ``code`` under gym 0.9.4 and return its stdout; fails the test with stderr on error."""
    full_env = {**os.environ, "GYM_NO_LOGGER_SETUP": "1", **(env or {})}
    full_env.pop("PYTHONPATH", None)
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=full_env, timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"gym 0.9.4 code failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


@pytest.fixture
def artifacts_dir(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A folder under test-artifacts/ for screenshots and other things a person may want to look at."""
    path = REPO_ROOT / "test-artifacts" / request.node.name
    path.mkdir(parents=True, exist_ok=True)
    yield path
