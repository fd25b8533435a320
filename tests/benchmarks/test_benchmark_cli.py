"""``palaestra benchmark run|score|list`` as a user runs them (real processes)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.cli import main


@pytest.fixture(autouse=True)
def _restore_palaestra_logger() -> Iterator[None]:
    # main() gives the "palaestra" logger a handler and stops propagation; undo that for other tests
    logger = logging.getLogger("palaestra")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


def palaestra(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "palaestra", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=240,
    )


def test_run_resume_and_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cc2"
    done = palaestra(  # a real process, with two worker processes
        "benchmark", "run", "ClassicControl2-v1", "--agent", "random", "--out", str(out), "--workers", "2"
    )
    assert done.returncode == 0, done.stderr
    assert "ClassicControl2-v1: 2 trial(s) run, 0 already finished, 0 failed" in done.stdout
    assert "CartPole-v0" in done.stdout and "IQM" in done.stdout
    assert f"palaestra upload {out} --benchmark ClassicControl2-v1" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == ["CartPole-v0-0", "Pendulum-v1-0"]

    args = ["benchmark", "run", "ClassicControl2-v1", "--agent", "random", "--out", str(out), "--no-score"]
    assert main(args) == 0
    assert "0 trial(s) run, 2 already finished" in capsys.readouterr().out

    assert main(["benchmark", "score", str(out), "--benchmark", "ClassicControl2-v1", "--reps", "1000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["task", "trials", "floor"]
    assert any(line.startswith("CartPole-v0 ") and "1/1" in line for line in lines)
    assert any("envs solved" in line for line in lines)
    assert any(line.strip().startswith("IQM") for line in lines)
    # one trial per task: no interval, said as the benchmark page says it (not "[0.099, 0.099]")
    [iqm] = [line for line in lines if line.strip().startswith("IQM")]
    assert iqm.endswith("n = 1, no interval") and "[" not in iqm
    assert all("[" not in line for line in lines if line.strip().startswith("tau = "))

    args = [
        "benchmark",
        "score",
        str(out),
        "--benchmark",
        "ClassicControl2-v1",
        "--json",
        "--legacy",
        "--reps",
        "500",
    ]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["legacy"] is True and result["statistics"]["reps"] == 500
    assert [t["env_id"] for t in result["tasks"]] == ["CartPole-v0", "Pendulum-v1"]


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["benchmark", "list"]) == 0
    listing = capsys.readouterr().out
    assert "Atari40M" in listing and "MinecraftImpossible-v0" in listing
    assert "ClassicControl-v0        ClipTo01ThenAverage  4 tasks  (available)" in listing
    assert "unavailable: MinecraftDefaultWorld1-v0)" in listing
    assert main(["benchmark", "list", "--json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert len(as_json) >= 17 and {"id", "tasks", "unavailable", "current_equivalent"} <= set(as_json[0])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["run", "Nope-v0", "--agent", "random", "--out", "{tmp}"],
            1,
            "No registered benchmark with id: Nope-v0",
        ),
        (["run", "ClassicControl2-v1", "--agent", "nope", "--out", "{tmp}"], 1, "module:factory"),
        (["run", "ClassicControl2-v1"], 2, "--agent"),
        ([], 2, "{run,score,list}"),
        (["score", "{tmp}/missing", "--benchmark", "Atari40M"], 1, "does not exist"),
    ],
)
def test_errors(
    args: list[str], code: int, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["benchmark", *(a.replace("{tmp}", str(tmp_path)) for a in args)]
    try:
        got = main(argv)
    except SystemExit as exc:  # argparse usage errors
        got = exc.code
    assert got == code
    assert message in capsys.readouterr().err
