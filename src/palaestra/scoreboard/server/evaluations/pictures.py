"""A picture of each environment for its page, made once and kept in the blob store.

- :func:`env_picture`: the picture of an env: the cached one, else a short animation of the first
  uploaded mp4 of the env (its first :data:`ANIMATION_SECONDS` seconds as an animated WebP,
  :data:`ANIMATION_WIDTH` pixels wide; a still PNG of it where this ffmpeg has no WebP encoder), else
  a still rendered here where the env is installed (``render_mode="rgb_array"`` after
  ``reset(seed=0)``, in a child process, so that an env that crashes or hangs cannot take the server
  with it). ``None`` when neither is possible.
- :func:`picture_key`: where it is kept; :func:`media_type`: PNG or WebP, read from its first bytes.

ffmpeg is the one encoder (the one videos are encoded with: the system's, else imageio-ffmpeg's): it also turns a rendered frame
into a PNG, so the server needs no imaging library.
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import sqlalchemy as sa

from palaestra.monitoring.video import ffmpeg_binary, image_layout
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.storage import BlobStore
from palaestra.scoreboard.server.evaluations.records import StoredVideo, stored_videos
from palaestra.scoreboard.server.evaluations.video_integrity import file_sha256
from palaestra.scoreboard.server.tables.scores import Evaluation

__all__ = ["env_picture", "media_type", "picture_key", "render_png"]

logger = logging.getLogger("palaestra.scoreboard.pictures")

#: Seconds a child process may take to import, make, reset and render an env.
RENDER_TIMEOUT_S = 120
FFMPEG_TIMEOUT_S = 60
ANIMATION_SECONDS = 3
ANIMATION_FPS = 10
ANIMATION_WIDTH = 320
#: Envs (per blob store) whose picture could not be made: not tried again until the server restarts
#: (or until more than _MAX_FAILED were remembered: any path can be asked for, so the set is bounded).
_failed: set[tuple[str, str]] = set()
_MAX_FAILED = 10_000
_lock = threading.Lock()


def picture_key(env_id: str) -> str:
    return f"pictures/envs/{hashlib.sha256(env_id.encode()).hexdigest()[:32]}"


def media_type(picture: bytes) -> str:
    """``image/webp`` for an (animated) WebP, else ``image/png``."""
    return "image/webp" if picture[:4] == b"RIFF" and picture[8:12] == b"WEBP" else "image/png"


def env_picture(
    store: BlobStore, db: Database, env_id: str, installed: bool, keep: bool = True
) -> tuple[bytes, str] | None:
    """``(PNG or WebP bytes, source)`` of ``env_id``'s picture (source: ``stored``, ``video`` or ``render``),
    made and stored on first use (unless not ``keep``: a read-only archive); ``None`` if there is no
    video to take it from and the env is not ``installed`` here (or making it failed before)."""
    key = picture_key(env_id)
    if store.size(key) is not None:
        return store.get_bytes(key), "stored"
    with _lock:
        if (store.url, env_id) in _failed:
            return None
    made = _from_video(store, db, env_id)
    source = "video"
    if made is None and installed:
        made, source = _rendered(env_id), "render"
    if made is None:
        with _lock:
            if len(_failed) >= _MAX_FAILED:
                _failed.clear()
            _failed.add((store.url, env_id))
        return None
    if keep:
        store.put_bytes(key, made)
    return made, source


def _first_mp4(db: Database, env_id: str) -> StoredVideo | None:
    with db.read() as session:
        rows = session.execute(
            sa.select(Evaluation.videos)
            .where(Evaluation.env_id == env_id, Evaluation.videos.is_not(None))
            .order_by(Evaluation.seq)
            .limit(50)
        ).scalars()
        for docs in rows:
            for video in stored_videos(docs):
                if video.kind == "mp4":
                    return video
    return None


def _from_video(store: BlobStore, db: Database, env_id: str) -> bytes | None:
    video = _first_mp4(db, env_id)
    if video is None:
        return None
    key = video.key
    with tempfile.TemporaryDirectory(prefix="palaestra-picture-") as folder:
        path = store.local_path(key)
        if path is None:
            path = Path(folder) / "video.mp4"
            store.download(key, path)
        if video.sha256 is not None and file_sha256(path) != video.sha256:  # (:mod:`.video_integrity`)
            logger.error("No picture of %s from the video %s: its bytes are not those stored", env_id, key)
            return None
        animation = _ffmpeg_output(
            ["-t", str(ANIMATION_SECONDS), "-i", str(path)],
            ["-vf", f"fps={ANIMATION_FPS},scale={ANIMATION_WIDTH}:-2", "-c:v", "libwebp_anim", "-loop", "0",
             "-quality", "70", "-f", "webp", "-"],
        )  # fmt: skip
        if animation is not None and media_type(animation) == "image/webp":
            return animation
        # a still: one second in shows the env moving; a shorter video gives its first frame
        for seek in ("1", "0"):
            png = _ffmpeg_png(["-ss", seek, "-i", str(path)], None)
            if png:
                return png
    logger.warning("No frame could be taken from the video %s of %s", key, env_id)
    return None


def _ffmpeg_output(input_args: list[str], output_args: list[str], stdin: bytes | None = None) -> bytes | None:
    """What ffmpeg writes to stdout, or None if it fails (an encoder this build lacks, a broken video)."""
    command = [ffmpeg_binary(), "-nostats", "-hide_banner", "-loglevel", "error", *input_args, *output_args]
    try:
        done = subprocess.run(
            command, input=stdin, capture_output=True, timeout=FFMPEG_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError) as e:
        logger.warning("ffmpeg failed to make a picture: %s", e)
        return None
    return done.stdout if done.returncode == 0 and done.stdout else None


def _ffmpeg_png(input_args: list[str], stdin: bytes | None) -> bytes | None:
    png = _ffmpeg_output(input_args, ["-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "-"], stdin)
    return png if png is not None and png.startswith(b"\x89PNG") else None


def render_png(frame: np.ndarray) -> bytes | None:
    """An rgb_array frame as PNG bytes (by ffmpeg)."""
    height, width, pix_fmt = image_layout(frame)
    args = ["-f", "rawvideo", "-pix_fmt", pix_fmt, "-s:v", f"{width}x{height}", "-i", "-"]
    return _ffmpeg_png(args, np.ascontiguousarray(frame).tobytes())


def _rendered(env_id: str) -> bytes | None:
    try:
        done = subprocess.run(
            [sys.executable, "-m", __name__, env_id],
            capture_output=True,
            timeout=RENDER_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as e:
        logger.warning("Rendering a picture of %s failed: %s", env_id, e)
        return None
    if done.returncode != 0 or not done.stdout.startswith(b"\x89PNG"):
        tail = done.stderr.decode("utf-8", "replace").strip()[-500:]
        logger.warning("Rendering a picture of %s failed (exit code %s): %s", env_id, done.returncode, tail)
        return None
    return done.stdout


def _render_main(env_id: str) -> int:
    """In the child process: make the env, reset it, render one rgb_array frame, write it as PNG."""
    import os
    import warnings

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    import palaestra.envs  # noqa: F401, I001  (first: registers palaestra's envs, picks MuJoCo's EGL)
    import gymnasium

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gymnasium.make(env_id, render_mode="rgb_array")
        try:
            env.reset(seed=0)
            frame = env.render()
        finally:
            env.close()
    png = render_png(np.asarray(frame)) if frame is not None else None
    if png is None:
        print(f"{env_id} rendered no rgb_array frame", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(png)
    return 0


if __name__ == "__main__":
    raise SystemExit(_render_main(sys.argv[1]))
