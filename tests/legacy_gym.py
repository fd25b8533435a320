"""The original gym 0.9.4, in a venv of its own, for the tests of the 2017 contracts.

Shared by the whole suite (Monitor and loader compatibility, the 2017 upload client, the 2017 scorers).
Import it as ``from tests.legacy_gym import run_legacy_gym``.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
LEGACY_GYM_VENV = REPO_ROOT / ".cache" / "gym094-venv"
LEGACY_GYM_REQUIREMENTS = ["gym==0.9.4", "numpy<2", "scipy<1.14", "six", "requests"]


def legacy_python() -> Path:
    return LEGACY_GYM_VENV / "bin" / "python"


def build_legacy_gym_venv() -> str | None:
    """Build (once, under a file lock) a venv with the original gym 0.9.4; returns why it failed."""
    LEGACY_GYM_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(LEGACY_GYM_VENV.parent / "gym094.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = legacy_python()
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


def run_legacy_gym(python: str, code: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    """Run ``code`` under gym 0.9.4 and return its stdout; fails the test with stderr on error."""
    full_env = {**os.environ, "GYM_NO_LOGGER_SETUP": "1", **(env or {})}
    full_env.pop("PYTHONPATH", None)
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=full_env, timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"gym 0.9.4 code failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout
