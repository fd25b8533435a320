"""`palaestra demo`: the whole loop, from an agent that learns to the evaluation's page, in real processes."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from palaestra.cli import exits
from tests.cli.cli_helpers import PALAESTRA, cli_env, palaestra
from tests.server_process import ServerProcess, free_port

STARTUP_S = 240
# PATH without the venv's bin folder, as after `make demo` in a shell that did not activate it
NO_VENV_PATH = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != Path(PALAESTRA).parent)
VENV_PATH = os.pathsep.join([str(Path(PALAESTRA).parent), NO_VENV_PATH])


def _read_until(proc: subprocess.Popen[str], marker: str, timeout: float) -> list[str]:
    """Lines of ``proc``'s stdout up to and including the first that contains ``marker``."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        lines.append(line.rstrip("\n"))
        if marker in line:
            return lines
    raise AssertionError(f"no {marker!r} line within {timeout}s; got:\n" + "\n".join(lines))


@pytest.mark.slow
def test_demo_trains_uploads_serves_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [PALAESTRA, "demo", "--data-dir", "demo", "--port", str(port)],
        cwd=tmp_path,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = _read_until(proc, "Serving the scoreboard", STARTUP_S)
        text = "\n".join(lines)
        assert "Solved CartPole-v1 after" in text
        url = next(ln.split(": ", 1)[1] for ln in lines if ln.startswith("Your evaluation: "))
        assert url.startswith(f"http://127.0.0.1:{port}/evaluations/")

        page = httpx.get(url, timeout=30)
        assert page.status_code == 200
        assert "CartPole-v1" in page.text and "palaestra-cem" in page.text
        assert "Solved" in page.text
        evaluation_id = url.rsplit("/", 1)[1]
        api = httpx.get(f"http://127.0.0.1:{port}/v1/evaluations/{evaluation_id}", timeout=30)
        assert api.status_code == 200
        score = api.json()["score"]
        assert score["solved"] is True and score["mean"] >= 475.0
        assert len(api.json()["videos"]) >= 3
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=30).status_code == 200

        run_dirs = list((tmp_path / "demo" / "runs").iterdir())
        assert len(run_dirs) == 1
        assert list(run_dirs[0].glob("openaigym.video.*.mp4")), "the demo records videos"

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    with pytest.raises(httpx.HTTPError):
        httpx.get(url, timeout=2)


