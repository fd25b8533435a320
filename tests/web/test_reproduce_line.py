"""The evaluation page's "To reproduce" line is the recorded command as it can be typed: runs recorded
by real processes (palaestra's installed command, ``python -m``, a script, ``python -c``), their line
built as the page builds it, and the line run again in a shell where it can be."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from palaestra.monitoring.provenance import load_provenance
from palaestra.scoreboard.server.web.provenance_view import reproducing_command

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RUN = ["run", "CartPole-v1", "--agent", "random", "--episodes", "2", "--seed", "3", "--monitor", "rec"]
SCRIPT = """\
import sys
import gymnasium as gym
import palaestra

env = palaestra.Monitor(gym.make("CartPole-v1"), sys.argv[-1], video_callable=False)
for seed in range(2):
    env.reset(seed=seed)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        done = terminated or truncated
env.close()
"""


def _environment() -> dict[str, str]:
    """This test's interpreter and its ``palaestra`` command first on PATH, this checkout's sources first."""
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
    }


def _shown_line(workdir: Path, argv: list[str]) -> str:
    """Record a run with ``argv`` (in ``workdir``, monitoring into ``workdir/rec``): its "To reproduce" text."""
    workdir.mkdir()
    (workdir / "train.py").write_text(SCRIPT)
    done = subprocess.run(argv, cwd=workdir, env=_environment(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    provenance = load_provenance(workdir / "rec")
    assert provenance is not None
    shown = reproducing_command(provenance)
    assert shown is not None
    return shown


def _runs_again(shown: str, workdir: Path) -> None:
    """``shown``, typed into a shell in a fresh folder like the first, records a run there too."""
    workdir.mkdir()
    (workdir / "train.py").write_text(SCRIPT)
    done = subprocess.run(["bash", "-c", shown], cwd=workdir, env=_environment(), capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, f"{shown!r} does not run: {done.stderr}"
    assert load_provenance(workdir / "rec") is not None


@pytest.mark.parametrize(
    ("how", "argv", "expected"),
    [
        ("the palaestra command", [str(BIN / "palaestra"), *RUN], "palaestra " + " ".join(RUN)),
        ("python -m palaestra", [sys.executable, "-m", "palaestra", *RUN], "python -m palaestra " + " ".join(RUN)),
        ("a script", [sys.executable, "train.py", "rec"], "python train.py rec"),
    ],
)
def test_the_reproduce_line_is_the_command_as_it_can_be_typed(
    tmp_path: Path, how: str, argv: list[str], expected: str
) -> None:
    # the last line (a ``git checkout`` of the code's commit may come first: the venv's checkout)
    shown = _shown_line(tmp_path / "first", argv).splitlines()[-1]
    assert shown == expected, how
    _runs_again(shown, tmp_path / "again")


def test_a_python_c_run_shows_its_arguments_and_says_that_the_program_text_was_not_recorded(
    tmp_path: Path,
) -> None:
    shown = _shown_line(tmp_path / "first", [sys.executable, "-c", SCRIPT, "rec"])
    assert shown.splitlines()[-2:] == [
        "# run as python -c PROGRAM: the program's text is not recorded, only the arguments after it",
        "python -c … rec",
    ]
