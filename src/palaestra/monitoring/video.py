"""Episode videos for the Monitor: streamed H.264 mp4 files and JSON terminal recordings (spec §3.5).

``rgb_array`` environments
    Each frame goes to an ffmpeg process as it is rendered; nothing holds an episode's frames. The
    frames are written into ffmpeg's stdin (a pipe enlarged to 1 MiB where Linux allows) without
    blocking: what the pipe does not take at once waits in a small pool of reused buffers
    (``queue_bytes``, 16 MiB by default) and goes out with the next frames, so the environment loop
    only waits when ffmpeg is behind by more than that pool, and memory stays flat in the episode
    length (a writer thread was measured too, and cost more: see docs/video.md). ffmpeg
    starts lazily at the first frame; it is the system's ``ffmpeg`` on PATH, else the binary of the
    ``imageio-ffmpeg`` package (the ``ffmpeg`` extra: 165 MB, so not in the core) (``$PALAESTRA_FFMPEG``
    or the ``ffmpeg`` argument overrides both). The output
    is what a browser's ``<video>`` element plays: H.264 (libx264), ``yuv420p``, ``-movflags
    +faststart`` (the ``moov`` atom before ``mdat``), and odd frame sizes padded to even ones
    (``pad=ceil(iw/2)*2:ceil(ih/2)*2``), since 4:2:0 needs even sizes.

    Encoder settings: ``-preset ultrafast -crf 23 -x264-params
    cabac=1:8x8dct=1:partitions=i8x8,i4x4:aq-mode=1`` and ``-threads`` = CPUs - 1 (1 for frames
    of at most 210x160, where more threads only add hand-offs), chosen by
    measurement (``bench/video.py``; the reasoning and the figures are in docs/video.md, "How the
    encoder settings were chosen"). The ``x264_params`` apply to the ``ultrafast`` preset only;
    another ``preset`` gets x264's own settings.

``ansi`` environments
    Text frames become the 2017 JSON recording (content type ``video/vnd.openai.ansivid``, the
    asciicast-v1 layout): ``{"version": 1, "width", "height", "duration", "command": "-", "title",
    "env": {}, "stdout": [[duration, text], ...]}``. Each frame lasts ``1 / render_fps`` seconds
    (2017 ignored the frame rate and used 0.5 s); an environment without ``render_fps`` still gets
    0.5 s. Text frames are small (FrozenLake's are under 100 bytes), so they are held until
    ``close()`` and written in one atomic write; a 10,000-step episode holds about a megabyte.

Every video has a ``.meta.json`` beside it (spec §3.3), written when the recorder is created and
rewritten at ``close()``. Nothing the recorder meets (an invalid frame, a missing or dying ffmpeg,
a full disk) reaches the environment loop: the recorder logs one line, marks the video broken
(``"broken": true`` in the metadata), deletes the partial file and kills its ffmpeg; the Monitor
still records the episode's statistics, and after a failing ``env.render()`` it records no more
videos in that run (MuJoCo without a display aborts the process at a second attempt). At interpreter exit, open recorders are closed (their
videos finished) before the Monitors are, and a forked child process drops its copies of the
parent's ffmpeg pipes, so ffmpeg always sees the end of its input.
"""

from __future__ import annotations

import atexit
import collections
import io
import logging
import math
import os
import select
import shutil
import subprocess
import tempfile
import time
import weakref
from fractions import Fraction
from functools import lru_cache
from typing import IO, Any, Protocol

import gymnasium
import numpy as np

from palaestra.errors import DependencyNotInstalled, InvalidFrame
from palaestra.monitoring import files

logger = logging.getLogger(__name__)

#: Environment variable naming the ffmpeg executable to use (a path, or a name on ``PATH``).
FFMPEG_ENV_VAR = "PALAESTRA_FFMPEG"
DEFAULT_PRESET = "ultrafast"
DEFAULT_CRF = 23
#: Cheap x264 tools turned back on over ``ultrafast`` (see the module docstring).
FAST_X264_PARAMS = "cabac=1:8x8dct=1:partitions=i8x8,i4x4:aq-mode=1"
#: How many bytes of frames may wait for ffmpeg before ``capture_frame`` blocks.
DEFAULT_QUEUE_BYTES = 16 << 20
#: Frame rate of an ``rgb_array`` env without ``render_fps`` (2017's default).
DEFAULT_VIDEO_FPS = 30.0
#: Frame rate of an ``ansi`` env without ``render_fps``: 0.5 s a frame, as in 2017.
DEFAULT_ANSI_FPS = 2.0
#: Seconds ffmpeg may take to accept a frame, or to finish the file at ``close()``, before it is killed.
DEFAULT_TIMEOUT = 60.0

