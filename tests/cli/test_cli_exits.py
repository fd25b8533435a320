"""The exit-code convention of every subcommand (palaestra.cli.exits): one line per failure, a
traceback only with --debug, the subcommand's own usage, a quiet end on a closed pipe, SIGTERM obeyed,
and a missing extra named."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gymnasium
import pytest

import palaestra as pal
from palaestra.cli import exits
from tests.cli.cli_helpers import PALAESTRA, cli_env, palaestra

BROKEN_AGENT = '''
class Broken:
    def act(self, observation):
        raise RuntimeError("the agent broke")


def make(observation_space, action_space):
    return Broken()
'''


def _stderr_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (("envs", "--bogus"), "usage: palaestra envs"),
        (("benchmark", "list", "--bogus"), "usage: palaestra benchmark list"),
        (("users", "list", "--bogus"), "usage: palaestra users list"),
        (("results", "some-dir", "extra-arg"), "usage: palaestra results"),
    ],
)
def test_an_unknown_option_is_reported_with_the_subcommands_usage(args: tuple[str, ...], usage: str) -> None:
    result = palaestra(*args)
    assert result.returncode == exits.USAGE
    assert result.stderr.startswith(usage), result.stderr
    assert _stderr_lines(result)[-1].endswith(f"unrecognized arguments: {args[-1]}")


def test_an_unexpected_error_is_one_line_that_points_to_debug(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(BROKEN_AGENT)
    args = ("run", "CartPole-v1", "--agent", "broken:make", "--episodes", "2", "--no-video")
    result = palaestra(*args, "--monitor", "a", cwd=tmp_path)
    assert result.returncode == exits.FAILURE
    (line,) = _stderr_lines(result)  # no traceback, no "Finished writing results" before it
    assert line == "palaestra run: error: RuntimeError: the agent broke (run with --debug for the traceback)"

    debug = palaestra(*args, "--monitor", "b", "--debug", cwd=tmp_path)
    assert debug.returncode == exits.FAILURE
    assert "Traceback (most recent call last)" in debug.stderr and 'raise RuntimeError("the agent broke")' in debug.stderr
    assert _stderr_lines(debug)[-1] == "palaestra run: error: RuntimeError: the agent broke"
    # --debug before the subcommand works the same
    assert "Traceback" in palaestra("--debug", *args, "--monitor", "c", cwd=tmp_path).stderr


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly() -> None:
    process = subprocess.Popen(
        [PALAESTRA, "envs", "--all"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env()
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # `palaestra envs | head -0`: the reader is gone before the first line
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == exits.BROKEN_PIPE
    assert stderr == ""


def _main_without(modules: list[str], *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``palaestra ARGV`` in a Python where ``modules`` cannot be imported (as without their extra)."""
    code = textwrap.dedent(
        f"""
        import sys
        for name in {modules!r}:
            sys.modules[name] = None  # `import name` raises ModuleNotFoundError, find_spec says None
        from palaestra.cli import main
        sys.exit(main({list(argv)!r}))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("blocked", "argv", "extra"),
    [
        (["fastapi"], ["server", "--data-dir", "board"], "server"),
        (["sqlalchemy"], ["users", "list", "--data-dir", "board"], "server"),
        (["uvicorn"], ["demo", "--no-serve", "--data-dir", "demo"], "server"),
        (["matplotlib"], ["results", "run", "--plot", "curve.png"], "plot"),
        (["pyspiel"], ["run", "Hex9x9-v0", "--agent", "random", "--episodes", "1", "--monitor", "hex"], "board"),
    ],
    ids=["server", "users", "demo", "plot", "board"],
)
def test_a_feature_without_its_extra_says_which_extra_to_install(
    blocked: list[str], argv: list[str], extra: str, tmp_path: Path
) -> None:
    with pal.Monitor(gymnasium.make("CartPole-v1"), tmp_path / "run") as env:
        env.reset(seed=0)
        while not any(env.step(env.action_space.sample())[2:4]):
            pass
    result = _main_without(blocked, *argv, cwd=tmp_path)
    assert result.returncode == exits.FAILURE, result.stderr
    (line,) = _stderr_lines(result)
    assert f"pip install 'palaestra[{extra}]'" in line, line
    assert not (tmp_path / "curve.png").exists() and not (tmp_path / "hex").exists()


@pytest.mark.skipif(importlib.util.find_spec("jax") is not None, reason="jax is installed here")
def test_an_env_whose_engine_is_missing_is_refused_with_what_to_install(tmp_path: Path) -> None:
    result = palaestra("run", "phys2d/CartPole-v1", "--agent", "random", "--episodes", "1", "--monitor", "p", cwd=tmp_path)
    assert result.returncode == exits.FAILURE
    (line,) = _stderr_lines(result)
    assert line == (
        "palaestra run: error: Cannot make phys2d/CartPole-v1: phys2d/CartPole-v1 needs JAX, which is not "
        "installed: pip install 'gymnasium[jax]'"
    )
    assert not (tmp_path / "p").exists()


def test_importing_palaestra_needs_no_extra(tmp_path: Path) -> None:
    blocked = ["fastapi", "uvicorn", "sqlalchemy", "matplotlib", "pyspiel", "ale_py", "ray", "pettingzoo"]
    code = textwrap.dedent(
        f"""
        import sys
        for name in {blocked!r}:
            sys.modules[name] = None
        import gymnasium as gym
        import palaestra, palaestra.benchmarks, palaestra.catalogue, palaestra.scoreboard.client
        with palaestra.Monitor(gym.make("CartPole-v1"), "run") as env:
            env.reset(seed=0)
            env.step(0)
        print(palaestra.load_results("run")["env_info"]["env_id"], callable(palaestra.upload))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["CartPole-v1", "True"]


# -- SIGTERM ---------------------------------------------------------------------------------------


def _wait_for(predicate: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s")


@pytest.mark.slow
def test_sigterm_stops_a_run_that_records_videos(tmp_path: Path) -> None:
    """pygame's SDL would swallow SIGTERM; `kill`, `timeout`, Slurm and `docker stop` must work."""
    process = subprocess.Popen(
        [PALAESTRA, "run", "CartPole-v1", "--agent", "random", "--episodes", "100000", "--monitor", "d"],
        cwd=tmp_path,
        env=cli_env(SDL_VIDEODRIVER="dummy"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # a video of episode 8 means that pygame has rendered (and SDL is initialised) for a while
    _wait_for(lambda: list((tmp_path / "d").glob("*video000008.meta.json")), timeout=120)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == exits.TERMINATED, stderr
    assert stderr.strip().splitlines()[-1] == (
        "palaestra run: terminated; the directory holds every episode that finished."
    )
    assert len(pal.load_results(tmp_path / "d")["episode_rewards"]) >= 8  # episodes 0-7 finished


@pytest.mark.slow
def test_sigterm_stops_a_script_whose_monitor_records_videos(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import gymnasium as gym
            import palaestra

            env = palaestra.Monitor(gym.make("CartPole-v1", render_mode="rgb_array"), "d", video_callable=lambda e: True)
            while True:
                env.reset()
                while not any(env.step(env.action_space.sample())[2:4]):
                    pass
            """
        )
    )
    process = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=cli_env(SDL_VIDEODRIVER="dummy"))
    _wait_for(lambda: list((tmp_path / "d").glob("*video000002.meta.json")), timeout=120)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == -signal.SIGTERM
    assert len(pal.load_results(tmp_path / "d")["episode_rewards"]) >= 2
