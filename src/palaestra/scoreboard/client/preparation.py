"""What goes up from a training directory, checked before the first request.

- :func:`prepare_training_directory`: the episode batch (the 2017 document, validated with the
  protocol's schema) and the videos to send (broken or empty recordings skipped with a warning, at
  most ``MAX_VIDEOS`` evenly spaced); a missing file is an error naming it.
  The directory's provenance (what ran, :mod:`palaestra.monitoring.provenance`) goes with it,
  checked with the protocol's schema; one that does not pass is left out with a warning naming the
  field (the episodes matter more).
- :func:`prepare_benchmark_run`: every directory of a benchmark run, in the order it is scored.
- :func:`write_archive`: the 2017 video archive (a tar.gz of the videos, their ``.meta.json`` files and
  ``manifest.json``), written to a temporary file by :func:`temporary_archive` when it has to go up.

The videos' selection, the archive's writer and the provenance's check live in
:mod:`palaestra.scoreboard.protocol.directories` (a board's agent worker makes the same documents).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from palaestra.benchmarks import benchmark_spec
from palaestra.benchmarks.runs import training_directories
from palaestra.errors import Error, MonitorError, ResultsError, UnregisteredBenchmark
from palaestra.monitoring import files as monitor_files
from palaestra.monitoring.open_monitors import open_monitors
from palaestra.monitoring.results import load_env_info_from_manifests, load_results
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client.keys import idempotency_key, sha256_file
from palaestra.scoreboard.protocol.batches import encode_episode_batch
from palaestra.scoreboard.protocol.directories import (
    checked_provenance,
    subsample_videos,
    usable_videos,
    write_archive,
)
from palaestra.scoreboard.protocol.provenance import Provenance

__all__ = [
    "PreparedDirectory",
    "check_benchmark",
    "check_open_monitors",
    "checked_provenance",
    "prepare_benchmark_run",
    "prepare_training_directory",
    "subsample_videos",
    "temporary_archive",
    "usable_videos",
    "write_archive",
]

logger = logging.getLogger("palaestra.upload")


@dataclass
class PreparedDirectory:
    """Everything to upload from one training directory, checked before any request is made."""

    training_dir: str
    env_info: dict[str, Any]
    #: the episode-batch JSON document (``None`` when there are no completed episodes)
    batch: bytes | None
    #: the ``(video, metadata)`` paths that go into the archive (at most ``MAX_VIDEOS``)
    videos: list[tuple[str, str]] = field(default_factory=list)
    episodes: int = 0
    #: what ran, as the server will get it (None: not recorded, or not sent)
    provenance: Provenance | None = None

    @property
    def env_id(self) -> str:
        return str(self.env_info["env_id"])

    @property
    def batch_digest(self) -> str | None:
        return hashlib.sha256(self.batch).hexdigest() if self.batch is not None else None

    @functools.cached_property
    def video_digest(self) -> str | None:
        """A digest of the videos' names and bytes (not of the archive, whose bytes carry mtimes)."""
        if not self.videos:
            return None
        return idempotency_key(
            "videos",
            [
                [os.path.basename(v), sha256_file(v), os.path.basename(m), sha256_file(m)]
                for v, m in self.videos
            ],
        )


def check_open_monitors() -> None:
    """The 2017 sanity check: uploading while a Monitor is still recording loses its last episodes."""
    monitors = open_monitors()
    if monitors:
        where = ", ".join(sorted({str(m.directory) for m in monitors}))
        raise MonitorError(
            f"Still have an open monitor on {where}. You must run 'env.close()' before uploading. "
            "(Or pass ignore_open_monitors=True to upload what is recorded so far.)"
        )


