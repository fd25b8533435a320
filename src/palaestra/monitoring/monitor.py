"""The Monitor: record every episode of any Gymnasium environment into a training directory.

The 2017 semantics (spec §3.1-3.4) on today's API, with its most complained-about behaviour fixed:
resetting before an episode ends is allowed (the abandoned episode is not a completed episode, but
its steps still count), and the directory is loadable at every moment, not only after ``close()``.

``Monitor(vector_env, ...)`` returns a :class:`~palaestra.monitoring.vector.VectorMonitor`, which
records every sub-environment of a ``gymnasium.vector.VectorEnv`` with the same arguments.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, SupportsFloat

import gymnasium
from gymnasium.core import ActType, ObsType

from palaestra.envs.headless import announce_mujoco_backend
from palaestra.errors import MonitorError, ResetNeeded
from palaestra.monitoring import files
from palaestra.monitoring.open_monitors import _registry
from palaestra.monitoring.provenance import ProvenanceRecorder
from palaestra.monitoring.recording import (
    env_info_for,
    episode_type_of,
    follow_live,
    normalise_video_callable,
    prepare_directory,
    refuse_stable_baselines_vec_env,
    video_mode_for,
)
from palaestra.monitoring.schedules import VideoSchedule, disable_videos
from palaestra.monitoring.stats import StatsRecorder
from palaestra.monitoring.stepping import EpisodeCounter

logger = logging.getLogger("palaestra")


class Monitor(gymnasium.Wrapper[ObsType, ActType, ObsType, ActType]):
    """Record episode statistics and videos of ``env`` into ``directory``.

    Args:
        env: any Gymnasium environment.
        directory: the training directory (created if missing).
        video_callable: episode id -> record a video? ``None`` is the capped cubic schedule
            (0, 1, 8, 27, ..., 1000, 2000, ...), ``False`` disables videos. Videos need the env to be
            made with ``render_mode='rgb_array'`` (mp4) or ``'ansi'`` (JSON terminal recording).
        force: delete the ``openaigym.*`` files already in ``directory``.
        resume: keep existing files and add a new run beside them (merged by ``load_results``).
        write_upon_reset: also rewrite the full stats file on every reset (the 2017 option; never
            needed for safety, since completed episodes are journaled as they end).
        uid: the second part of the file infix ``{monitor_id}.{uid}`` (default: the process id).
        mode: ``'training'`` (episode type ``'t'``, the default) or ``'evaluation'`` (``'e'``).
        config: the run's hyperparameters, recorded with its provenance (and shown on the scoreboard).
        provenance: record what ran (git commit, command line, packages, machine, env arguments, the
            seed of every reset) in ``openaigym.provenance.{infix}.json``; ``False`` records nothing.
        provenance_omit: sections (``"git"``, ``"command"``, ``"system"``, ``"packages"``, ``"env"``,
            ``"seeds"``, ``"config"``) or single fields (``"system.host"``) to leave out.
        live: put the run on the scoreboard while it trains: ``palaestra upload --follow`` in a process of
            its own (server and API key as for ``palaestra upload``), which seals the evaluation when the
            Monitor closes (docs/upload.md, "Following a run while it trains").

    Closing the Monitor writes the final stats and manifest and closes the wrapped environment.

    Given a ``gymnasium.vector.VectorEnv``, ``Monitor(...)`` returns a
    :class:`~palaestra.monitoring.vector.VectorMonitor` (same arguments, plus ``video_envs``).
    """

    def __new__(cls, env: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(env, gymnasium.vector.VectorEnv):
            from palaestra.monitoring.vector import VectorMonitor

            return VectorMonitor(env, *args, **kwargs)
        refuse_stable_baselines_vec_env(env)
        return super().__new__(cls)

    def __init__(
        self,
        env: gymnasium.Env[ObsType, ActType],
        directory: str | os.PathLike[str],
        video_callable: VideoSchedule | bool | None = None,
        force: bool = False,
        resume: bool = False,
        write_upon_reset: bool = False,
        uid: str | None = None,
        mode: str | None = None,
        config: Mapping[str, Any] | None = None,
        provenance: bool = True,
        provenance_omit: Collection[str] = (),
        live: bool = False,
    ) -> None:
        super().__init__(env)
        self.enabled = False
        self.video_callable = normalise_video_callable(video_callable)
        episode_type = episode_type_of(mode)
        self.directory = prepare_directory(directory, force=force, resume=resume)
        self.env_info = env_info_for(env)
        self.env_id = self.env_info.get("env_id")
        if self.env_id is None:
            logger.warning(
                "Monitor: the environment has no spec, so the manifest has no env_id and the directory "
                "cannot be uploaded. (HINT: create it with gymnasium.make.)"
            )
        self.write_upon_reset = write_upon_reset
        self.videos: list[tuple[str, str]] = []
        self.episode_id = 0
        self._monitor_id = _registry.register(self)
        self.file_infix = f"{self._monitor_id}.{uid if uid else os.getpid()}"
        self.stats_recorder = StatsRecorder(
            self.directory, f"{files.FILE_PREFIX}.episode_batch.{self.file_infix}", env_id=self.env_id
        )
        self.stats_recorder.type = episode_type
        self.manifest_path = os.path.join(self.directory, files.manifest_name(self.file_infix))
        self._provenance = (
            ProvenanceRecorder(self.directory, self.file_infix, env, env.spec, config, provenance_omit)
            if provenance
            else None
        )
        self._video_mode = self._choose_video_mode()
        self._recorder: Any = None
        self._episode_type = episode_type
        self._needs_reset: str | None = "before reset"
        #: the step's state: ``override``, the running episode's ``steps`` and ``reward`` (stepping.py)
        self._counter = EpisodeCounter()
        self._set_step(self._refuse_step)
        self._started = False
        self.enabled = True
        #: the follower process sending this run to the scoreboard while it trains (``live=True``), else None
        self.follower = follow_live(self.directory) if live else None

    # -- the Gymnasium API ----------------------------------------------------------------------------
    # ``step`` is the hot path, so the Monitor is a small state machine: ``step`` below is the common
    # case (an episode running, no video); the other states set the counter's ``override``
    # (``_refuse_step`` before reset / after the end, ``_step_first`` on an episode's first step,
    # ``_step_true_reward`` for envs that report a true reward, ``_step_recording`` while a video is
    # being recorded). One check and two counters per step; the episode's end, the reset and the first
    # step keep to the fewest calls, since in short episodes they weigh too: about 0.4 of
    # RecordEpisodeStatistics' overhead (bench/monitor_overhead.py).
    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        counter = self._counter
        if counter.override is not None:
            return counter.override(action)
        result = self.env.step(action)
        counter.steps += 1
        counter.reward += result[1]
        if result[2] or result[3]:
            self._end_episode(result[2], result[3])
        return result

    def _step_recording(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        result = self.env.step(action)
        self._recorder.capture_frame()
        return self._record(result, result[4].get("true_reward", result[1]))

    # Semi-supervised environments (2017's SemisuperPendulum*) show the agent a distorted reward and
    # put the real one in info["true_reward"]; the Monitor records the real one, as 2017's did (2017
    # skipped a true reward of 0; here any is recorded). Whether an env reports one shows on the first
    # step of each episode, so the common path above stays free of the check (bench/monitor_overhead.py).
    def _step_first(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        result = self.env.step(action)
        info = result[4]
        counter = self._counter
        if "true_reward" in info:
            counter.override = self._step_true_reward
            return self._record(result, info["true_reward"])
        counter.override = None
        # (step()'s common path, inline: a call fewer per episode)
        counter.steps += 1
        counter.reward += result[1]
        if result[2] or result[3]:
            self._end_episode(result[2], result[3])
        return result

    def _step_true_reward(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        result = self.env.step(action)
        return self._record(result, result[4].get("true_reward", result[1]))

    def _record(
        self, result: tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]], reward: SupportsFloat
    ) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        counter = self._counter
        counter.steps += 1
        counter.reward += reward
        if result[2] or result[3]:
            self._end_episode(result[2], result[3])
        return result

    def _refuse_step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        self._raise_reset_needed()
        raise AssertionError("unreachable")

    def _set_step(self, implementation: Callable[..., Any] | None) -> None:
        self._counter.override = implementation

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        if not self.enabled:
            return self.env.reset(seed=seed, options=options)
        counter = self._counter
        if self._needs_reset is None and counter.steps > 0:
            self.stats_recorder.record_abandoned(counter.steps)
        if self._recorder is not None:
            self._close_video_recorder()
        if not self._started:
            self._start_files()
        if self._provenance is not None:
            self._provenance.reset(seed)
        obs, info = self.env.reset(seed=seed, options=options)
        counter.steps = 0
        counter.reward = 0.0
        self._episode_type = self.stats_recorder.type
        self._needs_reset = None
        counter.override = self._step_first
        if self._video_mode is not None:
            self._start_video_recorder(self.episode_id)
        self.episode_id += 1
        if self.write_upon_reset:
            self._flush()
        return obs, info

    def close(self) -> None:
        """Write the final stats and manifest, unregister, and close the wrapped environment."""
        if not self.enabled:
            return
        self.enabled = False
        self._needs_reset = "closed"
        self._set_step(self._refuse_step)
        try:
            self._close_video_recorder()
            if self._started:
                self.stats_recorder.close()
                self._write_manifest()
                if self._provenance is not None:
                    self._provenance.close()
        finally:
            _registry.unregister(self._monitor_id)
        # Debug, not info: close() also runs on the way out of a crash, where "finished" would mislead,
        # and the command line prints its own next steps.
        logger.debug(
            "Finished writing results. You can upload them to the scoreboard via palaestra.upload(%r)",
            self.directory,
        )
        self.env.close()

    def __del__(self) -> None:
        if getattr(self, "enabled", False):
            try:
                self.close()
            except Exception:
                pass

    # -- 2017 helpers ---------------------------------------------------------------------------------
    def set_monitor_mode(self, mode: str) -> None:
        """Switch between ``'training'`` and ``'evaluation'``; takes effect at the next reset."""
        self.stats_recorder.type = episode_type_of(mode)

    def get_total_steps(self) -> int:
        """Every step taken, including those of episodes reset before they ended."""
        return self.stats_recorder.total_steps + (self._counter.steps if self._needs_reset is None else 0)

    def get_episode_rewards(self) -> list[float]:
        return self.stats_recorder.episode_rewards

    def get_episode_lengths(self) -> list[int]:
        return self.stats_recorder.episode_lengths

    # -- internals ------------------------------------------------------------------------------------
    def _start_files(self) -> None:
        # Nothing is written before the first reset (AsyncVectorEnv makes a throw-away copy of the first
        # sub-env in the parent process); from then on the manifest and stats file exist, so a process
        # killed at any moment leaves a loadable directory.
        self._started = True
        self.stats_recorder.start()
        self.stats_recorder.flush()
        self._write_manifest()

    def _raise_reset_needed(self) -> None:
        if self._needs_reset == "closed":
            raise MonitorError(f"Trying to step a closed Monitor on {self.directory}")
        if self._needs_reset == "before reset":
            raise ResetNeeded(
                f"Trying to step an environment before reset. While the monitor is active for {self.env_id}, "
                "you must call 'env.reset()' before you start stepping."
            )
        raise ResetNeeded(
            f"Trying to step environment which is currently done. While the monitor is active for {self.env_id}, "
            "you cannot step beyond the end of an episode. Call 'env.reset()' to start the next episode."
        )

    def _end_episode(self, terminated: bool, truncated: bool) -> None:
        counter = self._counter
        self.stats_recorder.record_episode(
            counter.steps, counter.reward, bool(truncated) and not terminated, self._episode_type
        )
        self._needs_reset = "done"
        counter.override = self._refuse_step
        if self._recorder is not None:
            self._close_video_recorder()

    def _choose_video_mode(self) -> str | None:
        if self.video_callable is disable_videos:
            return None
        render_modes = (getattr(self.env, "metadata", None) or {}).get("render_modes")
        mode = video_mode_for(getattr(self.env, "render_mode", None), self.env_id, render_modes)
        if mode is not None and mode != "ansi":
            announce_mujoco_backend(self.env)
        return mode

    def _start_video_recorder(self, episode_id: int) -> None:
        if not self.video_callable(episode_id):
            return
        from palaestra.monitoring.video import VideoRecorder

        base_path = os.path.join(self.directory, files.video_base_name(self.file_infix, episode_id))
        self._recorder = VideoRecorder(self.env, base_path=base_path, metadata={"episode_id": episode_id})
        self._recorder.capture_frame()
        self._set_step(self._step_recording)

    def _close_video_recorder(self) -> None:
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        if self._counter.override == self._step_recording:
            self._set_step(self._step_first)
        recorder.close()
        if recorder.functional:
            self.videos.append((recorder.path, recorder.metadata_path))
            self._write_manifest()
        elif recorder.render_failed and self._video_mode is not None:
            # Rendering again may do worse than fail: MuJoCo without a display aborts the process at the
            # second attempt. The recorder has logged the failure; this run records no more videos.
            self._video_mode = None
            logger.info(
                "Monitor: no more videos of %s in this run, since its env.render() failed; the episodes "
                "are still recorded.",
                self.env_id,
            )

    def _write_manifest(self) -> None:
        document = files.manifest_document(
            os.path.basename(self.stats_recorder.path), self.videos, self.env_info
        )
        files.atomic_write_json(self.manifest_path, document)

    def _flush(self) -> None:
        self.stats_recorder.flush()
        self._write_manifest()


def vector_env_fns(
    env_fns: Sequence[Callable[[], gymnasium.Env[Any, Any]]],
    directory: str | os.PathLike[str],
    video_callable: VideoSchedule | bool | None = None,
    force: bool = False,
    resume: bool = False,
    mode: str | None = None,
    uid: str | None = None,
    config: Mapping[str, Any] | None = None,
    provenance: bool = True,
    provenance_omit: Collection[str] = (),
) -> list[Callable[[], Monitor[Any, Any]]]:
    """Wrap each sub-environment of a vector env in its own Monitor writing into one directory.

    For a vector env as it is, ``palaestra.Monitor(vector_env, directory)`` records every
    sub-environment from the calling process (a :class:`~palaestra.monitoring.vector.VectorMonitor`);
    these functions give each sub-environment a complete Monitor of its own instead (its own videos).

    The ``force``/``resume`` rules are applied once, here, in the calling process; each sub-env then
    gets a distinct uid ``{uid or pid}-{index}``, so the manifests never collide, and
    ``load_results`` merges them (and ``load_provenance`` their provenance files, seeds tagged with
    their ``source``). Works for ``SyncVectorEnv`` and ``AsyncVectorEnv``::

        fns = palaestra.monitoring.vector_env_fns([lambda: gym.make("CartPole-v1")] * 4, "runs/cp")
        envs = gymnasium.vector.AsyncVectorEnv(fns)
    """
    path = prepare_directory(directory, force=force, resume=resume)
    base = uid or str(os.getpid())

    def make(index: int, env_fn: Callable[[], gymnasium.Env[Any, Any]]) -> Callable[[], Monitor[Any, Any]]:
        def thunk() -> Monitor[Any, Any]:
            return Monitor(
                env_fn(),
                path,
                video_callable=video_callable,
                resume=True,
                uid=f"{base}-{index}",
                mode=mode,
                config=config,
                provenance=provenance,
                provenance_omit=provenance_omit,
            )

        return thunk

    return [make(i, fn) for i, fn in enumerate(env_fns)]
