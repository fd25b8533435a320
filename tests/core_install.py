"""palaestra installed as users install it, each in a venv of its own: the core alone, and beside SB3.

* :data:`CORE`: ``pip install <this checkout>``, no extra. The rest of the suite runs with every extra
  installed, so it cannot see an env that the core lists as runnable but that imports something only
  an extra (or the dev tools) brings.
* :data:`SB3`: the core and ``pip install stable-baselines3`` (with PyTorch: about 1 GB, so not a
  dev tool; pip takes a torch wheel already on the machine where there is one).

Each is built once under a file lock in ``.cache/`` (as :mod:`tests.legacy_gym` builds gym
0.9.4's), rebuilt when pyproject.toml or setup.py change (the dependencies may have), and palaestra
is reinstalled into it when its sources change. Import it as
``from tests.core_install import CORE, build_venv, run_in``.
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
_CHECKOUT = hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:8]
CORE = REPO_ROOT / ".cache" / f"core-venv-{_CHECKOUT}"
SB3 = REPO_ROOT / ".cache" / f"sb3-venv-{_CHECKOUT}"
#: what each venv has besides palaestra's core
REQUIREMENTS = {CORE: (), SB3: ("stable-baselines3",)}
# what decides the dependencies (a change rebuilds the venv from nothing) and what palaestra is made of
_DEPENDENCY_FILES = ("pyproject.toml", "setup.py")
_SOURCE_DIRS = ("src/palaestra",)


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


def _run(step: list[str], venv: Path) -> str | None:
    done = subprocess.run(step, capture_output=True, text=True, env=core_environment(), cwd=venv.parent)
    if done.returncode != 0:
        return f"{' '.join(step)} failed: {done.stderr[-1500:]}"
    return None


def build_venv(venv: Path) -> str | None:
    """Build (once, under a file lock) ``venv`` (:data:`CORE` or :data:`SB3`) with this checkout's
    core install; returns why it failed, or ``None``."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = venv / "bin" / "python"
        dependency_stamp, source_stamp = venv / ".dependencies", venv / ".sources"
        dependencies, sources = _dependency_digest(), _source_digest()
        fresh = not python.exists() or not dependency_stamp.exists() or dependency_stamp.read_text() != dependencies
        if fresh:
            problem = _run([sys.executable, "-m", "venv", "--clear", str(venv)], venv)
            if problem:
                return problem
        elif source_stamp.exists() and source_stamp.read_text() == sources:
            return None
        # a local directory is always rebuilt and reinstalled; its dependencies only when missing
        problem = _run([str(python), "-m", "pip", "install", "--quiet", str(REPO_ROOT), *REQUIREMENTS[venv]], venv)
        if problem:
            return problem
        dependency_stamp.write_text(dependencies)
        source_stamp.write_text(sources)
    return None


def run_in(venv: Path, *args: str, stdin: str | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run ``args`` (a program of ``venv``'s ``bin/`` and its arguments) outside the checkout."""
    program = venv / "bin" / args[0]
    return subprocess.run(
        [str(program), *args[1:]], input=stdin, capture_output=True, text=True, env=core_environment(),
        cwd=venv.parent, timeout=timeout,
    )
