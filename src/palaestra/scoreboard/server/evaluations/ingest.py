"""Ingest: validate uploads and unpack video archives safely (scoring the evaluation is
:mod:`.derive`).

- Episode batches: :func:`palaestra.scoreboard.protocol.parse_episode_batch` (the same validation the
  client runs), under the server's size cap, once: when the bytes arrive
  (:func:`validate_episode_batch`). Creating the evaluation (which derives everything the pages
  show from them) and the ``episode_batch.json`` download read the stored bytes back with
  :func:`read_validated_batch`, which trusts them: their sha256 is checked, their content was validated.
- Video archives (tar.gz + ``manifest.json``): members must be regular files with flat names that
  match the 2017 patterns (no absolute paths, ``..``, links or devices), within caps on member
  count, member size and total expansion; every mp4/avi is probed with ffprobe (or, without one,
  the ffmpeg that videos are encoded with) and must hold a video stream; every JSON recording and
  metadata file must parse.

Errors are :class:`IngestError` with the HTTP status and the offending parameter; the app answers
them like any other error (:mod:`palaestra.scoreboard.server.problems`).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from palaestra.errors import DependencyNotInstalled
from palaestra.monitoring.files import CONTENT_TYPE_ANSI, CONTENT_TYPE_MP4, VIDEO_META_NAME_RE, VIDEO_NAME_RE
from palaestra.monitoring.video import ffmpeg_binary
from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.evaluations.records import StoredVideo

logger = logging.getLogger("palaestra.scoreboard.ingest")

PROBE_TIMEOUT_S = 60


class IngestError(Exception):
    """An upload that cannot be accepted; ``status`` is the HTTP status, ``param`` the field at fault."""

    def __init__(self, detail: str, param: str = protocol.NO_PARAM, status: int = 400) -> None:
        super().__init__(detail)
        self.detail = detail
        self.param = param
        self.status = status

    def about(self, param: str) -> IngestError:
        """The same error, blamed on request parameter ``param`` (the file id that brought the data)."""
        return IngestError(self.detail, param, self.status)


@dataclass(frozen=True)
class ArchiveLimits:
    max_members: int = protocol.MAX_ARCHIVE_MEMBERS
    max_member_bytes: int = protocol.MAX_ARCHIVE_MEMBER_BYTES
    max_expanded_bytes: int = protocol.MAX_ARCHIVE_EXPANDED_BYTES


#: Archive members up to this size are kept in memory; larger ones go to a temporary file.
IN_MEMORY_MEMBER_BYTES = 4 * 1024 * 1024


@dataclass
class Member:
    """One extracted archive member: its bytes in memory, or a temporary file."""

    name: str
    size: int
    data: bytes | None = None
    path: Path | None = None

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None
        return self.path.read_bytes()

    def as_file(self, workdir: WorkDir) -> Path:
        """A path holding the member's bytes (written out if it was in memory)."""
        if self.path is None:
            self.path = workdir.path() / self.name
            self.path.write_bytes(self.data or b"")
        return self.path


class WorkDir:
    """A temporary folder created on first use (most archives never need one)."""

    def __init__(self) -> None:
        self._path: Path | None = None

    def path(self) -> Path:
        if self._path is None:
            self._path = Path(tempfile.mkdtemp(prefix="palaestra-ingest-"))
        return self._path

    def cleanup(self) -> None:
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None

    def __enter__(self) -> WorkDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


@dataclass
class UnpackedVideo:
    name: str
    metadata_name: str
    video: Member
    metadata_member: Member
    metadata: protocol.VideoMetadata

    @property
    def size(self) -> int:
        return self.video.size

    def stored_as(self, key: str, metadata_key: str) -> StoredVideo:
        """What the server records about this video once it is stored under ``key``."""
        return StoredVideo(
            name=self.name,
            metadata_name=self.metadata_name,
            episode_id=self.metadata.episode_id,
            content_type=self.metadata.content_type,
            size=self.size,
            key=key,
            metadata_key=metadata_key,
            frame_source=self.metadata.frame_source,
            sha256=_sha256(self.video),
            metadata_sha256=_sha256(self.metadata_member),
        )


# --------------------------------------------------------------------------------------------------
# Episode batches
# --------------------------------------------------------------------------------------------------


def validate_episode_batch(data: bytes, max_bytes: int) -> protocol.EpisodeBatch:
    """Parse and validate an uploaded episode batch; :class:`IngestError` (400/413) if it is bad."""
    if len(data) > max_bytes:
        raise IngestError(
            f"The episode batch is {len(data)} bytes; this server accepts at most {max_bytes}.", "file", 413
        )
    try:
        return protocol.parse_episode_batch(data, max_bytes=max_bytes)
    except protocol.EpisodeBatchError as e:
        raise IngestError(f"Invalid episode batch: {e}", e.field) from None


