"""The vector Monitor: record every sub-environment of a ``gymnasium.vector.VectorEnv``.

* :class:`VectorMonitor` -- a ``gymnasium.vector.VectorWrapper`` with the Monitor's arguments (plus
  ``video_envs`` and ``env_id``); ``palaestra.Monitor(vector_env, ...)`` returns one.

It works on any vector environment: ``SyncVectorEnv``, ``AsyncVectorEnv``, and environments that
are vectorised natively (``gym.make_vec(..., vectorization_mode="vector_entry_point")``, palaestra's
Go and Hex, JAX or C++ batches), under each of Gymnasium's autoreset modes (next-step, same-step,
disabled). It only sees what ``step`` returns, so in ``AsyncVectorEnv`` the bookkeeping stays in the
calling process instead of in every worker.

The training directory is the 2017 one with the whole vector env as one data source: one manifest
and one stats file (infix ``{monitor id}.{uid}``), whatever the number of sub-environments, with the
episodes of all of them in the order they ended and palaestra's per-episode ``env_index`` saying
which sub-environment played each (every reader -- ``load_results``, ``palaestra results``, the
upload client, the scoreboard, gym 0.9.4's ``load_results`` -- sees one run; the 2017 ones ignore
``env_index``). Videos keep the sub-environment in their names (``...{uid}-{index}.video{E:06}``).
While the Monitor is open, the episodes go to the memory-mapped journal beside the stats file (see
:mod:`palaestra.monitoring.journal`), so a killed process loses only the episodes in progress.

Env ids: the vector env's spec (``gym.make_vec`` sets one), else its first sub-environment's, else
the ``env_id`` argument; with none of them the Monitor refuses to start, since an upload needs one.

Videos come from ``render()`` where the env renders (``render_mode='rgb_array'`` or ``'ansi'``), else,
where the observations are images (ale-py's ``AtariVectorEnv``: stacked 84x84 grey frames), from the
recorded sub-environment's observations: the newest frame of a stack, grey or RGB, streamed through
the same recorder; their metadata says ``"frame_source": "observations"``.

The bookkeeping is numpy over the whole batch: a step that ends no episode costs two in-place
additions and one ``any``; the episodes that end in one step are journaled with one copy, whatever
their number (``bench/vector_monitor.py`` measures it against Gymnasium's vector
``RecordEpisodeStatistics`` and SB3's ``VecMonitor``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv, VectorWrapper

from palaestra.errors import MonitorError, ResetNeeded
from palaestra.monitoring import files
from palaestra.monitoring.env_ids import vector_env_id, vector_spec
from palaestra.monitoring.journal import KIND_BY_TYPE
from palaestra.monitoring.open_monitors import _registry
from palaestra.monitoring.provenance import ProvenanceRecorder
from palaestra.monitoring.recording import (
    VIDEO_RENDER_MODES,
    env_info_of_spec,
    episode_type_of,
    follow_live,
    normalise_video_callable,
    prepare_directory,
    video_mode_for,
)
from palaestra.monitoring.schedules import VideoSchedule, disable_videos
from palaestra.monitoring.stats import VectorStatsRecorder

__all__ = ["VectorMonitor"]

logger = logging.getLogger("palaestra")
count_nonzero = np.count_nonzero


class VectorMonitor(VectorWrapper[Any, Any, Any, Any, Any]):
    """Record the episodes (and videos) of every sub-environment of ``env`` into ``directory``.

    Args:
        env: a ``gymnasium.vector.VectorEnv`` (``gym.make_vec``, ``SyncVectorEnv``, ``AsyncVectorEnv``,
            a natively vectorised env), in any autoreset mode.
        directory, video_callable, force, resume, write_upon_reset, uid, mode, config, provenance,
            provenance_omit: as for
            :class:`palaestra.Monitor`; ``video_callable`` is applied to each recorded
            sub-environment's own episode ids.
        video_envs: the sub-environments whose episodes get videos (default: sub-environment 0).
            Frames come from the sub-environment itself in a ``SyncVectorEnv``, else from the vector
            env's ``render()`` (which renders every sub-environment, so only while a video records);
            a vector env that does not render but observes images gives its observations' frames.
        env_id: the env id to record, for a vector env without a spec (ale-py's ``AtariVectorEnv``
            made directly); it must agree with the spec where there is one.

    ``step`` and ``reset`` return what the vector env returns. With autoreset disabled, a
    sub-environment whose episode ended must be reset (``reset(options={"reset_mask": mask})``)
    before the next step, as the 2017 Monitor required. Closing writes the final stats and
    manifests and closes the vector env.
    """

    def __init__(
        self,
        env: VectorEnv[Any, Any, Any],
        directory: str | os.PathLike[str],
        video_callable: VideoSchedule | bool | None = None,
        force: bool = False,
        resume: bool = False,
        write_upon_reset: bool = False,
        uid: str | None = None,
        mode: str | None = None,
        video_envs: Sequence[int] = (0,),
        env_id: str | None = None,
        config: Mapping[str, Any] | None = None,
        provenance: bool = True,
        provenance_omit: Collection[str] = (),
        live: bool = False,
    ) -> None:
        super().__init__(env)
        self.enabled = False
        self.video_callable = normalise_video_callable(video_callable)
        self._kind = KIND_BY_TYPE[episode_type_of(mode)]
        self.autoreset_mode = autoreset_mode_of(env)
        n = self.num_envs
        self.video_envs = _check_video_envs(video_envs, n)
        spec = vector_spec(env)
        self.env_id: str = vector_env_id(env, spec, env_id)
        self.directory = prepare_directory(directory, force=force, resume=resume)
        self.env_info = {**env_info_of_spec(spec), "env_id": self.env_id}
        self.write_upon_reset = write_upon_reset
        self._monitor_id = _registry.register(self)
        self.file_infix = f"{self._monitor_id}.{uid if uid else os.getpid()}"
        self.stats_recorder = VectorStatsRecorder(
            self.directory, f"{files.FILE_PREFIX}.episode_batch.{self.file_infix}", n
        )
        self.manifest_path = os.path.join(self.directory, files.manifest_name(self.file_infix))
        self._provenance = (
            ProvenanceRecorder(
                self.directory, self.file_infix, env, spec, config, provenance_omit, n, env_id=self.env_id
            )
            if provenance
            else None
        )
        # Per sub-environment: the running episode's return, and the vector step it started after
        # (its length is ``_steps - _starts``: one Python increment a step instead of a numpy one).
        self._returns = np.zeros(n)
        self._steps = 0
        self._starts = np.zeros(n, np.int64)
        # The running episodes' kind (training/evaluation): one value while they all have the same,
        # else (after set_monitor_mode switched while episodes ran) None and ``_kinds`` per sub-env.
        self._episode_kind: int | None = self._kind
        self._kinds = np.full(n, self._kind, np.uint8)
        # NEXT_STEP: the sub-environments whose episodes ended at the last step; this step resets them.
        self._restarting: np.ndarray | None = None
        # DISABLED: the sub-environments whose episodes ended and that have not been reset yet.
        self._finished: np.ndarray | None = None
        self._frames: _Frames | _ObservationFrames = _Frames(env)
        observed = observation_frame_index(env.single_observation_space)
        if self.video_callable is disable_videos:
            self.video_envs = ()
        elif env.render_mode not in VIDEO_RENDER_MODES and observed is not None:
            self._frames = _ObservationFrames(env, observed)
        elif video_mode_for(env.render_mode, self.env_id) is None:
            self.video_envs = ()
        self._videos: list[tuple[str, str]] = []
        self._episode_ids = dict.fromkeys(self.video_envs, 0)
        self._recorders: dict[int, Any] = {}
        self._step_override: Callable[[Any], Any] | None = self._refuse_step
        # The fast path looks at ended episodes only to start videos or wait for resets.
        self._watch_done = bool(self.video_envs) or self.autoreset_mode is AutoresetMode.DISABLED
        self._started = False
        self.enabled = True
        #: the follower process sending this run to the scoreboard while it trains (``live=True``), else None
        self.follower = follow_live(self.directory) if live else None

    # -- the VectorEnv API --------------------------------------------------------------------------
    # ``step`` is the hot path: the common case (no video recording, no sub-environment waiting for a
    # reset) is this method, and a step that ends no episode costs one numpy addition, one dict lookup
    # (info["true_reward"]) and two count_nonzero calls; the other states set ``_step_override``
    # (see ``_set_step``).
    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        if self._step_override is not None:
            return self._step_override(actions)
        result = self.env.step(actions)
        returns = self._returns
        returns += result[1] if "true_reward" not in result[4] else true_rewards(result[1], result[4])
        self._steps += 1
        # count_nonzero: a third of the cost of logical_or(...).any() (bench/vector_monitor.py);
        # counted once here and handed on, since most steps of a many-env run end some episode.
        n_terminated, n_truncated = count_nonzero(result[2]), count_nonzero(result[3])
        if self._restarting is not None:
            self._restart(self._restarting)
        if n_terminated or n_truncated:
            done = self._ends(result, n_terminated, n_truncated)
            if self._watch_done:
                self._after_done(done, result[0])
        return result

    def _count(self, result: tuple[Any, ...]) -> np.ndarray | None:
        """The bookkeeping of one step; returns the done mask when episodes ended, else None."""
        self._returns += result[1] if "true_reward" not in result[4] else true_rewards(result[1], result[4])
        self._steps += 1
        if self._restarting is not None:
            self._restart(self._restarting)
        n_terminated, n_truncated = count_nonzero(result[2]), count_nonzero(result[3])
        return self._ends(result, n_terminated, n_truncated) if n_terminated or n_truncated else None

    def _ends(self, result: tuple[Any, ...], n_terminated: np.integer[Any], n_truncated: np.integer[Any]) -> np.ndarray:
        """End the episodes that this step ended (``n_terminated`` and ``n_truncated`` of them, not both
        zero); the done mask."""
        terminated, truncated = np.asarray(result[2]), np.asarray(result[3])
        if not n_truncated:
            done, truncated_flags = terminated, False
        elif not n_terminated:
            done, truncated_flags = truncated, True
        else:
            done = terminated | truncated
            truncated_flags = truncated & ~terminated  # terminated wins, as in the Monitor
        ended = done.nonzero()[0]
        if truncated_flags is not True and truncated_flags is not False:
            truncated_flags = truncated_flags[ended]
        self._end_episodes(ended, truncated_flags)
        return done

    def _end_episodes(self, ended: np.ndarray, truncated: Any) -> None:
        steps = self._steps
        kind = self._episode_kind if self._episode_kind is not None else self._kinds[ended]
        self.stats_recorder.record_episodes(
            ended, steps - self._starts[ended], self._returns[ended], kind, truncated, time.time()
        )
        self._returns[ended] = 0.0
        self._starts[ended] = steps
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            if self._episode_kind is None:
                self._kinds[ended] = self._kind  # the next episodes started in this same step
        elif self.autoreset_mode is AutoresetMode.NEXT_STEP:
            self._restarting = ended
        else:
            finished = np.zeros(self.num_envs, bool)
            finished[ended] = True
            self._finished = finished if self._finished is None else self._finished | finished

    def _restart(self, restarted: np.ndarray) -> None:
        """NEXT_STEP: the last step reset these sub-environments; it belongs to no episode."""
        self._restarting = None
        self._returns[restarted] = 0.0
        self._starts[restarted] = self._steps
        if self._episode_kind is None:
            self._kinds[restarted] = self._kind

    def _after_done(self, done: np.ndarray, observations: Any) -> None:
        """Episodes ended in the fast path: videos may start, or sub-environments wait for a reset."""
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            self._frames.next_step(observations)
            self._start_videos(done.nonzero()[0])
        self._set_step()

    def _step_recording(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """``step`` while a video records, or may start at this step (next-step autoreset)."""
        restarting = self._restarting
        result = self.env.step(actions)
        done = self._count(result)
        self._frames.next_step(result[0])
        if done is None and restarting is None:  # most steps: no episode ended or began, same state
            for recorder in self._recorders.values():
                recorder.capture_frame()
            return result
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        for k in list(self._recorders):
            ended = done is not None and bool(done[k])
            if not (ended and same_step):  # (same-step: the final frame is gone, the env has reset)
                self._recorders[k].capture_frame()
            if ended:
                self._close_video(k)
        if restarting is not None:
            self._start_videos(restarting)
        elif same_step and done is not None:
            self._start_videos(done.nonzero()[0])
        self._set_step()
        return result

    def _start_videos(self, started: np.ndarray) -> None:
        """Sub-environments ``started`` (indices) have just begun episodes."""
        for k in set(started.tolist()).intersection(self.video_envs):
            self._start_video(k)

    def _refuse_step(self, actions: Any) -> Any:
        if not self.enabled:
            raise MonitorError(f"Trying to step a closed Monitor on {self.directory}")
        if not self._started:
            raise ResetNeeded(
                f"Trying to step a vector environment before reset. While the monitor is active for "
                f"{self.env_id}, you must call 'envs.reset()' before you start stepping."
            )
        assert self._finished is not None
        waiting = self._finished.nonzero()[0].tolist()
        raise ResetNeeded(
            f"Sub-environments {waiting} of the vector environment {self.env_id} have finished their "
            "episodes and autoreset is disabled: reset them with envs.reset(options={'reset_mask': mask}) "
            "before stepping again (the monitor cannot step beyond the end of an episode)."
        )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if not self.enabled:
            return self.env.reset(seed=seed, options=options)
        mask = _reset_mask(options, self.num_envs)  # read first: the vector env pops it
        if not self._started:
            self._start_files()
        if self._provenance is not None:
            self._provenance.reset(seed)
        lengths = self._steps - self._starts
        abandoned = (lengths > 0 if mask is None else (lengths > 0) & mask).nonzero()[0]
        self.stats_recorder.record_abandoned(abandoned, lengths[abandoned])
        result = self.env.reset(seed=seed, options=options)
        if mask is None:
            self._returns[:] = 0.0
            self._starts[:] = self._steps
            self._episode_kind = self._kind
            self._restarting = self._finished = None
            restarted = list(range(self.num_envs))
        else:
            self._returns[mask] = 0.0
            self._starts[mask] = self._steps
            if self._episode_kind is not None and self._episode_kind != self._kind:
                self._kinds[:] = self._episode_kind
                self._episode_kind = None
            self._kinds[mask] = self._kind
            if self._restarting is not None:
                self._restarting = self._restarting[~mask[self._restarting]]
                if not len(self._restarting):
                    self._restarting = None
            if self._finished is not None:
                self._finished = self._finished & ~mask
                if not self._finished.any():
                    self._finished = None
            restarted = mask.nonzero()[0].tolist()
        self._frames.next_step(result[0])
        for k in set(restarted).intersection(self.video_envs):
            self._close_video(k)  # an episode reset before it ended: its video is kept as it is
            self._start_video(k)
        self._set_step()
        if self.write_upon_reset:
            self.stats_recorder.flush()
            self._write_manifest()
        return result

    def close(self, **kwargs: Any) -> None:
        """Write the final stats and manifests, unregister, and close the vector environment."""
        if not self.enabled:
            return
        self.enabled = False
        self._step_override = self._refuse_step
        try:
            for k in list(self._recorders):
                self._close_video(k)
            if self._started:
                # The manifest names no more than it did at the first reset (and at each finished
                # video): only the stats file is written, and the journal then removed.
                self.stats_recorder.close()
                if self._provenance is not None:
                    self._provenance.close()
        finally:
            _registry.unregister(self._monitor_id)
        logger.info(
            "Finished writing results. You can upload them to the scoreboard via palaestra.upload(%r)",
            self.directory,
        )
        self.env.close(**kwargs)

    def __enter__(self) -> VectorMonitor:
        return self

    def __exit__(self, *args: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "enabled", False):
            try:
                self.close()
            except Exception:
                pass

    # -- the 2017 helpers ---------------------------------------------------------------------------
    def set_monitor_mode(self, mode: str) -> None:
        """Switch between ``'training'`` and ``'evaluation'``: episodes that start from now on get it."""
        kind = KIND_BY_TYPE[episode_type_of(mode)]
        if self._episode_kind is not None and kind != self._episode_kind:
            self._kinds[:] = self._episode_kind
            self._episode_kind = None
        self._kind = kind

    def get_total_steps(self) -> int:
        """Every step of every sub-environment, including those of episodes reset before they ended."""
        return self.stats_recorder.total_steps + int((self._steps - self._starts).sum())

    def get_episode_rewards(self) -> list[float]:
        """The returns of the completed episodes of all sub-environments, in the order they ended."""
        return self.stats_recorder.episode_rewards

    def get_episode_lengths(self) -> list[int]:
        return self.stats_recorder.episode_lengths

    @property
    def videos(self) -> list[tuple[str, str]]:
        """Every finished video (path, metadata path), in the order they finished."""
        return list(self._videos)

    # -- internals ----------------------------------------------------------------------------------
    def _start_files(self) -> None:
        # As for the single Monitor, nothing is written before the first reset; from then on the
        # stats file and the manifest exist, so the directory loads at any moment.
        self._started = True
        self.stats_recorder.start()
        self._write_manifest()

    def _set_step(self) -> None:
        """Choose the step implementation for the state the monitor is in now."""
        if self._finished is not None:
            self._step_override = self._refuse_step
        elif self._recorders or (
            self._restarting is not None and not set(self._restarting.tolist()).isdisjoint(self.video_envs)
        ):
            self._step_override = self._step_recording
        else:
            self._step_override = None

    def _start_video(self, k: int) -> None:
        """Sub-environment ``k`` has just started an episode: record it if the schedule says so."""
        episode_id = self._episode_ids[k]
        self._episode_ids[k] = episode_id + 1
        if not self.video_callable(episode_id):
            return
        from palaestra.monitoring.video import VideoRecorder

        infix = files.sub_env_infix(self.file_infix, k, self.num_envs)
        base_path = os.path.join(self.directory, files.video_base_name(infix, episode_id))
        metadata = {"episode_id": episode_id, "env_index": k, **self._frames.label}
        recorder = VideoRecorder(self._frames.of(k), base_path=base_path, metadata=metadata)
        recorder.capture_frame()
        self._recorders[k] = recorder

    def _close_video(self, k: int) -> None:
        recorder = self._recorders.pop(k, None)
        if recorder is None:
            return
        recorder.close()
        if recorder.functional:
            self._videos.append((recorder.path, recorder.metadata_path))
            self._write_manifest()
        elif recorder.render_failed and self.video_envs:
            # As the Monitor does: rendering again may do worse than fail (MuJoCo without a display
            # aborts the process at the second attempt); the recorder has logged the failure.
            self.video_envs = ()
            logger.info(
                "Monitor: no more videos of %s in this run, since its render() failed; the episodes are "
                "still recorded.",
                self.env_id,
            )

    def _write_manifest(self) -> None:
        document = files.manifest_document(os.path.basename(self.stats_recorder.path), self._videos, self.env_info)
        files.atomic_write_json(self.manifest_path, document)


def true_rewards(rewards: Any, infos: dict[str, Any]) -> Any:
    """The rewards to record: ``info["true_reward"]`` where the sub-environments report one.

    Semi-supervised environments (2017's SemisuperPendulum*) show the agent a distorted reward and put
    the real one in ``info["true_reward"]``; the Monitor records the real one, as for a single env.
    """
    reported = infos.get("_true_reward")
    return infos["true_reward"] if reported is None else np.where(reported, infos["true_reward"], rewards)


def autoreset_mode_of(env: VectorEnv[Any, Any, Any]) -> AutoresetMode:
    """The vector env's autoreset mode (``metadata["autoreset_mode"]``; next-step when it says none,
    as Gymnasium assumes)."""
    mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    if isinstance(mode, str):
        try:
            mode = AutoresetMode(mode)
        except ValueError:
            pass
    if not isinstance(mode, AutoresetMode):
        raise MonitorError(
            f"The vector environment's metadata['autoreset_mode'] is {mode!r}, not a "
            "gymnasium.vector.AutoresetMode: the Monitor cannot tell where its episodes end"
        )
    return mode


def _check_video_envs(video_envs: Sequence[int], num_envs: int) -> tuple[int, ...]:
    chosen = tuple(int(k) for k in video_envs)
    bad = [k for k in chosen if not 0 <= k < num_envs]
    if bad:
        raise MonitorError(
            f"video_envs {list(video_envs)} names sub-environments {bad} that do not exist: the vector "
            f"environment has {num_envs} (0 to {num_envs - 1})"
        )
    return tuple(dict.fromkeys(chosen))


def _reset_mask(options: dict[str, Any] | None, num_envs: int) -> np.ndarray | None:
    mask = (options or {}).get("reset_mask")
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.shape != (num_envs,) or mask.dtype != np.bool_:
        raise MonitorError(
            f"options['reset_mask'] must be a bool array of shape ({num_envs},), not {mask.dtype} {mask.shape}"
        )
    return mask


#: Frames of at least this height and width make an image observation (smaller uint8 boxes are
#: more likely counts or board cells than pictures).
MIN_OBSERVATION_FRAME_SIDE = 16


def observation_frame_index(space: spaces.Space[Any]) -> tuple[Any, ...] | None:
    """The index that takes one sub-environment's observation to its newest image frame, or None when
    its observations are not images.

    Images are uint8 boxes of shape ``(H, W)`` (grey), ``(H, W, 1)`` or ``(H, W, 3)`` (RGB), or stacks
    of them: ``(S, H, W)`` and ``(S, H, W, C)`` (ale-py's ``AtariVectorEnv``, Gymnasium's
    ``FrameStackObservation``, newest last) or channel-last ``(H, W, S)`` (SB3's ``VecFrameStack``),
    where the stack axis is the shortest one.
    """
    if not isinstance(space, spaces.Box) or space.dtype != np.uint8:
        return None
    shape = space.shape
    index: tuple[Any, ...]
    if len(shape) == 2:
        image, index = shape, ()
    elif len(shape) == 3 and shape[-1] in (1, 3):
        image, index = shape[:2], ()
    elif len(shape) == 3:
        stacked_first = shape[0] <= shape[-1]
        image, index = (shape[1:], (-1,)) if stacked_first else (shape[:2], (Ellipsis, -1))
    elif len(shape) == 4 and shape[-1] in (1, 3):
        image, index = shape[1:3], (-1,)
    else:
        return None
    return index if min(image) >= MIN_OBSERVATION_FRAME_SIDE else None


class _Frames:
    """Frames of single sub-environments for the video recorder.

    A ``SyncVectorEnv``'s sub-environment renders itself; any other vector env renders all of its
    sub-environments in ``render()``, done at most once per step however many videos record.
    """

    #: what the videos' metadata says of their frames (nothing: rendered, as the Monitor's)
    label: dict[str, str] = {}

    def __init__(self, env: VectorEnv[Any, Any, Any]) -> None:
        self.env = env
        self.render_mode = env.render_mode
        unwrapped = env.unwrapped
        self._envs = unwrapped.envs if isinstance(unwrapped, SyncVectorEnv) else None
        self._cached: Any = None
        self._fresh = False

    def next_step(self, observations: Any) -> None:
        self._fresh = False

    def of(self, index: int) -> _SubEnvFrames:
        return _SubEnvFrames(self, index)

    def frame(self, index: int) -> Any:
        if self._envs is not None:
            return self._envs[index].render()
        if not self._fresh:
            self._cached = self.env.render()
            self._fresh = True
        frames = self._cached
        return None if frames is None else frames[index]


class _SubEnvFrames:
    """What ``VideoRecorder`` needs of an environment (``render_mode``, ``metadata``, ``render()``),
    for one sub-environment of a vector env."""

    def __init__(self, frames: _Frames | _ObservationFrames, index: int) -> None:
        self._frames = frames
        self.index = index
        self.render_mode = frames.render_mode
        self.metadata = frames.env.metadata

    def render(self) -> Any:
        return self._frames.frame(self.index)

    def __repr__(self) -> str:
        return f"sub-environment {self.index} of {self._frames.env}"



class _ObservationFrames:
    """Frames of single sub-environments taken from the observations, for a vector env that does not
    render: the newest image of each step's (or reset's) observation of the sub-environment."""

    label = {"frame_source": "observations"}
    render_mode = "rgb_array"

    def __init__(self, env: VectorEnv[Any, Any, Any], index: tuple[Any, ...]) -> None:
        self.env = env
        self._index = index
        self._observations: Any = None

    def next_step(self, observations: Any) -> None:
        self._observations = observations

    def of(self, index: int) -> _SubEnvFrames:
        return _SubEnvFrames(self, index)

    def frame(self, index: int) -> Any:
        if self._observations is None:
            return None
        return np.asarray(self._observations[index])[self._index]