PIPE_SIZE = 1 << 20
#: Frames smaller than this are written to ffmpeg this many bytes at a time (see ``_PipeFeeder``).
BATCH_BYTES = 128 << 10
ANSI_CLEAR = "\u001b[2J\u001b[1;1H"
ANSI_TITLE = "gym VideoRecorder episode"
RGB_RENDER_MODES = ("rgb_array", "rgb_array_list")
_PIX_FMTS = {1: "gray", 3: "rgb24", 4: "rgba"}
_INSTALL_HINT = (
    "install ffmpeg with the system's package manager (apt-get install ffmpeg, brew install ffmpeg), or "
    "the ffmpeg binary that the imageio-ffmpeg package ships (pip install 'palaestra[ffmpeg]'), or set "
    f"{FFMPEG_ENV_VAR} to an ffmpeg executable"
)


class EncoderError(Exception):
    """ffmpeg failed: it could not start, it died, it stalled, or it could not write the file."""


# -- ffmpeg discovery and command line ---------------------------------------------------------------
def ffmpeg_binary(path: str | None = None) -> str:
    """The ffmpeg executable: ``path``, else ``$PALAESTRA_FFMPEG``, else the system's (on PATH), else
    imageio-ffmpeg's (the ``ffmpeg`` extra).

    Raises:
        DependencyNotInstalled: the named executable does not exist, or no ffmpeg is found at all.
    """
    named = path or os.environ.get(FFMPEG_ENV_VAR)
    if named:
        resolved = shutil.which(named)
        if resolved is None:
            source = "the ffmpeg argument" if path else f"${FFMPEG_ENV_VAR}"
            raise DependencyNotInstalled(
                f"No ffmpeg executable at {named!r} (given by {source}); point it at an ffmpeg binary, or "
                f"leave it unset to use the system's or imageio-ffmpeg's."
            )
        return resolved
    system = shutil.which("ffmpeg")
    if system is not None:
        return system
    try:
        import imageio_ffmpeg

        return str(imageio_ffmpeg.get_ffmpeg_exe())
    except (ImportError, RuntimeError):
        raise DependencyNotInstalled(f"No ffmpeg found on PATH, nor the ffmpeg extra: {_INSTALL_HINT}.") from None


