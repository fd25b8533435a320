"""Atari (the `atari` extra): ale-py's 2017 and v5 ids under the Monitor, with videos, and `palaestra run`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest

import palaestra as pal
from tests.cli.cli_helpers import palaestra

ale_py = pytest.importorskip("ale_py", reason="the atari extra (ale-py) is not installed")
gym.register_envs(ale_py)

STEPS = 300


def _video_module_ready() -> bool:
    try:
        import palaestra.monitoring.video  # noqa: F401
    except ImportError:
        return False
    return True


def _frames(mp4: Path) -> int:
    ffprobe = shutil.which("ffprobe")
    if ffprobe is None:
        pytest.skip("ffprobe is not installed")
    out = subprocess.run(
        [
            ffprobe,
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-count_frames",
            "-show_entries",
            "stream=nb_read_frames,width,height,codec_name",
            "-of",
            "json",
            str(mp4),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    stream = json.loads(out.stdout)["streams"][0]
    assert stream["codec_name"] == "h264"
    assert (stream["width"], stream["height"]) == (160, 210)
    return int(stream["nb_read_frames"])


@pytest.mark.filterwarnings("ignore:.*Pong-v0 is out of date")
@pytest.mark.parametrize("env_id", ["PongNoFrameskip-v4", "ALE/Pong-v5", "Pong-v0"])
def test_atari_under_the_monitor_with_video(env_id: str, tmp_path: Path) -> None:
    video = _video_module_ready()
    env = pal.Monitor(
        gym.make(env_id, render_mode="rgb_array"), tmp_path / "run", video_callable=None if video else False
    )
    env.reset(seed=0)
    steps = 0
    while steps < STEPS:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            env.reset()
    env.close()
    results = pal.load_results(tmp_path / "run")
    assert results["env_info"]["env_id"] == env_id
    if not video:
        pytest.skip("palaestra.monitoring.video is not there yet: statistics checked, videos not")
    assert len(results["videos"]) == 1
    mp4, meta = results["videos"][0]
    assert json.loads(Path(meta).read_text())["content_type"] == "video/mp4"
    # the reset frame and one frame per step of the (unfinished) first episode
    assert _frames(Path(mp4)) == STEPS + 1


def test_palaestra_run_on_an_atari_id(tmp_path: Path) -> None:
    result = palaestra(
        "run",
        "ALE/Pong-v5",
        "--agent",
        "random",
        "--steps",
        "200",
        "--seed",
        "0",
        "--monitor",
        "pong",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "200 steps" in result.stdout
    assert pal.load_results(tmp_path / "pong")["env_info"]["env_id"] == "ALE/Pong-v5"
    summary = palaestra("results", "pong", cwd=tmp_path)
    assert summary.returncode == 0 and "unsolved environment" in summary.stdout


def test_atari_benchmark_tasks_are_available() -> None:
    from palaestra import catalogue
    from palaestra.benchmarks import benchmark_spec

    bench = benchmark_spec("Atari40M")
    assert "PongNoFrameskip-v4" in bench.env_ids
    assert all(catalogue.unavailable_reason(env_id, import_probe=True) is None for env_id in bench.env_ids)
