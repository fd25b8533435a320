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
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import logging
import os
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
from pydantic import ValidationError

from palaestra.benchmarks import benchmark_spec
from palaestra.benchmarks.runs import training_directories
from palaestra.errors import Error, MonitorError, ResultsError, UnregisteredBenchmark
from palaestra.monitoring import files as monitor_files
from palaestra.monitoring.open_monitors import open_monitors
from palaestra.monitoring.provenance import load_provenance
from palaestra.monitoring.results import load_env_info_from_manifests, load_results
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client.keys import idempotency_key, sha256_file
from palaestra.scoreboard.client.transport import short_error
from palaestra.scoreboard.protocol.batches import encode_episode_batch
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


def usable_videos(videos: Sequence[tuple[str, str]], training_dir: str) -> list[tuple[str, str]]:
    """The videos to upload: missing files are an error; broken or empty recordings are skipped."""
    usable = []
    for video, meta in videos:
        for path, what in ((meta, "video metadata file"), (video, "video file")):
            if not os.path.isfile(path):
                raise ResultsError(
                    f"The {what} {path} listed in a manifest of {training_dir} does not exist. Restore it, "
                    "or upload without videos (palaestra.upload(..., skip_videos=True) or 'palaestra upload "
                    "--skip-videos')."
                )
        metadata = _read_video_metadata(meta)
        problem = (
            "marked broken by the recorder"
            if metadata.broken
            else "empty (no frame was recorded)"
            if metadata.empty or os.path.getsize(video) == 0
            else None
        )
        if problem:
            logger.warning("Skipping video %s: it is %s", video, problem)
            continue
        usable.append((video, meta))
    return usable


def _read_video_metadata(path: str) -> protocol.VideoMetadata:
    try:
        with open(path, encoding="utf-8") as f:
            return protocol.VideoMetadata.model_validate(json.load(f))
    except (OSError, ValueError) as e:  # ValidationError is a ValueError
        raise ResultsError(
            f"The video metadata file {path} is unreadable or invalid ({short_error(e)}). Fix or remove the "
            "video, or upload without videos (skip_videos=True / --skip-videos)."
        ) from None


def subsample_videos(
    videos: list[tuple[str, str]], limit: int = protocol.MAX_VIDEOS
) -> list[tuple[str, str]]:
    """At most ``limit`` videos, evenly spaced over the run (the 2017 ``np.linspace`` rule)."""
    if len(videos) <= limit:
        return videos
    indices = np.linspace(0, len(videos) - 1, limit).astype("int")
    return [videos[i] for i in indices]


def checked_provenance(directory: str) -> Provenance | None:
    """The directory's provenance as the protocol's schema reads it; None (with a warning naming the
    field) when it does not pass, or when no Monitor recorded one."""
    document = load_provenance(directory)
    if document is None:
        return None
    try:
        return Provenance.model_validate(document)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(the document)"
        logger.warning(
            "Not sending the provenance of %s: its field %s is invalid (%s). The episodes are uploaded "
            "without it.",
            directory,
            where,
            first.get("msg"),
        )
        return None


def prepare_training_directory(
    training_dir: str | os.PathLike[str], skip_videos: bool = False, send_provenance: bool = True
) -> PreparedDirectory:
    """Load and check one training directory; raises :class:`ResultsError` naming what is wrong."""
    directory = os.path.abspath(os.fspath(training_dir))
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


# -- the video archive ------------------------------------------------------------------------------


def _anonymise(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_archive(
    videos: Sequence[tuple[str, str]],
    archive_file: str | os.PathLike[str] | IO[bytes],
    env_id: str | None = None,
) -> None:
    """Write the 2017 video archive: a tar.gz of each video and its ``.meta.json``, then ``manifest.json``.

    Raises :class:`ResultsError` for more than ``MAX_VIDEOS`` videos, a missing file, a duplicate
    name or a name the scoreboard does not accept.
    """
    prefix = f"[{env_id}] " if env_id else ""
    if len(videos) > protocol.MAX_VIDEOS:
        raise ResultsError(
            f"{prefix}Trying to upload {len(videos)} videos, but there is a limit of {protocol.MAX_VIDEOS}"
        )
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for video, meta in videos:
        for path, pattern in ((video, monitor_files.VIDEO_NAME_RE), (meta, monitor_files.VIDEO_META_NAME_RE)):
            name = os.path.basename(path)
            if not os.path.isfile(path):
                raise ResultsError(
                    f"{prefix}No such video file {path}. (HINT: your video recorder may have broken.)"
                )
            if name in seen:
                raise ResultsError(f"{prefix}Duplicated video name {name} in the video archive ({path})")
            if not pattern.match(name):
                raise ResultsError(
                    f"{prefix}Invalid video name {name} ({path}): it must match {pattern.pattern}"
                )
            seen.add(name)
        pairs.append((os.path.basename(video), os.path.basename(meta)))
    try:
        manifest = protocol.VideoArchiveManifest(version=0, videos=pairs)
    except ValidationError as e:
        raise ResultsError(f"{prefix}Invalid video archive: {short_error(e)}") from None
    manifest_bytes = manifest.model_dump_json().encode("utf-8")
    if isinstance(archive_file, (str, os.PathLike)):
        target: dict[str, Any] = {"name": os.fspath(archive_file)}
    else:
        target = {"fileobj": archive_file}
    with tarfile.open(mode="w:gz", **target) as tar:
        for (video, meta), (video_name, meta_name) in zip(videos, pairs, strict=True):
            tar.add(video, arcname=video_name, recursive=False, filter=_anonymise)
            tar.add(meta, arcname=meta_name, recursive=False, filter=_anonymise)
        info = _anonymise(tarfile.TarInfo(protocol.VIDEO_ARCHIVE_MANIFEST))
        info.size = len(manifest_bytes)
        info.mtime = int(time.time())
        tar.addfile(info, io.BytesIO(manifest_bytes))


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