@lru_cache(maxsize=8)
def ffmpeg_version(binary: str) -> str:
    """The output of ``binary -version`` (cached per binary); checks that the binary runs at all."""
    try:
        done = subprocess.run(
            [binary, "-version"], stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise DependencyNotInstalled(f"ffmpeg at {binary!r} does not run ({exc}): {_INSTALL_HINT}.") from exc
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip()[-300:]
        raise DependencyNotInstalled(
            f"ffmpeg at {binary!r} does not run (exit code {done.returncode}: {tail}): {_INSTALL_HINT}."
        )
    return done.stdout.decode("utf-8", "replace")


def frame_rate_argument(fps: float) -> str:
    """``fps`` as ffmpeg wants it: ``"50"``, ``"12.5"`` -> ``"25/2"``, ``29.97`` -> ``"2997/100"``."""
    rate = Fraction(fps).limit_denominator(1001)
    return str(rate.numerator) if rate.denominator == 1 else f"{rate.numerator}/{rate.denominator}"


def ffmpeg_command(
    output_path: str,
    width: int,
    height: int,
    fps: float,
    *,
    pix_fmt: str = "rgb24",
    binary: str | None = None,
    preset: str = DEFAULT_PRESET,
    crf: int = DEFAULT_CRF,
    threads: int | None = None,
    x264_params: str | None = None,
) -> list[str]:
    """The ffmpeg command line that reads raw ``pix_fmt`` frames of ``width`` x ``height`` from stdin
    and writes a browser-playable mp4 (H.264, yuv420p, faststart) to ``output_path``.

    ``x264_params`` ``None`` means :data:`FAST_X264_PARAMS` with the ``ultrafast`` preset, nothing
    with any other; ``""`` means nothing.
    """
    if x264_params is None:
        x264_params = FAST_X264_PARAMS if preset == "ultrafast" else ""
    command = [binary or ffmpeg_binary(), "-nostats", "-hide_banner", "-loglevel", "error", "-y"]
    command += ["-f", "rawvideo", "-pix_fmt", pix_fmt, "-s:v", f"{width}x{height}"]
    command += ["-framerate", frame_rate_argument(fps), "-i", "-", "-an"]
    if width % 2 or height % 2:
        command += ["-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2"]
    command += ["-c:v", "libx264", "-preset", preset, "-crf", str(crf), "-pix_fmt", "yuv420p"]
    if x264_params:
        command += ["-x264-params", x264_params]
    if threads is not None:
        command += ["-threads", str(threads)]
    command += ["-movflags", "+faststart", os.path.abspath(output_path)]
    return command


def image_layout(frame: Any) -> tuple[int, int, str]:
    """``(height, width, ffmpeg pix_fmt)`` of an image frame; ``InvalidFrame`` if it is not one."""
    if not isinstance(frame, np.ndarray):
        raise InvalidFrame(
            f"Wrong type {type(frame).__name__} for a video frame: render() must return a numpy array of "
            "shape (height, width, 3) (or 4 channels, or a 2-D grayscale array)"
        )
    if frame.dtype != np.uint8:
        raise InvalidFrame(
            f"Video frames must have dtype uint8, not {frame.dtype}: convert them with astype(np.uint8)"
        )
    channels = 1 if frame.ndim == 2 else frame.shape[-1] if frame.ndim == 3 else 0
    if channels not in _PIX_FMTS or frame.shape[0] < 1 or frame.shape[1] < 1:
        raise InvalidFrame(
            f"A video frame must have shape (height, width, 3), (height, width, 4) or (height, width), "
            f"not {frame.shape}"
        )
    return int(frame.shape[0]), int(frame.shape[1]), _PIX_FMTS[channels]


# -- the mp4 encoder -----------------------------------------------------------------------------------
_IOV_MAX = 512


def _byte_view(array: np.ndarray) -> memoryview:
    """The bytes of ``array`` in C order, without a copy when it is contiguous already."""
    return np.ascontiguousarray(array).data.cast("B")


def _write_all(fd: int, buffers: list[memoryview]) -> None:
    """Write every buffer to ``fd`` with as few ``writev`` calls (and GIL releases) as possible."""
    views = list(buffers)
    while views:
        written = os.writev(fd, views[:_IOV_MAX])
        while written and views:
            if written >= len(views[0]):
                written -= len(views.pop(0))
            else:
                views[0] = views[0][written:]
                written = 0


class _PipeFeeder:
    """Feeds frames into ffmpeg's stdin without a thread and without waiting while ffmpeg keeps up.

    The pipe is non-blocking: ``put`` first pushes what is still pending, then writes the new frame
    as far as the pipe takes it. Whatever does not fit is copied into one of ``depth`` reused buffers
    and pushed by the next calls; only when all ``depth`` buffers are pending does ``put`` wait for
    ffmpeg (that bound is the memory used, whatever the episode length). No thread means no GIL
    hand-offs on the environment's thread, and the buffers are reused, so no page faults either.

    Frames smaller than ``batch_bytes`` (an 84x84 observation is 7 KB) are gathered and written
    ``batch_bytes`` at a time, in one ``writev``: each write wakes ffmpeg's threads, and at one small
    frame a write that wake-up cost more than encoding the frame (docs/video.md). A video's file is
    only complete once ffmpeg finishes it, so frames that wait here lose nothing a kill would not.
    """

    def __init__(self, stream: IO[bytes], depth: int, batch_bytes: int = 0) -> None:
        self._stream = stream
        self._fd = stream.fileno()
        os.set_blocking(self._fd, False)
        self._depth = depth
        self._batch_bytes = batch_bytes
        self._gathered = 0  # bytes put since the last push of a batch
        self._free: list[np.ndarray] = []
        self._pending: collections.deque[tuple[np.ndarray, memoryview]] = collections.deque()
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLOUT)
        #: Seconds ``put`` and ``close`` spent waiting for ffmpeg to read.
        self.blocked_seconds = 0.0

    def put(self, frame: np.ndarray, timeout: float) -> bool:
        """Hand ``frame`` over; ``False`` if ffmpeg read nothing for ``timeout`` seconds. Raises ``OSError``."""
        if frame.nbytes < self._batch_bytes:
            return self._gather(frame, timeout)
        self._push()
        if not self._pending:
            view = _byte_view(frame)
            written = self._write([view])
            if written == len(view):
                return True
            buffer = self._buffer(frame)
            self._pending.append((buffer, _byte_view(buffer)[written:]))
            return True
        while len(self._pending) >= self._depth:
            if not self._wait(timeout):
                return False
            self._push()
        buffer = self._buffer(frame)
        self._pending.append((buffer, _byte_view(buffer)))
        return True

    def _gather(self, frame: np.ndarray, timeout: float) -> bool:
        while len(self._pending) >= self._depth:
            self._push()
            if len(self._pending) < self._depth:
                break
            if not self._wait(timeout):
                return False
        buffer = self._buffer(frame)
        self._pending.append((buffer, _byte_view(buffer)))
        self._gathered += buffer.nbytes
        if self._gathered >= self._batch_bytes:
            self._gathered = 0
            self._push()
        return True

    def close(self, timeout: float) -> bool:
        """Push everything pending and close the pipe; ``False`` if ffmpeg stopped reading. Raises ``OSError``."""
        try:
            self._push()
            while self._pending:
                if not self._wait(timeout):
                    return False
                self._push()
        finally:
            self._stream.close()
        return True

    def _buffer(self, frame: np.ndarray) -> np.ndarray:
        buffer = self._free.pop() if self._free else np.empty(frame.shape, np.uint8)
        np.copyto(buffer, frame)
        return buffer

    def _write(self, views: list[memoryview]) -> int:
        try:
            return os.writev(self._fd, views[:_IOV_MAX])
        except BlockingIOError:
            return 0

    def _push(self) -> None:
        while self._pending:
            written = self._write([view for _, view in self._pending])
            if not written:
                return
            while written and self._pending:
                buffer, view = self._pending[0]
                if written >= len(view):
                    written -= len(view)
                    self._pending.popleft()
                    self._free.append(buffer)
                else:
                    self._pending[0] = (buffer, view[written:])
                    written = 0

    def _wait(self, timeout: float) -> bool:
        start = time.perf_counter()
        ready = self._poll.poll(timeout * 1000)
        self.blocked_seconds += time.perf_counter() - start
        return bool(ready)