def read_validated_batch(data: bytes) -> protocol.EpisodeBatch:
    """An episode batch that :func:`validate_episode_batch` accepted when it was uploaded, read back
    from the store without validating it again (its bytes never change once stored).

    :class:`IngestError` if the bytes are no longer JSON (a storage fault).
    """
    try:
        doc = protocol.loads_json(data)
    except protocol.EpisodeBatchError as e:
        raise IngestError(f"The stored episode batch is damaged ({e}); upload it again.", "file") from None
    if not isinstance(doc, dict):
        raise IngestError("The stored episode batch is damaged (not a JSON object); upload it again.", "file")
    return protocol.EpisodeBatch.model_construct(**doc)


# --------------------------------------------------------------------------------------------------
# Video archives
# --------------------------------------------------------------------------------------------------


def _check_member(member: tarfile.TarInfo) -> None:
    name = member.name
    if not member.isreg():
        kind = (
            "a symbolic link"
            if member.issym()
            else "a hard link"
            if member.islnk()
            else "a directory"
            if member.isdir()
            else "a device or special file"
        )
        raise IngestError(f"Video archive member {name!r} is {kind}; only regular files are allowed.", "file")
    if name.startswith("/") or "\\" in name or "/" in name or name in (".", ".."):
        raise IngestError(
            f"Video archive member {name!r} has a path; members must be plain file names "
            "(no folders, no absolute paths, no '..').",
            "file",
        )
    if not (
        name == protocol.VIDEO_ARCHIVE_MANIFEST or VIDEO_NAME_RE.match(name) or VIDEO_META_NAME_RE.match(name)
    ):
        raise IngestError(
            f"Video archive member {name!r} does not match {VIDEO_NAME_RE.pattern} or "
            f"{VIDEO_META_NAME_RE.pattern}.",
            "file",
        )


def unpack_archive(archive: Path | BinaryIO, workdir: WorkDir, limits: ArchiveLimits) -> dict[str, Member]:
    """Extract a video archive's members (flat), enforcing every cap; name -> member."""
    out: dict[str, Member] = {}
    total = 0
    try:
        opened = {"name": archive} if isinstance(archive, Path) else {"fileobj": archive}
        with tarfile.open(mode="r:*", **opened) as tar:
            for count, member in enumerate(tar, start=1):
                if count > limits.max_members:
                    raise IngestError(
                        f"The video archive has more than {limits.max_members} members "
                        f"(at most {protocol.MAX_VIDEOS} videos, their metadata and manifest.json).",
                        "file",
                    )
                _check_member(member)
                if member.name in out:
                    raise IngestError(f"Video archive member {member.name!r} appears twice.", "file")
                if member.size > limits.max_member_bytes:
                    raise IngestError(
                        f"Video archive member {member.name!r} is {member.size} bytes; the limit is "
                        f"{limits.max_member_bytes}.",
                        "file",
                        413,
                    )
                total += member.size
                if total > limits.max_expanded_bytes:
                    raise IngestError(
                        f"The video archive expands to more than {limits.max_expanded_bytes} bytes.",
                        "file",
                        413,
                    )
                src = tar.extractfile(member)
                if src is None:  # pragma: no cover - isreg() members always have data
                    raise IngestError(f"Video archive member {member.name!r} has no data.", "file")
                with src:
                    if member.size <= IN_MEMORY_MEMBER_BYTES:
                        out[member.name] = Member(member.name, member.size, data=src.read())
                    else:
                        path = workdir.path() / member.name
                        with open(path, "wb") as f:
                            shutil.copyfileobj(src, f, 1024 * 1024)
                        out[member.name] = Member(member.name, member.size, path=path)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            raise  # the server's disk is full, not the archive broken: a 507 (server.problems)
        raise IngestError(
            f"The video upload is not a readable tar.gz archive ({e}); upload the archive that "
            "gym.upload / palaestra upload writes.",
            "file",
        ) from None
    return out


def _read_json(member: Member, what: str) -> Any:
    try:
        return protocol.parse_json(member.read(), f"{what} {member.name!r}")
    except protocol.JSONInputError as e:
        raise IngestError(str(e), "file") from None


def check_ansi_recording(member: Member) -> None:
    """An asciicast-v1 recording as the 2017 TextEncoder writes it: ``stdout`` is ``[[delay, text], ...]``."""
    doc = _read_json(member, "Text video")
    events = doc.get("stdout") if isinstance(doc, dict) else None
    if not isinstance(events, list) or not all(
        isinstance(e, list) and len(e) == 2 and isinstance(e[0], int | float) and isinstance(e[1], str)
        for e in events
    ):
        raise IngestError(
            f"Text video {member.name!r} is not an asciicast recording: it needs a 'stdout' list of "
            "[delay, text] pairs.",
            "file",
        )


@functools.cache
def _probe_command(configured: str | None) -> tuple[str, str]:
    """``(kind, executable)``: ffprobe if there is one, else the ffmpeg that videos are encoded with."""
    if configured:
        return ("ffprobe" if "ffprobe" in os.path.basename(configured) else "ffmpeg"), configured
    found = shutil.which("ffprobe")
    if found:
        return "ffprobe", found
    try:
        return "ffmpeg", ffmpeg_binary()
    except DependencyNotInstalled as e:
        raise IngestError(f"No ffprobe or ffmpeg to check uploaded videos with ({e})", status=500) from None


