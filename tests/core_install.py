"""palaestra's core install (``pip install palaestra``, no extra), in a venv of its own.

The rest of the suite runs with every extra installed, so it cannot see an env that the core lists as
runnable but that imports something only an extra (or the dev tools) brings. This venv has only
what ``pip install <this checkout>`` installs. It is built once under a file lock in ``.cache/``
(as :mod:`tests.legacy_gym` builds gym 0.9.4's), rebuilt when pyproject.toml or setup.py change
(the dependencies may have), and palaestra is reinstalled into it when its sources change.
Import it as ``from tests.core_install import build_core_venv``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# one per checkout: .cache may be shared by several checkouts of the repository (worktrees), whose
# palaestra differ
CORE_VENV = REPO_ROOT / ".cache" / f"core-venv-{hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:8]}"
# what decides the dependencies (a change rebuilds the venv from nothing) and what palaestra is made of
_DEPENDENCY_FILES = ("pyproject.toml", "setup.py")
_SOURCE_DIRS = ("src/palaestra",)


def core_python() -> Path:
    return CORE_VENV / "bin" / "python"


def core_environment() -> dict[str, str]:
    """The environment to run the core venv's programs in: nothing of this checkout's on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PALAESTRA_", "VIRTUAL_ENV"))}
    env.pop("PYTHONPATH", None)
    env.update({"SDL_VIDEODRIVER": "dummy", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    return env


def _digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(REPO_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _dependency_digest() -> str:
    return _digest([REPO_ROOT / name for name in _DEPENDENCY_FILES])


def _source_digest() -> str:
    files = [
        path
        for folder in _SOURCE_DIRS
        for path in (REPO_ROOT / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".so", ".pyc")
        and "vendor" not in path.parts
    ]
    return _digest(files)


def _run(step: list[str]) -> str | None:
    done = subprocess.run(step, capture_output=True, text=True, env=core_environment(), cwd=CORE_VENV.parent)
    if done.returncode != 0:
        return f"{' '.join(step)} failed: {done.stderr[-1500:]}"
    return None


def build_core_venv() -> str | None:
    """Build (once, under a file lock) a venv with the core install of this checkout; returns why it
    failed, or ``None``."""
    CORE_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(CORE_VENV.with_name(CORE_VENV.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = core_python()
        dependency_stamp, source_stamp = CORE_VENV / ".dependencies", CORE_VENV / ".sources"
        dependencies, sources = _dependency_digest(), _source_digest()
        fresh = not python.exists() or not dependency_stamp.exists() or dependency_stamp.read_text() != dependencies
        if fresh:
            problem = _run([sys.executable, "-m", "venv", "--clear", str(CORE_VENV)])
            if problem:
                return problem
        elif source_stamp.exists() and source_stamp.read_text() == sources:
            return None
        # a local directory is always rebuilt and reinstalled; its dependencies only when missing
        problem = _run([str(python), "-m", "pip", "install", "--quiet", str(REPO_ROOT)])
        if problem:
            return problem
        dependency_stamp.write_text(dependencies)
        source_stamp.write_text(sources)
    return None


def run_core(*args: str, stdin: str | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run ``args`` (a program of the core venv's ``bin/`` and its arguments) outside the checkout."""
    program = CORE_VENV / "bin" / args[0]
    return subprocess.run(
        [str(program), *args[1:]], input=stdin, capture_output=True, text=True, env=core_environment(),
        cwd=CORE_VENV.parent, timeout=timeout,
    )