def _enlarge_pipe(stream: IO[bytes]) -> None:
    try:
        import fcntl

        fcntl.fcntl(stream.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
    except (ImportError, OSError, ValueError):
        pass  # a smaller pipe only means more, smaller writes


def _abort(proc: subprocess.Popen[bytes], owner_pid: int) -> None:
    """Kill ffmpeg, close its pipe and reap it (also run when an encoder is dropped without closing)."""
    if os.getpid() != owner_pid:
        return
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        logger.error("ffmpeg (pid %d) did not exit after SIGKILL", proc.pid)


#: Frames of at most this many pixels (Atari's 210x160 screens, image observations) are encoded by
#: one x264 thread: at 84x84, two threads took 1.5x the CPU time of one (docs/video.md).
SMALL_FRAME_PIXELS = 210 * 160


def default_encoder_threads(frame_shape: tuple[int, ...] | None = None) -> int:
    """x264 threads: one for a small frame (:data:`SMALL_FRAME_PIXELS`), else the CPUs this process may
    use less one for the environment loop (1 to 8)."""
    if frame_shape is not None and frame_shape[0] * frame_shape[1] <= SMALL_FRAME_PIXELS:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 2
    return max(1, min(8, cpus - 1))


_live_encoders: weakref.WeakSet[FfmpegEncoder] = weakref.WeakSet()


class FfmpegEncoder:
    """One mp4 file being written: frames of one shape streamed into an ffmpeg process.

    ``write`` raises ``InvalidFrame`` (a frame of another shape or dtype) or ``EncoderError`` (ffmpeg
    died, stalled or failed); ``finish`` waits for the complete file; ``abort`` kills ffmpeg. The
    process is reaped in every case, also when the encoder is dropped without either.
    """

    def __init__(
        self,
        output_path: str,
        first_frame: np.ndarray,
        fps: float,
        *,
        binary: str | None = None,
        preset: str = DEFAULT_PRESET,
        crf: int = DEFAULT_CRF,
        threads: int | None = None,
        x264_params: str | None = None,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        height, width, pix_fmt = image_layout(first_frame)
        self.frame_shape: tuple[int, ...] = first_frame.shape
        self.binary = ffmpeg_binary(binary)
        self.version = ffmpeg_version(self.binary)
        self.cmdline = ffmpeg_command(
            output_path,
            width,
            height,
            fps,
            pix_fmt=pix_fmt,
            binary=self.binary,
            preset=preset,
            crf=crf,
            threads=default_encoder_threads(first_frame.shape) if threads is None else threads,
            x264_params=x264_params,
        )
        self.timeout = timeout
        self.frames_written = 0
        self._finished = False
        self._foreign = False
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in finish/abort)
        try:
            self.proc = subprocess.Popen(
                self.cmdline,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                bufsize=0,
                start_new_session=True,  # a Ctrl-C in the terminal must not kill ffmpeg mid-file
            )
        except OSError as exc:
            self._stderr.close()
            raise EncoderError(f"could not start ffmpeg {self.binary!r}: {exc}") from exc
        assert self.proc.stdin is not None
        self._stdin = self.proc.stdin
        _enlarge_pipe(self._stdin)
        self._feeder: _PipeFeeder | None = None
        if queue_bytes > 0 and hasattr(select, "poll"):  # else (Windows) plain blocking writes
            depth = max(2, queue_bytes // max(1, first_frame.nbytes))
            batch = min(BATCH_BYTES, queue_bytes // 2)
            self._feeder = _PipeFeeder(self._stdin, depth, batch)
        self._write_error: OSError | None = None
        self._direct_blocked = 0.0
        self._finalizer = weakref.finalize(self, _abort, self.proc, os.getpid())
        self._finalizer.atexit = False  # at exit, recorders are finished gracefully instead
        _live_encoders.add(self)

    def write(self, frame: Any) -> None:
        """Hand one frame to ffmpeg; blocks only while ``queue_bytes`` of frames are waiting."""
        if not isinstance(frame, np.ndarray) or frame.shape != self.frame_shape or frame.dtype != np.uint8:
            shape = getattr(frame, "shape", None)
            dtype = getattr(frame, "dtype", type(frame).__name__)
            raise InvalidFrame(
                f"Frame {self.frames_written} has shape {shape} and dtype {dtype}, but the video started "
                f"with shape {self.frame_shape} and dtype uint8: all frames of an episode must be alike"
            )
        # No poll of ffmpeg per frame (a lock and a waitpid: a sixth of this method): once ffmpeg has
        # exited, its pipe has no reader and the write fails with EPIPE, which is checked below.
        try:
            if self._feeder is None:
                start = time.perf_counter()
                _write_all(self._stdin.fileno(), [_byte_view(frame)])
                self._direct_blocked += time.perf_counter() - start
            elif not self._feeder.put(frame, self.timeout):
                raise EncoderError(f"ffmpeg read no frame for {self.timeout:g} s")
        except OSError as exc:
            self._write_error = exc
            self._check_alive()
        self.frames_written += 1

    @property
    def blocked_seconds(self) -> float:
        """Seconds ``write`` and ``finish`` spent waiting for ffmpeg to read frames."""
        return self._feeder.blocked_seconds if self._feeder is not None else self._direct_blocked

    def finish(self) -> None:
        """Close ffmpeg's input and wait for the finished file; ``EncoderError`` if it is not good."""
        if self._finished:
            return
        self._finished = True
        _live_encoders.discard(self)
        if self._foreign:
            raise EncoderError("this encoder belongs to the parent process")
        deadline = time.monotonic() + self.timeout
        try:
            try:
                if self._feeder is not None:
                    if not self._feeder.close(self.timeout):
                        raise subprocess.TimeoutExpired(self.cmdline, self.timeout)
                else:
                    self._stdin.close()
            except OSError as exc:
                self._write_error = self._write_error or exc
            returncode = self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self._finalizer()
            self._stderr.close()
            raise EncoderError(
                f"ffmpeg did not finish the file within {self.timeout:g} s; killed it"
            ) from None
        self._finalizer.detach()
        message = self._failure(returncode)
        self._stderr.close()
        if message:
            raise EncoderError(message)

    def abort(self) -> None:
        """Kill ffmpeg now and reap it; the file it was writing is left as it is."""
        self._finished = True
        _live_encoders.discard(self)
        self._finalizer()
        if not self._stderr.closed:
            self._stderr.close()

    def _check_alive(self) -> None:
        if self._write_error is not None or self.proc.poll() is not None:
            raise EncoderError(self._failure(self.proc.poll()) or "ffmpeg stopped reading frames")

    def _failure(self, returncode: int | None) -> str:
        """What went wrong, from the write error, the exit code and ffmpeg's stderr; '' if nothing."""
        parts = []
        if returncode is None and self._write_error is not None:
            try:  # a broken pipe usually means ffmpeg just died: give it a moment for its exit code
                returncode = self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        if returncode and returncode < 0:
            parts.append(f"ffmpeg was killed by signal {-returncode}")
        elif returncode:
            parts.append(f"ffmpeg exited with code {returncode}")
        if self._write_error is not None:
            parts.append(f"writing frames failed ({self._write_error})")
        if not parts:
            return ""
        detail = self._stderr_tail()
        return "; ".join(parts) + (f": {detail}" if detail else "")

    def _stderr_tail(self, limit: int = 600) -> str:
        if self._stderr.closed:
            return ""
        try:
            self._stderr.seek(0, io.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode("utf-8", "replace").strip().replace("\n", " | ")
        except OSError:
            return ""

    def _disown(self, devnull: int) -> None:
        """In a forked child: let go of the parent's ffmpeg pipe, so that ffmpeg still sees EOF."""
        self._foreign = True
        self._finished = True
        self._finalizer.detach()
        try:
            os.dup2(devnull, self._stdin.fileno())
        except (OSError, ValueError):
            pass


# -- the ANSI encoder ----------------------------------------------------------------------------------
class TextEncoder:
    """The 2017 text-frame encoder ("adapted from asciicast v1"), with per-frame durations of 1/fps."""

    version = 1

    def __init__(self, fps: float) -> None:
        self.frame_duration = 1.0 / fps
        self.frames: list[str] = []
        self.width = 0
        self.height = 0

    def write(self, frame: Any) -> None:
        if isinstance(frame, io.StringIO):
            frame = frame.getvalue()
        if not isinstance(frame, str):
            raise InvalidFrame(
                f"Wrong type {type(frame).__name__} for a text frame: must be a str or StringIO"
            )
        data = frame.encode("utf-8")
        if not data.endswith(b"\n"):
            raise InvalidFrame(f'A text frame must end with a newline: """{frame}"""')
        if b"\r" in data:
            raise InvalidFrame(f'A text frame must not contain carriage returns: """{frame!r}"""')
        self.height = max(self.height, data.count(b"\n") + 1)
        self.width = max(self.width, max(len(line) for line in data.split(b"\n")) + 2)
        self.frames.append(frame)

    def document(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "width": self.width,
            "height": self.height,
            "duration": len(self.frames) * self.frame_duration,
            "command": "-",
            "title": ANSI_TITLE,
            "env": {},
            "stdout": [[self.frame_duration, ANSI_CLEAR + f.replace("\n", "\r\n")] for f in self.frames],
        }


# -- the recorder --------------------------------------------------------------------------------------
class FrameSource(Protocol):
    """What the recorder needs of an environment: a Gymnasium env, or one sub-environment of a vector
    env (see :mod:`palaestra.monitoring.vector`)."""

    render_mode: str | None
    metadata: dict[str, Any]

    def render(self) -> Any: ...


_live_recorders: weakref.WeakSet[VideoRecorder] = weakref.WeakSet()


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        logger.warning("Could not remove the video file %s: %s", path, exc)


def keep_sigterm_from_sdl() -> None:
    """Stop SDL (pygame, which renders Gymnasium's classic-control frames) from taking over SIGTERM.

    SDL's first initialisation installs a SIGTERM handler that turns the signal into a window-close
    event, which nothing reads while recording, so ``kill``, ``timeout``, Slurm and ``docker stop``
    never stop the process. The hint must be set before the env first renders; a value the user set
    is kept.
    """
    os.environ.setdefault("SDL_NO_SIGNAL_HANDLERS", "1")


class VideoRecorder:
    """Record one episode of ``env`` to ``base_path + '.mp4'`` (``rgb_array``) or ``'.json'`` (``ansi``).

    Args:
        env: the environment; its ``render_mode`` picks the format, its ``render_fps`` the frame rate.
        base_path: the file name without extension (the Monitor's ``openaigym.video.{infix}.video{E:06}``).
        metadata: extra keys for the ``.meta.json`` file (the Monitor passes ``{"episode_id": E}``).
        enabled: ``False`` makes a recorder that writes nothing.
        frames_per_sec: overrides the env's frame rate.
        ffmpeg: the ffmpeg executable (default: :func:`ffmpeg_binary`).
        preset, crf, x264_params: x264 settings (see the module docstring for why the defaults).
        threads: x264 threads (default: :func:`default_encoder_threads`).
        queue_bytes: frames that may wait for ffmpeg, in bytes; 0 writes to ffmpeg's pipe directly.
        timeout: seconds ffmpeg may stall on a frame, or take to finish the file, before it is killed.

    ``capture_frame()`` and ``close()`` never raise: any failure marks the video broken (``broken``,
    ``functional`` false, ``"broken": true`` in the metadata) and logs one line; a failing
    ``env.render()`` also sets ``render_failed``, on which the Monitor records no more videos.
    """

    def __init__(
        self,
        env: gymnasium.Env[Any, Any] | FrameSource,
        base_path: str,
        metadata: dict[str, Any] | None = None,
        enabled: bool = True,
        *,
        frames_per_sec: float | None = None,
        ffmpeg: str | None = None,
        preset: str = DEFAULT_PRESET,
        crf: int = DEFAULT_CRF,
        threads: int | None = None,
        x264_params: str | None = None,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.env = env
        self.enabled = enabled
        self.broken = False
        #: Whether ``env.render()`` raised or returned nothing (the owner may stop rendering altogether).
        self.render_failed = False
        self.empty = True
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.render_mode: str | None = getattr(env, "render_mode", None)
        self.ansi_mode = self.render_mode == "ansi"
        self.path = os.fspath(base_path) + (".json" if self.ansi_mode else ".mp4")
        self.metadata_path = os.fspath(base_path) + files.VIDEO_META_SUFFIX
        self.frames_per_sec = self._frame_rate(frames_per_sec)
        self.frames_captured = 0
        self._ffmpeg = ffmpeg
        self._encoder_options: dict[str, Any] = {
            "preset": preset,
            "crf": crf,
            "threads": threads,
            "x264_params": x264_params,
            "queue_bytes": queue_bytes,
            "timeout": timeout,
        }
        self._async = bool((getattr(env, "metadata", None) or {}).get("semantics.async"))
        self._encoder: FfmpegEncoder | None = None
        self._text: TextEncoder | None = None
        self._closed = False
        self._owner_pid = os.getpid()
        if not enabled:
            return
        if not self.ansi_mode and self.render_mode not in RGB_RENDER_MODES:
            logger.info(
                "Disabling video recorder because %s has render_mode %r; make it with "
                "render_mode='rgb_array' (mp4) or 'ansi' (terminal recording) to record videos.",
                env,
                self.render_mode,
            )
            self.enabled = False
            return
        self.metadata["content_type"] = files.CONTENT_TYPE_ANSI if self.ansi_mode else files.CONTENT_TYPE_MP4
        if not self.ansi_mode:
            keep_sigterm_from_sdl()
        _live_recorders.add(self)
        self._write_metadata()

    @property
    def functional(self) -> bool:
        return self.enabled and not self.broken

    @property
    def blocked_seconds(self) -> float:
        """Seconds ``capture_frame`` spent waiting for ffmpeg in this episode (0 for text)."""
        return self._encoder.blocked_seconds if self._encoder is not None else 0.0

    def capture_frame(self) -> None:
        """Render the current frame and encode it. Never raises."""
        if not self.functional or self._closed or os.getpid() != self._owner_pid:
            return
        try:
            frame = self.env.render()
        except Exception as exc:
            self.render_failed = True
            logger.debug("env.render() failed for %s", self.path, exc_info=True)
            self._break(f"env.render() raised {type(exc).__name__}: {exc}")
            return
        if frame is None:
            if not self._async:
                self.render_failed = True
                self._break("env.render() returned None instead of a frame")
            return
        try:
            if isinstance(frame, list) and not self.ansi_mode:
                for item in frame:
                    self._encode(item)
            else:
                self._encode(frame)
        except (InvalidFrame, DependencyNotInstalled, EncoderError, OSError) as exc:
            self._break(str(exc))
        except Exception as exc:
            self._break(f"{type(exc).__name__}: {exc}", exc_info=True)

    def close(self) -> None:
        """Finish the file and rewrite the metadata. Never raises; a second call does nothing."""
        if self._closed or not self.enabled or os.getpid() != self._owner_pid:
            return
        self._closed = True
        _live_recorders.discard(self)
        try:
            self._finish()
        except (EncoderError, OSError) as exc:
            self._break(str(exc))
        except Exception as exc:
            self._break(f"{type(exc).__name__}: {exc}", exc_info=True)
        if self.empty:
            self.metadata["empty"] = True
        if self.broken:
            self.metadata["broken"] = True
        if self.empty or self.broken:
            _remove(self.path)
        self._write_metadata()

    # -- internals ------------------------------------------------------------------------------------
    def _frame_rate(self, override: float | None) -> float:
        default = DEFAULT_ANSI_FPS if self.ansi_mode else DEFAULT_VIDEO_FPS
        metadata = getattr(self.env, "metadata", None) or {}
        raw = (
            override
            if override is not None
            else metadata.get("render_fps") or metadata.get("video.frames_per_second")
        )
        if raw is None:
            return default
        try:
            fps = float(raw)
        except (TypeError, ValueError):
            fps = math.nan
        if not math.isfinite(fps) or fps <= 0:
            logger.warning("Invalid video frame rate %r for %s; using %g fps", raw, self.path, default)
            return default
        return fps

    def _encode(self, frame: Any) -> None:
        if self.ansi_mode:
            if self._text is None:
                self._text = TextEncoder(self.frames_per_sec)
                self.metadata["encoder_version"] = {"backend": "TextEncoder", "version": TextEncoder.version}
            self._text.write(frame)
        else:
            if self._encoder is None:
                self._encoder = FfmpegEncoder(
                    self.path, frame, self.frames_per_sec, binary=self._ffmpeg, **self._encoder_options
                )
                self.metadata["encoder_version"] = {
                    "backend": "ffmpeg",
                    "version": self._encoder.version,
                    "cmdline": self._encoder.cmdline,
                }
            self._encoder.write(frame)
        self.frames_captured += 1
        self.empty = False

    def _finish(self) -> None:
        if self.broken:
            return
        if self._encoder is not None:
            self._encoder.finish()
        elif self._text is not None and self._text.frames:
            try:
                files.atomic_write_json(self.path, self._text.document())
            except OSError:
                _remove(self.path + "~")
                raise

    def _break(self, reason: str, exc_info: bool = False) -> None:
        if self._encoder is not None:
            self._encoder.abort()
        if self.broken:
            return
        self.broken = True
        logger.warning(
            "Video %s is broken and will be dropped (the episode's statistics are still recorded): %s",
            self.path,
            reason,
            exc_info=exc_info,
        )

    def _write_metadata(self) -> None:
        try:
            files.atomic_write_json(self.metadata_path, self.metadata)
        except (OSError, TypeError, ValueError) as exc:  # a full disk, or metadata that is not JSON
            _remove(self.metadata_path + "~")
            self._break(f"could not write {self.metadata_path}: {exc}")


# -- process-wide clean-up -----------------------------------------------------------------------------
def _close_all_at_exit() -> None:
    """Finish open recordings at interpreter exit (before the Monitors' own exit handler closes them)."""
    for recorder in list(_live_recorders):
        if recorder._owner_pid == os.getpid():
            recorder.close()
    for encoder in list(_live_encoders):
        encoder.abort()


def _after_fork_in_child() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        for encoder in list(_live_encoders):
            encoder._disown(devnull)
    finally:
        os.close(devnull)
    _live_encoders.clear()
    _live_recorders.clear()


atexit.register(_close_all_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
