"""The video recorder, through the real Monitor, real ffmpeg/ffprobe and real processes."""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from palaestra.errors import DependencyNotInstalled
from palaestra.monitoring import Monitor, capped_cubic_video_schedule, every_episode, files, vector_env_fns
from palaestra.monitoring import video as video_module
from palaestra.monitoring.video import VideoRecorder, ffmpeg_binary, ffmpeg_command, frame_rate_argument

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


# -- small environments ----------------------------------------------------------------------------------
class PictureEnv(gym.Env[np.ndarray, int]):
    """Episodes of ``length`` steps rendering ``height`` x ``width`` frames (the size changes at ``change_at``)."""

    def __init__(
        self,
        height: int = 16,
        width: int = 24,
        length: int = 5,
        render_mode: str | None = "rgb_array",
        change_at: int | None = None,
        channels: int = 3,
        fps: float | None = 25,
        none_frames: bool = False,
    ) -> None:
        self.metadata = {"render_modes": ["rgb_array"], **({"render_fps": fps} if fps else {})}
        if none_frames:
            self.metadata["semantics.async"] = True
        self.height, self.width, self.length, self.channels = height, width, length, channels
        self.render_mode = render_mode
        self.change_at = change_at
        self.none_frames = none_frames
        self.observation_space = spaces.Box(0, np.inf, (1,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: int) -> Any:
        self.t += 1
        return np.full(1, self.t, np.float32), 1.0, self.t >= self.length, False, {}

    def render(self) -> Any:
        if self.none_frames and self.t % 2:
            return None
        height = self.height + (2 if self.change_at is not None and self.t >= self.change_at else 0)
        frame = np.zeros((height, self.width, self.channels), np.uint8)
        frame[..., 0] = (self.t * 40) % 256
        frame[: height // 2, : self.width // 2] = 200
        return frame


class TextEnv(gym.Env[int, int]):
    """A terminal game: ``length`` steps, each rendered as a few lines of text."""

    def __init__(self, length: int = 3, fps: float | None = None, frame: str | None = None) -> None:
        self.metadata = {"render_modes": ["ansi"], **({"render_fps": fps} if fps else {})}
        self.render_mode = "ansi"
        self.length = length
        self.frame = frame
        self.observation_space = spaces.Discrete(100)
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        return 0, {}

    def step(self, action: int) -> Any:
        self.t += 1
        return self.t, 0.0, self.t >= self.length, False, {}

    def render(self) -> Any:
        return self.frame if self.frame is not None else io.StringIO(f"step {self.t}\n|{'#' * self.t}|\n")


def play(env: gym.Env[Any, Any], episodes: int = 1, actions: list[int] | None = None) -> list[int]:
    lengths = []
    for episode in range(episodes):
        env.reset(seed=episode)
        steps, done = 0, False
        while not done:
            action = actions[steps % len(actions)] if actions else 0
            _, _, terminated, truncated, _ = env.step(action)
            steps += 1
            done = terminated or truncated
        lengths.append(steps)
    return lengths


# -- inspecting the results ------------------------------------------------------------------------------
def ffprobe(path: str | Path) -> dict[str, Any]:
    binary = shutil.which("ffprobe")
    if binary is None:
        pytest.skip("ffprobe is not installed (Debian package ffmpeg); it is needed to inspect the mp4 files")
    done = subprocess.run(
        [binary, "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=codec_name,profile,pix_fmt,width,height,nb_read_frames,r_frame_rate", "-of", "json", str(path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if done.returncode != 0 and "error while loading shared libraries" in done.stderr:
        pytest.skip(f"ffprobe does not run: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout)["streams"][0])


def top_level_boxes(path: str | Path) -> list[str]:
    """The types of the top-level ISO-BMFF boxes of an mp4 file, in file order."""
    boxes = []
    with open(path, "rb") as f:
        size_total = os.fstat(f.fileno()).st_size
        offset = 0
        while offset < size_total:
            f.seek(offset)
            header = f.read(16)
            size, kind = int.from_bytes(header[:4], "big"), header[4:8].decode("latin-1")
            if size == 1:
                size = int.from_bytes(header[8:16], "big")
            elif size == 0:
                size = size_total - offset
            boxes.append(kind)
            offset += size
    return boxes


def monitor_videos(directory: Path) -> list[list[str]]:
    [manifest] = files.detect_training_manifests(directory)
    return list(files.read_json(manifest)["videos"])


def metas(directory: Path) -> list[dict[str, Any]]:
    return [files.read_json(p) for p in sorted(directory.glob("*.meta.json"))]


def ffmpeg_processes(marker: str) -> list[tuple[int, str]]:
    """(pid, state) of the ffmpeg processes whose command line mentions ``marker``: running ones, and
    zombies of this process (an orphan's zombie is for init to reap, not for the recorder)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = (
                Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            )
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, parent = fields[0], int(fields[1])
        if marker in cmdline and "ffmpeg" in cmdline and (state != "Z" or parent == os.getpid()):
            found.append((int(entry), state))
    return found


def wait_until_gone(marker: str, timeout: float = 30.0) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout
    while True:
        left = ffmpeg_processes(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def _no_leftover_ffmpeg(tmp_path: Path) -> Any:
    """Every test: no ffmpeg of this test (running or zombie) outlives it, and no recorder is left open."""
    yield
    assert ffmpeg_processes(str(tmp_path)) == []
    assert not [e for e in video_module._live_encoders if str(tmp_path) in e.cmdline[-1]]


# -- mp4 -------------------------------------------------------------------------------------------------
def test_cartpole_video_plays_in_a_browser(tmp_path: Path) -> None:
    fds = open_fds()
    env = Monitor(gym.make("CartPole-v1", render_mode="rgb_array"), tmp_path, video_callable=every_episode)
    [steps] = play(env)
    env.close()
    assert open_fds() == fds  # no pipe (or stderr file) left open
    [[video, meta_name]] = monitor_videos(tmp_path)
    assert video.endswith(".video000000.mp4") and meta_name.endswith(".video000000.meta.json")
    stream = ffprobe(tmp_path / video)
    assert stream["codec_name"] == "h264" and stream["pix_fmt"] == "yuv420p"
    assert (stream["width"], stream["height"]) == (600, 400)
    assert int(stream["nb_read_frames"]) == steps + 1  # the reset frame and one per step
    assert stream["r_frame_rate"] == "50/1"  # CartPole's render_fps
    boxes = top_level_boxes(tmp_path / video)
    assert boxes.index("moov") < boxes.index("mdat")  # faststart: playable before fully downloaded
    meta = files.read_json(tmp_path / meta_name)
    assert meta["episode_id"] == 0 and meta["content_type"] == files.CONTENT_TYPE_MP4
    assert meta["encoder_version"]["backend"] == "ffmpeg"
    assert "ffmpeg version" in meta["encoder_version"]["version"]
    cmdline = meta["encoder_version"]["cmdline"]
    assert "libx264" in cmdline and "+faststart" in cmdline and cmdline[-1] == str(tmp_path / video)
    assert "empty" not in meta and "broken" not in meta
    assert env.get_episode_lengths() == [steps]


def test_odd_frame_sizes_are_padded(tmp_path: Path) -> None:
    env = Monitor(PictureEnv(height=17, width=33, length=4), tmp_path, video_callable=every_episode)
    play(env)
    env.close()
    [[video, _]] = monitor_videos(tmp_path)
    stream = ffprobe(tmp_path / video)
    assert (stream["width"], stream["height"], stream["pix_fmt"]) == (34, 18, "yuv420p")
    assert int(stream["nb_read_frames"]) == 5
    assert stream["r_frame_rate"] == "25/1"


@pytest.mark.parametrize("channels", [1, 4])
def test_grayscale_and_rgba_frames(tmp_path: Path, channels: int) -> None:
    env = Monitor(PictureEnv(channels=channels), tmp_path, video_callable=every_episode)
    play(env)
    env.close()
    [[video, _]] = monitor_videos(tmp_path)
    stream = ffprobe(tmp_path / video)
    assert (stream["pix_fmt"], int(stream["nb_read_frames"])) == ("yuv420p", 6)


def test_direct_writes_without_queue(tmp_path: Path) -> None:
    env = PictureEnv(length=3, fps=None)
    recorder = VideoRecorder(
        env, str(tmp_path / "direct"), {"episode_id": 3}, queue_bytes=0, frames_per_sec=12.5
    )
    env.reset()
    recorder.capture_frame()
    for _ in range(3):
        env.step(0)
        recorder.capture_frame()
    recorder.close()
    assert recorder.functional and not recorder.empty
    stream = ffprobe(recorder.path)
    assert int(stream["nb_read_frames"]) == 4 and stream["r_frame_rate"] == "25/2"


def test_many_frames_with_a_small_queue(tmp_path: Path) -> None:
    env = PictureEnv(height=64, width=64, length=300)
    recorder = VideoRecorder(env, str(tmp_path / "long"), queue_bytes=1)  # a queue of 2 frames
    env.reset()
    for _ in range(300):
        recorder.capture_frame()
        env.step(0)
    recorder.close()
    assert recorder.functional
    assert int(ffprobe(recorder.path)["nb_read_frames"]) == 300


def decoded_grey_means(path: str | Path, size: int) -> np.ndarray:
    """Each decoded frame's mean grey level (ffmpeg decodes the mp4 back to raw grey frames)."""
    done = subprocess.run(
        [ffmpeg_binary(), "-v", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "gray", "-"],
        capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    return np.frombuffer(done.stdout, np.uint8).reshape(-1, size * size).mean(axis=1)


@pytest.mark.parametrize("queue_bytes", [video_module.DEFAULT_QUEUE_BYTES, 3 * 84 * 84], ids=["default queue", "3-frame queue"])
def test_small_frames_written_in_batches_all_arrive_in_order(tmp_path: Path, queue_bytes: int) -> None:
    """84x84 grey observations are gathered and written a batch at a time; every frame is in the file, in
    its place, also when the queue is smaller than a batch (then each batch waits for ffmpeg to read)."""
    levels = [40 + (i * 37) % 180 for i in range(500)]  # each frame one flat grey level
    frames = [np.full((84, 84), level, np.uint8) for level in levels]
    encoder = video_module.FfmpegEncoder(str(tmp_path / "grey.mp4"), frames[0], 30, queue_bytes=queue_bytes)
    for frame in frames:
        encoder.write(frame)
    encoder.finish()
    means = decoded_grey_means(tmp_path / "grey.mp4", 84)
    assert len(means) == 500
    assert np.abs(means - np.array(levels)).max() < 4  # lossy, but a flat frame keeps its level


def test_capped_cubic_schedule_through_the_monitor(tmp_path: Path) -> None:
    env = Monitor(PictureEnv(length=1), tmp_path, video_callable=None)
    play(env, episodes=9)
    env.close()
    recorded = [int(v[0].rsplit("video", 1)[1][:6]) for v in monitor_videos(tmp_path)]
    assert recorded == [e for e in range(9) if capped_cubic_video_schedule(e)] == [0, 1, 8]
    assert [m["episode_id"] for m in metas(tmp_path)] == [0, 1, 8]


def test_custom_schedule_and_disabled_videos(tmp_path: Path) -> None:
    env = Monitor(PictureEnv(length=1), tmp_path / "odd", video_callable=lambda e: e % 2 == 1)
    play(env, episodes=4)
    env.close()
    assert [v[0][-10:-4] for v in monitor_videos(tmp_path / "odd")] == ["000001", "000003"]
    env = Monitor(PictureEnv(length=1), tmp_path / "off", video_callable=False)
    play(env, episodes=2)
    env.close()
    assert not list((tmp_path / "off").glob("*.mp4")) and not list((tmp_path / "off").glob("*.meta.json"))


# -- ansi ------------------------------------------------------------------------------------------------
def test_frozenlake_ansi_recording(tmp_path: Path) -> None:
    env = Monitor(gym.make("FrozenLake-v1", render_mode="ansi"), tmp_path, video_callable=every_episode)
    [steps] = play(env, actions=[2, 2, 1, 1, 1, 2])
    env.close()
    [[video, meta_name]] = monitor_videos(tmp_path)
    assert video.endswith(".video000000.json")
    doc = files.read_json(tmp_path / video)
    assert list(doc) == ["version", "width", "height", "duration", "command", "title", "env", "stdout"]
    assert (doc["version"], doc["command"], doc["title"], doc["env"]) == (
        1,
        "-",
        "gym VideoRecorder episode",
        {},
    )
    assert len(doc["stdout"]) == steps + 1
    assert all(duration == 0.25 for duration, _ in doc["stdout"])  # FrozenLake's render_fps is 4
    assert doc["duration"] == pytest.approx(0.25 * (steps + 1))
    first = doc["stdout"][0][1]
    assert (
        first.startswith("\u001b[2J\u001b[1;1H")
        and first.endswith("\r\n")
        and "\n" not in first.replace("\r\n", "")
    )
    assert (doc["width"], doc["height"]) == (15, 6)  # what gym 0.9 wrote for FrozenLake
    meta = files.read_json(tmp_path / meta_name)
    assert meta == {
        "episode_id": 0,
        "content_type": "video/vnd.openai.ansivid",
        "encoder_version": {"backend": "TextEncoder", "version": 1},
    }


def test_ansi_without_render_fps_keeps_half_a_second(tmp_path: Path) -> None:
    env = Monitor(TextEnv(length=2), tmp_path, video_callable=every_episode)
    play(env)
    env.close()
    doc = files.read_json(tmp_path / monitor_videos(tmp_path)[0][0])
    assert [d for d, _ in doc["stdout"]] == [0.5, 0.5, 0.5] and doc["duration"] == 1.5
    assert doc["stdout"][2][1] == "\u001b[2J\u001b[1;1Hstep 2\r\n|##|\r\n"
    assert (doc["width"], doc["height"]) == (8, 3)  # longest line "step 0" + 2


@pytest.mark.parametrize("frame", ["no newline at the end", "carriage\r\nreturn\n", b"bytes\n"])
def test_invalid_text_frames_break_the_video(
    tmp_path: Path, frame: Any, caplog: pytest.LogCaptureFixture
) -> None:
    env = Monitor(TextEnv(length=2, frame=frame), tmp_path, video_callable=every_episode)
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        play(env)
    env.close()
    assert monitor_videos(tmp_path) == [] and not list(tmp_path.glob("*video000000.json"))
    [meta] = metas(tmp_path)
    assert meta["broken"] is True and meta["empty"] is True
    assert sum("is broken" in r.message for r in caplog.records) == 1
    assert env.get_episode_lengths() == [2]


def test_ansi_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = files.atomic_write_json

    def write(path: str, document: Any, **options: Any) -> None:
        if str(path).endswith(".video000000.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(path, document, **options)

    monkeypatch.setattr(video_module.files, "atomic_write_json", write)
    env = Monitor(TextEnv(length=2), tmp_path, video_callable=every_episode)
    play(env)
    env.close()
    [meta] = metas(tmp_path)
    assert meta["broken"] is True and monitor_videos(tmp_path) == []
    assert env.get_episode_lengths() == [2]


# -- failures --------------------------------------------------------------------------------------------
def test_frame_shape_change_breaks_the_video_not_the_episode(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = Monitor(PictureEnv(length=6, change_at=3), tmp_path, video_callable=every_episode)
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        lengths = play(env, episodes=2)
    env.close()
    assert lengths == [6, 6] and env.get_episode_lengths() == [6, 6]
    assert monitor_videos(tmp_path) == [] and not list(tmp_path.glob("*.mp4"))
    for meta in metas(tmp_path):
        assert meta["broken"] is True and "encoder_version" in meta and "empty" not in meta
    messages = [r.message for r in caplog.records if "is broken" in r.message]
    assert len(messages) == 2 and "all frames of an episode must be alike" in messages[0]


def test_bad_dtype_and_none_frames(tmp_path: Path) -> None:
    class FloatEnv(PictureEnv):
        def render(self) -> Any:
            return super().render().astype(np.float32)

    class NoneEnv(PictureEnv):
        def render(self) -> Any:
            return None

    for name, env in [("float", FloatEnv()), ("none", NoneEnv())]:
        recorder = VideoRecorder(env, str(tmp_path / name))
        env.reset()
        recorder.capture_frame()
        recorder.close()
        assert recorder.broken and not recorder.functional
        assert files.read_json(recorder.metadata_path)["broken"] is True


def test_async_envs_may_skip_frames(tmp_path: Path) -> None:
    env = PictureEnv(length=4, none_frames=True)
    recorder = VideoRecorder(env, str(tmp_path / "async"))
    env.reset()
    for _ in range(4):
        recorder.capture_frame()
        env.step(0)
    recorder.close()
    assert recorder.functional and int(ffprobe(recorder.path)["nb_read_frames"]) == 2


def test_missing_ffmpeg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PALAESTRA_FFMPEG", str(tmp_path / "no-such-ffmpeg"))
    with pytest.raises(DependencyNotInstalled, match="PALAESTRA_FFMPEG"):
        ffmpeg_binary()
    env = Monitor(PictureEnv(length=3), tmp_path, video_callable=every_episode)
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        play(env)
    env.close()
    [meta] = metas(tmp_path)
    assert meta["broken"] is True and meta["empty"] is True and "encoder_version" not in meta
    assert monitor_videos(tmp_path) == [] and env.get_episode_lengths() == [3]
    [message] = [r.message for r in caplog.records if "is broken" in r.message]
    assert "no-such-ffmpeg" in message


def test_the_systems_ffmpeg_on_path_comes_before_the_extras(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = tmp_path / "ffmpeg"
    system.write_text("#!/bin/sh\nexit 0\n")
    system.chmod(0o755)
    monkeypatch.delenv("PALAESTRA_FFMPEG", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert ffmpeg_binary() == str(system)


def test_without_a_system_ffmpeg_or_the_extra_the_error_names_both_fixes(tmp_path: Path) -> None:
    """No ffmpeg on PATH and imageio-ffmpeg not installed (made unimportable): a user's core install."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["imageio_ffmpeg"] = None  # as if the ffmpeg extra were not installed
        from palaestra.monitoring.video import ffmpeg_binary
        ffmpeg_binary()
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PALAESTRA_FFMPEG"}
    env["PATH"] = str(tmp_path)  # an empty folder: no ffmpeg
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith("palaestra.errors.DependencyNotInstalled: No ffmpeg found on PATH"), message
    assert "apt-get install ffmpeg" in message and "pip install 'palaestra[ffmpeg]'" in message


def test_ffmpeg_that_does_not_run(tmp_path: Path) -> None:
    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\necho 'ffmpeg: cannot start' >&2\nexit 3\n")
    fake.chmod(0o755)
    env = PictureEnv(length=2)
    recorder = VideoRecorder(env, str(tmp_path / "fake"), ffmpeg=str(fake))
    env.reset()
    recorder.capture_frame()
    recorder.close()
    assert recorder.broken and recorder.empty


def test_ffmpeg_killed_mid_episode(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = Monitor(PictureEnv(length=8), tmp_path, video_callable=every_episode)
    env.reset()
    env.step(0)
    recorder = env._recorder
    proc = recorder._encoder.proc
    proc.send_signal(signal.SIGKILL)
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(0)
            done = terminated or truncated
    env.close()
    assert recorder.broken and proc.returncode is not None  # reaped: no zombie
    assert not Path(f"/proc/{proc.pid}").exists() or ffmpeg_processes(str(tmp_path)) == []
    [meta] = metas(tmp_path)
    assert meta["broken"] is True and monitor_videos(tmp_path) == []
    assert env.get_episode_lengths() == [8]
    [message] = [r.message for r in caplog.records if "is broken" in r.message]
    assert "ffmpeg" in message


def test_full_disk(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full to make writes fail with ENOSPC")
    env = Monitor(
        PictureEnv(height=240, width=320, length=40), tmp_path, video_callable=every_episode, uid="full"
    )
    target = tmp_path / (files.video_base_name(env.file_infix, 0) + ".mp4")
    target.symlink_to("/dev/full")  # every write ffmpeg makes to the video fails with ENOSPC
    play(env)
    env.close()
    [meta] = metas(tmp_path)
    assert meta["broken"] is True and monitor_videos(tmp_path) == []
    assert not os.path.lexists(target)
    assert env.get_episode_lengths() == [40]


def test_render_exception_is_contained(tmp_path: Path) -> None:
    class Exploding(PictureEnv):
        def render(self) -> Any:
            if self.t == 2:
                raise RuntimeError("boom")
            return super().render()

    env = Monitor(Exploding(length=4), tmp_path, video_callable=every_episode)
    play(env)
    env.close()
    assert metas(tmp_path)[0]["broken"] is True and env.get_episode_lengths() == [4]


def test_after_a_render_failure_the_monitor_renders_no_more_in_that_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class FailsOnce(PictureEnv):
        renders = 0

        def render(self) -> Any:
            FailsOnce.renders += 1
            if FailsOnce.renders == 3:
                raise RuntimeError("no OpenGL context")
            return super().render()

    env = Monitor(FailsOnce(length=4), tmp_path, video_callable=every_episode)
    with caplog.at_level(logging.INFO, logger="palaestra"):
        play(env, episodes=4)
    env.close()
    assert FailsOnce.renders == 3  # episodes 1-3 (all on the schedule) never rendered
    assert env.get_episode_lengths() == [4, 4, 4, 4] and env.videos == []
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING and "is broken" in r.getMessage()]
    assert "env.render() raised RuntimeError: no OpenGL context" in warning.getMessage()
    assert not warning.exc_info  # no traceback: the message names the exception
    assert sum("no more videos" in r.getMessage() for r in caplog.records) == 1
    assert len(metas(tmp_path)) == 1


# -- the recorder's contract -----------------------------------------------------------------------------
def test_recorder_contract(tmp_path: Path) -> None:
    env = PictureEnv(length=2)
    recorder = VideoRecorder(env, str(tmp_path / "x"), {"episode_id": 7})
    assert recorder.path.endswith("x.mp4") and recorder.metadata_path.endswith("x.meta.json")
    assert files.read_json(recorder.metadata_path) == {"episode_id": 7, "content_type": "video/mp4"}
    assert recorder.functional and recorder.empty
    recorder.close()  # no frame: the 2017 "empty" video
    recorder.close()
    recorder.capture_frame()
    assert files.read_json(recorder.metadata_path) == {
        "episode_id": 7,
        "content_type": "video/mp4",
        "empty": True,
    }
    assert recorder.functional and not os.path.exists(recorder.path)

    off = VideoRecorder(env, str(tmp_path / "off"), enabled=False)
    off.capture_frame()
    off.close()
    assert not off.functional and not list(tmp_path.glob("off*"))


def test_no_render_mode_disables_the_recorder(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="palaestra"):
        recorder = VideoRecorder(PictureEnv(render_mode=None), str(tmp_path / "x"))
    assert not recorder.enabled and not list(tmp_path.iterdir())
    assert sum("Disabling video recorder" in r.message for r in caplog.records) == 1


def test_command_line() -> None:
    def values(command: list[str], option: str) -> list[str]:
        return [command[i + 1] for i, word in enumerate(command) if word == option]

    even = ffmpeg_command("/v/a.mp4", 600, 400, 50, binary="ffmpeg")
    assert even[0] == "ffmpeg" and even[-1] == "/v/a.mp4"
    assert values(even, "-pix_fmt") == ["rgb24", "yuv420p"] and values(even, "-s:v") == ["600x400"]
    assert values(even, "-c:v") == ["libx264"] and values(even, "-movflags") == ["+faststart"]
    assert values(even, "-framerate") == ["50"] and "-vf" not in even
    assert values(even, "-preset") == ["ultrafast"] and values(even, "-x264-params") == [
        video_module.FAST_X264_PARAMS
    ]
    medium = ffmpeg_command("/v/a.mp4", 600, 400, 50, binary="ffmpeg", preset="medium")
    assert values(medium, "-preset") == ["medium"] and "-x264-params" not in medium
    odd = ffmpeg_command("/v/a.mp4", 33, 17, 25, binary="ffmpeg", pix_fmt="rgba", threads=1)
    assert values(odd, "-vf") == ["pad=ceil(iw/2)*2:ceil(ih/2)*2"]
    assert values(odd, "-pix_fmt") == ["rgba", "yuv420p"] and values(odd, "-threads") == ["1"]
    assert [frame_rate_argument(f) for f in (50, 12.5, 30000 / 1001)] == ["50", "25/2", "30000/1001"]


def test_small_frames_get_one_encoder_thread_and_large_ones_the_cpus_less_one():
    cpus = len(os.sched_getaffinity(0))
    assert video_module.default_encoder_threads((84, 84)) == video_module.default_encoder_threads((210, 160, 3)) == 1
    assert video_module.default_encoder_threads((400, 600, 3)) == max(1, min(8, cpus - 1))


# -- processes -------------------------------------------------------------------------------------------
EXIT_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    import numpy as np
    sys.path.insert(0, sys.argv[2])
    from test_video import PictureEnv
    from palaestra.monitoring import Monitor, every_episode
    env = Monitor(PictureEnv(length=1000), sys.argv[1], video_callable=every_episode, uid="exit")
    env.reset()
    for _ in range(20):
        env.step(0)
    print(env._recorder._encoder.proc.pid, flush=True)
    how = sys.argv[3]
    if how == "exit":
        sys.exit(0)
    if how == "exception":
        raise KeyboardInterrupt
    if how == "_exit":
        os._exit(0)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.parametrize("how", ["exit", "exception", "_exit", "sigkill"])
def test_process_exit_mid_episode_leaves_no_ffmpeg(tmp_path: Path, how: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT, str(tmp_path), str(Path(__file__).parent), how],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.stdout.strip().isdigit(), done.stderr
    assert wait_until_gone(str(tmp_path)) == []
    if how in ("exit", "exception"):  # atexit finished the video, then the Monitor listed it
        [[video, _]] = monitor_videos(tmp_path)
        assert int(ffprobe(tmp_path / video)["nb_read_frames"]) == 21


def test_forked_child_does_not_hold_ffmpeg_open(tmp_path: Path) -> None:
    env = PictureEnv(length=10)
    recorder = VideoRecorder(env, str(tmp_path / "fork"), timeout=20)
    env.reset()
    recorder.capture_frame()
    release_r, release_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child waits until the parent has closed its recorder, then leaves
        os.close(release_w)
        os.read(release_r, 1)
        os._exit(0)
    os.close(release_r)
    try:
        recorder.capture_frame()
        recorder.close()  # ffmpeg must see EOF although the child still lives
    finally:
        os.close(release_w)
        os.waitpid(pid, 0)
    assert recorder.functional
    assert int(ffprobe(recorder.path)["nb_read_frames"]) == 2


def test_vector_env_records_a_video_per_sub_env(tmp_path: Path) -> None:
    fns = vector_env_fns(
        [lambda: PictureEnv(length=3), lambda: PictureEnv(length=5, height=10, width=14)],
        tmp_path,
        video_callable=every_episode,
    )
    envs = gym.vector.SyncVectorEnv(fns)
    envs.reset(seed=0)
    for _ in range(6):
        envs.step(np.zeros(2, np.int64))
    envs.close()
    manifests = files.detect_training_manifests(tmp_path)
    assert len(manifests) == 2
    videos = {m: files.read_json(m)["videos"] for m in manifests}
    for manifest, pairs in videos.items():
        assert pairs, f"{manifest} lists no video"
        for video, _ in pairs:
            assert ffprobe(tmp_path / video)["codec_name"] == "h264"
    sizes = sorted({(ffprobe(tmp_path / v)["width"]) for pairs in videos.values() for v, _ in pairs})
    assert sizes == [14, 24]


def test_frame_rate_sources(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def fps_of(env: gym.Env[Any, Any], **kwargs: Any) -> float:
        return VideoRecorder(env, str(tmp_path / "fps"), **kwargs).frames_per_sec

    legacy = PictureEnv(fps=None)
    legacy.metadata["video.frames_per_second"] = 10
    assert fps_of(legacy) == 10.0  # the 2017 key still counts
    assert fps_of(PictureEnv(fps=None)) == 30.0 and fps_of(TextEnv()) == 2.0
    assert fps_of(PictureEnv(fps=60), frames_per_sec=15) == 15.0
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        assert fps_of(PictureEnv(fps=float("nan"))) == 30.0
    assert "Invalid video frame rate" in caplog.text


def test_rgb_array_list_environments(tmp_path: Path) -> None:
    env = gym.wrappers.RenderCollection(PictureEnv(length=3))
    recorder = VideoRecorder(env, str(tmp_path / "list"))
    env.reset()
    for _ in range(3):
        env.step(0)
    recorder.capture_frame()  # the reset frame and three step frames, collected by the wrapper
    recorder.close()
    assert recorder.functional and int(ffprobe(recorder.path)["nb_read_frames"]) == 4