class _VerdictCache:
    """Videos already probed, by sha256 (the same bytes always get the same verdict)."""

    def __init__(self, size: int = 4096) -> None:
        self._items: OrderedDict[str, str | None] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, digest: str) -> tuple[bool, str | None]:
        with self._lock:
            if digest in self._items:
                self._items.move_to_end(digest)
                return True, self._items[digest]
            return False, None

    def put(self, digest: str, problem: str | None) -> None:
        with self._lock:
            self._items[digest] = problem
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_verdicts = _VerdictCache()


def _sha256(member: Member) -> str:
    if member.data is not None:
        return hashlib.sha256(member.data).hexdigest()
    assert member.path is not None
    h = hashlib.sha256()
    with open(member.path, "rb") as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            h.update(chunk)
    return h.hexdigest()


def _probe(path: Path, configured: str | None) -> str | None:
    """``None`` if ``path`` is a video with a video stream, else what is wrong with it."""
    kind, exe = _probe_command(configured)
    if kind == "ffprobe":
        cmd = [
            exe,
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=codec_type,width,height",
            "-of",
            "json",
            str(path),
        ]
    else:
        cmd = [
            exe,
            "-v",
            "error",
            "-nostdin",
            "-i",
            str(path),
            "-map",
            "0:v:0",
            "-c",
            "copy",
            "-f",
            "null",
            "-",
        ]
    try:
        result = subprocess.run(cmd, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"{kind} did not finish reading it within {PROBE_TIMEOUT_S}s"
    err = result.stderr.decode("utf-8", "replace").strip().splitlines()
    if result.returncode != 0:
        return f"{kind} cannot read it ({err[-1] if err else 'exit ' + str(result.returncode)})"
    if kind == "ffprobe":
        try:
            streams = json.loads(result.stdout or b"{}").get("streams", [])
        except ValueError:
            streams = []
        if not streams or streams[0].get("codec_type") != "video":
            return "it has no video stream"
    return None


def probe_video(video: Member, workdir: WorkDir, configured: str | None = None) -> None:
    """Raise :class:`IngestError` unless ``video`` is a real video (checked with ffprobe/ffmpeg)."""
    digest = _sha256(video)
    known, problem = _verdicts.get(digest)
    if not known:
        problem = _probe(video.as_file(workdir), configured)
        _verdicts.put(digest, problem)
    if problem:
        raise IngestError(f"Video {video.name!r} is not a playable video: {problem}.", "file")


def validate_video_archive(
    archive: Path | BinaryIO, workdir: WorkDir, limits: ArchiveLimits, ffprobe: str | None = None
) -> list[UnpackedVideo]:
    """Unpack ``archive`` and check every video and metadata file."""
    members = unpack_archive(archive, workdir, limits)
    if protocol.VIDEO_ARCHIVE_MANIFEST not in members:
        raise IngestError(
            "The video archive has no manifest.json (the 2017 archive format ends with one).", "file"
        )
    try:
        manifest = protocol.VideoArchiveManifest.model_validate(
            _read_json(members[protocol.VIDEO_ARCHIVE_MANIFEST], "The archive manifest")
        )
    except ValidationError as e:
        raise IngestError(f"Invalid manifest.json in the video archive: {_first_error(e)}", "file") from None
    listed = {protocol.VIDEO_ARCHIVE_MANIFEST}
    videos: list[UnpackedVideo] = []
    for name, meta_name in manifest.videos:
        listed.update((name, meta_name))
        for n in (name, meta_name):
            if n not in members:
                raise IngestError(f"manifest.json lists {n!r}, but the archive has no such member.", "file")
        try:
            meta = protocol.VideoMetadata.model_validate(_read_json(members[meta_name], "Video metadata"))
        except ValidationError as e:
            raise IngestError(f"Invalid video metadata {meta_name!r}: {_first_error(e)}", "file") from None
        video = members[name]
        if name.endswith(".json"):
            if meta.content_type != CONTENT_TYPE_ANSI:
                raise IngestError(
                    f"{name!r} is a text recording but {meta_name!r} says {meta.content_type!r}.", "file"
                )
            check_ansi_recording(video)
        else:
            if meta.content_type != CONTENT_TYPE_MP4:
                raise IngestError(
                    f"{name!r} is a video file but {meta_name!r} says {meta.content_type!r}.", "file"
                )
            probe_video(video, workdir, ffprobe)
        videos.append(UnpackedVideo(name, meta_name, video, members[meta_name], meta))
    extra = sorted(set(members) - listed)
    if extra:
        raise IngestError(f"Video archive members {extra} are not listed in manifest.json.", "file")
    return videos


def _first_error(e: ValidationError) -> str:
    err = e.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])
