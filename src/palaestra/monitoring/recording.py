"""What the single and the vector Monitor share (``monitor.py`` and ``vector.py`` both import it, and
neither imports the other at module level): the video schedule and episode-type arguments, the env
info of a manifest, the directory's preparation, the video mode for a render mode, and ``live=True``'s
follower (the command line's, in a process of its own). The registry of open Monitors is :mod:`.open_monitors` (the upload client reads it).
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import gymnasium

from palaestra._version import __version__
from palaestra.errors import MonitorError
from palaestra.monitoring import files
from palaestra.monitoring.schedules import VideoSchedule, capped_cubic_video_schedule, disable_videos

logger = logging.getLogger("palaestra")

VIDEO_RENDER_MODES = ("rgb_array", "rgb_array_list", "ansi")
MODES = {"training": "t", "evaluation": "e"}


def normalise_video_callable(video_callable: VideoSchedule | bool | None) -> VideoSchedule:
    if video_callable is None:
        return capped_cubic_video_schedule
    if video_callable is False:
        return disable_videos
    if not callable(video_callable):
        raise MonitorError(
            f"You must provide a function, None, or False for video_callable, not {type(video_callable)}: "
            f"{video_callable!r}"
        )
    return video_callable


def episode_type_of(mode: str | None) -> str:
    if mode is None:
        return "t"
    if mode not in MODES:
        raise MonitorError(f"Invalid mode {mode!r}: must be 'training' or 'evaluation'")
    return MODES[mode]


def env_info_for(env: gymnasium.Env[Any, Any]) -> dict[str, Any]:
    """The ``env_info`` written to every manifest; identical for every monitor of one env id."""
    return env_info_of_spec(env.spec)


def env_info_of_spec(spec: gymnasium.envs.registration.EnvSpec | None) -> dict[str, Any]:
    """:func:`env_info_for` an env with this spec (a vector env's is its sub-environments')."""
    info: dict[str, Any] = {"gym_version": gymnasium.__version__, "palaestra_version": __version__}
    if spec is not None:
        info["env_id"] = spec.id
    return info


def prepare_offscreen_rendering() -> None:
    """pygame-rendered envs initialise SDL's video, which prints "XDG_RUNTIME_DIR is invalid" on a
    machine with no display; off-screen frames need no display driver. (Call it before the env
    processes of an ``AsyncVectorEnv`` start, so that they inherit it.)"""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


# (env id, render mode) pairs already warned about: one warning per process, not one per Monitor of
# the same env (vector_env_fns makes one per sub-environment)
_warned_without_video: set[tuple[str | None, str | None]] = set()


def video_mode_for(
    render_mode: str | None, env_id: str | None, render_modes: Sequence[str] | None = None
) -> str | None:
    """The render mode the Monitor records videos in; called only when videos are wanted.

    ``None``: no videos, said once per process for each env id and render mode. An env that could
    render (``render_modes``, its ``metadata["render_modes"]``, where known) gets a warning naming
    the fix; one that renders no frames at all, an info line.
    """
    if render_mode in VIDEO_RENDER_MODES:
        if render_mode != "ansi":
            prepare_offscreen_rendering()
        return render_mode
    if (env_id, render_mode) in _warned_without_video:
        return None
    _warned_without_video.add((env_id, render_mode))
    usable = [m for m in ("rgb_array", "ansi") if render_modes is None or m in render_modes]
    if not usable:
        logger.info("Monitor: no videos of %s, which renders no frames (its render modes: %s).", env_id, render_modes)
        return None
    logger.warning(
        "Monitor: no videos of %s, because it was made with render_mode=%r. To record videos, make it "
        "with render_mode=\"%s\", e.g. gymnasium.make(%r, render_mode=\"%s\"); to record without "
        "videos, pass video_callable=False.",
        env_id,
        render_mode,
        usable[0],
        env_id or "ENV_ID",
        usable[0],
    )
    return None


def refuse_stable_baselines_vec_env(env: Any) -> None:
    """Stable-Baselines3's ``VecEnv`` is not a ``gymnasium.Env`` (nor a ``gymnasium.vector.VectorEnv``),
    so Gymnasium's ``Wrapper`` would refuse it with a bare ``TypeError``: say what to do instead.
    Duck-typed, so that palaestra needs no SB3 to recognise it."""
    if isinstance(env, gymnasium.Env) or not all(hasattr(env, name) for name in ("num_envs", "step_async", "step_wait")):
        return
    kind = f"{type(env).__module__}.{type(env).__qualname__}"
    raise MonitorError(
        f"palaestra.Monitor was given a {kind}, a vectorized environment of {env.num_envs} "
        "sub-environments in Stable-Baselines3's VecEnv API, not a gymnasium.Env. Wrap each "
        "sub-environment in a Monitor instead, where it is made: "
        "SubprocVecEnv(palaestra.monitoring.vector_env_fns([make_env] * n_envs, directory)) (or "
        "DummyVecEnv(...)), where make_env returns one gymnasium env; every sub-environment (in any "
        "worker process) then records into the directory, and load_results and upload read them as one run."
    )


def prepare_directory(directory: str | os.PathLike[str], force: bool = False, resume: bool = False) -> str:
    """Create ``directory`` and apply the ``force``/``resume`` rules; returns its absolute path."""
    path = os.fspath(files.ensure_directory(directory))
    if force:
        files.clear_monitor_files(path)
    elif not resume:
        existing = files.detect_training_manifests(path)
        if existing:
            raise MonitorError(
                f"Trying to write to monitor directory {path} with existing monitor files: "
                f"{', '.join(existing[:5])}.\n\nYou should use a unique directory for each training run, "
                "or use 'force=True' to automatically clear previous monitor files, or 'resume=True' to "
                "add to them."
            )
    return path


def follow_live(directory: str) -> subprocess.Popen[bytes]:
    """``live=True``: the command line's follower (``palaestra upload --follow DIR``) in a process of its
    own, so that recording never imports the upload client. It reads the server and key from the same
    places (the environment, ``palaestra login``) and seals the run once the Monitor is closed; this
    interpreter waits for that at exit (:func:`_wait_for_follower`). Started with
    ``--while-parent-runs``, it stops (without sealing: the run shows as abandoned) if this process
    ends without closing its Monitor, even when killed."""
    command = [sys.executable, "-m", "palaestra", "upload", "--follow", directory, "--while-parent-runs"]
    # stdin: a pipe this process never writes to, closed by the system when this process ends however
    # it ends; stdout: the follower's URL lines are for a terminal, not for the training's output
    follower = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    atexit.register(_wait_for_follower, follower)
    return follower


#: How long the exit of a training process waits for its follower's last polls and seal (its interval
#: is 5 s: a few polls, and the seal's request with its retries).
FOLLOWER_EXIT_WAIT_S = 75.0


def _wait_for_follower(follower: subprocess.Popen[bytes]) -> None:
    try:
        follower.wait(FOLLOWER_EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        logger.warning("The live follower of this run did not finish in %.0f s; stopping it", FOLLOWER_EXIT_WAIT_S)
        follower.terminate()
