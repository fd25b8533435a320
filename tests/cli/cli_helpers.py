"""Running the ``palaestra`` command in a subprocess, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PALAESTRA = str(Path(sys.executable).parent / "palaestra")


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for CLI runs: no scoreboard configured, headless, unbuffered."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PALAESTRA_", "OPENAI_GYM_"))}
    env.update({"PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg", **extra})
    return env


def palaestra(
    *args: str, cwd: str | os.PathLike[str] | None = None, timeout: float = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``palaestra ARGS`` and return the finished process (output captured as text)."""
    return subprocess.run(
        [PALAESTRA, *args], cwd=cwd, env=cli_env(**env), capture_output=True, text=True, timeout=timeout
    )


