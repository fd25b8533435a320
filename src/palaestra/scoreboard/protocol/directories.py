"""A training directory's documents as they go up, besides its episode batch (:mod:`.batches`): its
videos (the usable ones, at most :data:`MAX_VIDEOS`, evenly spaced), the video archive's one writer,
and its provenance as the schema reads it. Used by the upload client
(:mod:`palaestra.scoreboard.client.preparation`) and by a board's agent worker, which stores its own
run as an upload is (:mod:`palaestra.scoreboard.server.agents.worker`), so both make the same
documents.

- :func:`usable_videos`, :func:`subsample_videos`: which videos go into the archive;
- :func:`write_archive`: the 2017 video archive (a tar.gz of the videos, their metadata, a manifest);
- :func:`checked_provenance`: the provenance a Monitor recorded, or None where the schema refuses it.
"""

from __future__ import annotations

import io
import json
import logging
import os
import tarfile
import time
from collections.abc import Sequence
from typing import IO, Any

import numpy as np
from pydantic import ValidationError

from palaestra.errors import ResultsError
from palaestra.monitoring import files as monitor_files
from palaestra.monitoring.provenance import load_provenance
from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol.provenance import Provenance

__all__ = ["checked_provenance", "subsample_videos", "usable_videos", "write_archive"]

logger = logging.getLogger("palaestra.upload")


def _short_error(e: Exception) -> str:
    """The first line (or three) of an exception's message."""
    text = str(e).strip().splitlines()
    return text[0] if len(text) == 1 else "; ".join(line.strip() for line in text[:3])


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
            f"The video metadata file {path} is unreadable or invalid ({_short_error(e)}). Fix or remove the "
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
        raise ResultsError(f"{prefix}Invalid video archive: {_short_error(e)}") from None
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


