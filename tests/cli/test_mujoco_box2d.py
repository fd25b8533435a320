"""MuJoCo and Box2D (the `mujoco` and `box2d` extras): today's ids, videos on a machine with no display,
a render failure that ends a run's videos instead of the process, and the MuJoCo benchmarks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import palaestra as pal
from palaestra.benchmarks import Benchmark, benchmark_score_from_local, benchmark_spec
from palaestra.benchmarks.runner import run_benchmark
from palaestra.envs import headless
from tests.cli.cli_helpers import palaestra

pytest.importorskip("mujoco", reason="the mujoco extra is not installed")
pytest.importorskip("Box2D", reason="the box2d extra is not installed")

MUJOCO_IDS = [
    "Ant-v5", "HalfCheetah-v5", "Hopper-v5", "Humanoid-v5", "HumanoidStandup-v5", "InvertedDoublePendulum-v5",
    "InvertedPendulum-v5", "Pusher-v5", "Reacher-v5", "Swimmer-v5", "Walker2d-v5",
]  # fmt: skip
BOX2D_IDS = ["LunarLander-v3", "LunarLanderContinuous-v3", "BipedalWalker-v3", "BipedalWalkerHardcore-v3", "CarRacing-v3"]


@pytest.fixture(autouse=True)
def _in_a_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # MuJoCo writes its warnings (mujoco 4: HalfCheetah's deprecated 'settotalmass') to MUJOCO_LOG.TXT in
    # the working directory, the benchmark's worker processes' too.
    monkeypatch.chdir(tmp_path)


def headless_env(**extra: str) -> dict[str, str]:
    """The environment of a machine with no display (and, unless given, no MUJOCO_GL of the user's)."""
    return {"DISPLAY": "", "WAYLAND_DISPLAY": "", "MUJOCO_GL": "", **extra}


def frames(mp4: Path) -> int:
    ffprobe = shutil.which("ffprobe")
    if ffprobe is None:
        pytest.skip("ffprobe is not installed (Debian package ffmpeg)")
    out = subprocess.run(
        [ffprobe, "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
         "stream=nb_read_frames,codec_name", "-of", "json", str(mp4)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    stream = json.loads(out.stdout)["streams"][0]
    assert stream["codec_name"] == "h264"
    return int(stream["nb_read_frames"])


@pytest.mark.parametrize("env_id", MUJOCO_IDS + BOX2D_IDS)
def test_todays_mujoco_and_box2d_ids_make_and_step(env_id: str) -> None:
    env = gym.make(env_id)
    observation, _ = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    env.action_space.seed(0)
    for _ in range(5):
        observation, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert np.isfinite(reward)
        if terminated or truncated:
            break
    env.close()


def test_the_backend_is_chosen_only_without_a_display_and_a_users_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(headless.sys, "platform", "linux")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    assert not headless.choose_mujoco_backend() and "MUJOCO_GL" not in os.environ
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    assert not headless.choose_mujoco_backend() and os.environ["MUJOCO_GL"] == "osmesa"
    monkeypatch.delenv("MUJOCO_GL")
    assert headless.choose_mujoco_backend() and os.environ["MUJOCO_GL"] == "egl"


def test_a_mujoco_env_records_videos_off_screen_on_a_machine_with_no_display(tmp_path: Path) -> None:
    # InvertedPendulum under random actions falls within a few dozen steps: two short videos.
    result = palaestra(
        "run", "InvertedPendulum-v5", "--agent", "random", "--episodes", "2", "--seed", "0",
        "--monitor", "run", cwd=tmp_path, **headless_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("MuJoCo renders off-screen through EGL") == 1
    assert "is broken" not in result.stderr
    results = pal.load_results(tmp_path / "run")
    assert len(results["videos"]) == 2
    for (mp4, _), length in zip(sorted(results["videos"]), results["episode_lengths"]):
        assert frames(Path(mp4)) == length + 1  # the reset frame and one a step


def test_a_render_failure_ends_the_runs_videos_with_one_warning_not_the_process(tmp_path: Path) -> None:
    # MuJoCo told to use GLFW with no display: the first render raises; a second attempt would abort
    # the process inside MuJoCo (rc 134), so the Monitor makes none.
    result = palaestra(
        "run", "InvertedPendulum-v5", "--agent", "random", "--episodes", "3", "--seed", "0",
        "--monitor", "run", cwd=tmp_path, **headless_env(MUJOCO_GL="glfw"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("is broken and will be dropped") == 1
    assert "env.render() raised" in result.stderr and "Traceback" not in result.stderr
    assert "no more videos of InvertedPendulum-v5 in this run" in result.stderr
    results = pal.load_results(tmp_path / "run")
    assert len(results["episode_lengths"]) == 3 and results["videos"] == []
    assert len(list((tmp_path / "run").glob("*.meta.json"))) == 1  # episode 1 (on the schedule) never started one


def test_a_box2d_env_records_a_video_with_no_display(tmp_path: Path) -> None:
    result = palaestra(
        "run", "LunarLander-v3", "--agent", "random", "--episodes", "1", "--seed", "0",
        "--monitor", "run", cwd=tmp_path, **headless_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    results = pal.load_results(tmp_path / "run")
    [(mp4, _)] = results["videos"]
    assert frames(Path(mp4)) == results["episode_lengths"][0] + 1


def short(benchmark_id: str, steps: int) -> Benchmark:
    """``benchmark_id`` with every task cut to one trial of ``steps`` steps (same envs, scorer, floors)."""
    spec = benchmark_spec(benchmark_id)
    tasks = [{**task.to_dict(), "trials": 1, "max_timesteps": steps} for task in spec.tasks]
    return Benchmark(f"{benchmark_id}-short", spec.scorer, tasks)


@pytest.mark.slow
@pytest.mark.parametrize("benchmark_id", ["Mujoco1M-v1", "Mujoco10M-v1"])
def test_the_mujoco_benchmarks_are_available_and_a_short_trial_of_each_runs(
    benchmark_id: str, tmp_path: Path
) -> None:
    spec = benchmark_spec(benchmark_id)
    assert spec.available and spec.unavailable_reasons() == {}
    bench = short(benchmark_id, 300)
    report = run_benchmark(bench, "random", tmp_path, workers=2, seed=0, progress=False)
    assert report.count("finished") == len(spec.env_ids) and not report.failed and not report.unavailable
    scored = benchmark_score_from_local(bench, tmp_path, reps=200)
    assert [task["trials_submitted"] for task in scored["tasks"]] == [1] * len(spec.tasks)
    assert 0.0 <= scored["score"] <= 1.0