@pytest.mark.slow
def test_demo_runs_again_on_the_same_data_dir_and_finds_a_free_port(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        first = palaestra(
            "demo", "--data-dir", "d", "--port", str(port), "--episodes", "30", "--no-serve", cwd=tmp_path,
            PATH=VENV_PATH,
        )
        second = palaestra(
            "demo",
            "--data-dir",
            "d",
            "--port",
            str(port),
            "--episodes",
            "30",
            "--exit-after-upload",
            cwd=tmp_path,
            PATH=VENV_PATH,
        )
    urls = []
    for result in (first, second):
        assert result.returncode == 0, result.stderr
        assert f"Port {port} is busy; using port" in result.stdout
        assert "Not solved within 30 episodes" in result.stdout
        lines = result.stdout.strip().splitlines()
        assert lines[-2].startswith("Your evaluation: http://127.0.0.1:")
        assert lines[-1].startswith("The scoreboard has stopped; serve it again with: palaestra server --data-dir ")
        urls.append(lines[-2].split(": ", 1)[1])
    assert len(list((tmp_path / "d" / "runs").iterdir())) == 2
    assert urls[0] != urls[1]
    # --data-dir means the same to every command: the server and `users` find the demo's data there
    assert (tmp_path / "d" / "scoreboard.sqlite3").exists()
    assert "demo\tkey_" in palaestra("users", "list", "--data-dir", "d", cwd=tmp_path).stdout


@pytest.mark.slow
def test_demo_says_how_to_serve_its_data_again_and_that_command_serves_it(tmp_path: Path) -> None:
    """Without palaestra on PATH the command names the program by its path, and says how to activate."""
    result = palaestra(
        "demo", "--data-dir", "d", "--port", str(free_port()), "--episodes", "20", "--no-serve", cwd=tmp_path,
        PATH=NO_VENV_PATH,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    *_, evaluation_line, activate, hint = result.stdout.strip().splitlines()
    url = evaluation_line.split(": ", 1)[1]
    assert f"`source {Path(PALAESTRA).parent / 'activate'}` puts it there" in activate
    command = shlex.split(hint.split("serve it again with: ", 1)[1])
    program, args = command[: command.index("server")], command[command.index("server") + 1 :]
    assert program == [PALAESTRA] and args[0] == "--data-dir"
    # the hint as printed, run where it was printed, with the same PATH, on the port of the evaluation's URL
    server = ServerProcess(
        args, port=urlsplit(url).port, command=program, cwd=tmp_path, env=cli_env(PATH=NO_VENV_PATH)
    )
    with server:
        page = httpx.get(url, timeout=5)
        assert page.status_code == 200 and "CartPole-v1" in page.text and "palaestra-cem" in page.text


def test_the_command_is_shown_as_palaestra_where_path_finds_it_else_by_its_path(tmp_path: Path) -> None:
    show = "from palaestra.cli import runnable_command; print(runnable_command())"
    python = str(Path(PALAESTRA).parent / "python")
    on_path = subprocess.run([python, "-c", show], env=cli_env(PATH=VENV_PATH), capture_output=True, text=True)
    assert on_path.stdout.strip() == "('palaestra', None)", on_path.stderr
    venv = Path(PALAESTRA).parent.parent
    inside = subprocess.run(
        [python, "-c", show], env=cli_env(PATH=NO_VENV_PATH), cwd=venv.parent, capture_output=True, text=True
    )
    relative = f"{venv.name}/bin/palaestra"
    assert inside.stdout.strip() == repr((relative, f"source {venv.name}/bin/activate")), inside.stderr


@pytest.mark.slow
def test_demo_prints_its_story_alone_and_the_servers_log_goes_to_the_file_it_names(tmp_path: Path) -> None:
    result = palaestra(
        "demo", "--data-dir", "d", "--port", str(free_port()), "--episodes", "20", "--no-serve", "--progress", cwd=tmp_path,
        PATH=VENV_PATH,
    )
    assert result.returncode == 0, result.stderr
    story = result.stdout.strip().splitlines()
    assert [line.split(" ", 1)[0] for line in story] == [
        "Starting", "Created", "", "Training", "Not", "Uploading", "Scoreboard:", "Your", "The",
    ], story
    log = Path(re.search(r"its log in (\S+)\) \.\.\.$", story[0]).group(1))  # type: ignore[union-attr]
    assert log == tmp_path / "d" / "demo.log" and (log.stat().st_mode & 0o777) == 0o600
    logged = log.read_text()
    for noise in ('"GET /v1/health" 200', "Uploading data from manifest", "successfully uploaded"):
        assert noise in logged and noise not in result.stdout + result.stderr, noise
    # the demo's umask (077) makes its files private from the start: nothing to tighten, nothing said
    assert "readable by this user only" not in result.stdout + result.stderr
    # stderr: the progress bar, and nothing else
    bar = result.stderr.replace("\r", "\n").strip().splitlines()
    assert bar and all(line.startswith("CartPole-v1: ") or not line.strip() for line in bar), bar
    assert "/20 [" in result.stderr


def test_demo_rejects_a_bad_episode_count(tmp_path: Path) -> None:
    result = palaestra("demo", "--episodes", "0", "--no-serve", cwd=tmp_path)
    assert result.returncode == 2
    assert "--episodes" in result.stderr
    assert not (tmp_path / ".palaestra-demo").exists()


def test_a_demo_that_cannot_listen_exits_with_the_could_not_start_code(tmp_path: Path) -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: binding it fails at once, nothing is sent
    result = palaestra("demo", "--host", "192.0.2.1", "--no-serve", "--data-dir", "d", cwd=tmp_path)
    assert result.returncode == exits.COULD_NOT_START
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("palaestra demo: error: The scoreboard cannot listen on 192.0.2.1")
    assert "--host" in line
    assert not (tmp_path / "d" / "runs").exists()