def prepare_training_directory(
    training_dir: str | os.PathLike[str], skip_videos: bool = False, send_provenance: bool = True
) -> PreparedDirectory:
    """Load and check one training directory; raises :class:`ResultsError` naming what is wrong."""
    directory = os.path.abspath(os.fspath(training_dir))
    _refuse_a_benchmark_run(directory)
    results = load_results(directory)  # no directory, no manifests, commingled env_infos: ResultsError
    env_info = results["env_info"]
    episodes = len(results["episode_lengths"])
    batch = None
    if episodes:
        batch = encode_episode_batch(results, directory)
    videos: list[tuple[str, str]] = []
    if not skip_videos and results["videos"]:
        videos = usable_videos(results["videos"], directory)
        if len(videos) > protocol.MAX_VIDEOS:
            logger.warning(
                "[%s] You recorded videos for %d episodes, but the scoreboard only supports up to %d. "
                "Uploading an evenly spaced sample of %d.",
                env_info["env_id"],
                len(videos),
                protocol.MAX_VIDEOS,
                protocol.MAX_VIDEOS,
            )
            videos = subsample_videos(videos)
    if batch is None:
        # 2017 uploaded such a directory's videos alone; the scoreboard scores episodes, so it is refused
        raise ResultsError(
            f"[{env_info['env_id']}] You didn't have any recorded training data in {directory}: it has no "
            "completed episodes, so there is nothing to score. Record with palaestra.Monitor(env, directory) "
            "and run some episodes to completion before uploading."
        )
    provenance = checked_provenance(directory) if send_provenance else None
    return PreparedDirectory(directory, env_info, batch, videos, episodes, provenance)


def _refuse_a_benchmark_run(directory: str) -> None:
    """A folder without a manifest of its own whose sub-folders are training directories is a benchmark
    run (or a folder of runs): say so, and how to upload it, instead of "no manifest files" (issue 36)."""
    if not os.path.isdir(directory) or monitor_files.detect_training_manifests(directory):
        return
    runs = [os.path.relpath(d, directory) for d in training_directories(directory)]
    if runs:
        shown = ", ".join(runs[:3]) + (", ..." if len(runs) > 3 else "")
        raise ResultsError(
            f"{directory} is not a training directory, but it holds {len(runs)} ({shown}): to upload them as "
            "one benchmark run, give its benchmark with --benchmark ID (benchmark_id= in Python; `palaestra "
            "benchmark list` names them), or upload one of them on its own"
        )


def prepare_benchmark_run(
    training_dir: str | os.PathLike[str],
    benchmark_id: str,
    skip_videos: bool = False,
    send_provenance: bool = True,
) -> list[PreparedDirectory]:
    """Every training directory of a benchmark run, checked, in the order the run is scored
    (:func:`palaestra.benchmarks.runs.training_directories`)."""
    root = os.path.abspath(os.fspath(training_dir))
    directories = training_directories(root)
    if not directories:
        raise ResultsError(f"Could not find any evaluations in {root}")
    env_ids = [
        load_env_info_from_manifests(monitor_files.detect_training_manifests(d), d)["env_id"]
        for d in directories
    ]
    check_benchmark(
        benchmark_id, env_ids, os.fspath(training_dir), [os.path.relpath(d, root) for d in directories]
    )
    return [prepare_training_directory(d, skip_videos, send_provenance) for d in directories]


def check_benchmark(
    benchmark_id: str, env_ids: list[str], training_dir: str, directories: Sequence[str] = ()
) -> None:
    """The benchmark must be registered and every directory must be of one of its envs; fewer trials
    than its tasks ask for is only a warning, as in 2017 (the missing ones score 0)."""
    try:
        spec = benchmark_spec(benchmark_id)
    except Error as e:
        raise UnregisteredBenchmark(
            f"Invalid benchmark id: {benchmark_id}. Are you using a benchmark registered in "
            f"palaestra.benchmarks? ({e})"
        ) from None
    foreign = [(d, e) for d, e in zip(directories or env_ids, env_ids) if e not in spec.env_ids]
    if foreign:
        where, env_id = foreign[0]
        raise ResultsError(
            f"{training_dir} is not a run of benchmark {benchmark_id}: {where} recorded {env_id}, which is not "
            f"one of its envs ({', '.join(sorted(spec.env_ids))}). Upload it without --benchmark, or with "
            "the benchmark it belongs to."
        )
    expected = sorted(t.env_id for t in spec.tasks for _ in range(t.trials))
    if sorted(env_ids) != expected:
        logger.warning(
            "Benchmark %s expects env ids %s (one directory per trial) but %s has %s. Uploading anyway; the "
            "missing trials score 0.",
            benchmark_id,
            expected,
            training_dir,
            sorted(env_ids),
        )


@contextlib.contextmanager
def temporary_archive(prepared: PreparedDirectory) -> Iterator[Path]:
    """The video archive of ``prepared`` in a temporary file (removed afterwards)."""
    fd, name = tempfile.mkstemp(prefix="palaestra-videos-", suffix=".tar.gz")
    try:
        with os.fdopen(fd, "wb") as f:
            write_archive(prepared.videos, f, env_id=prepared.env_id)
        yield Path(name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)
