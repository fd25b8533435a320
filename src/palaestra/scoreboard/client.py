"""The upload client: ``palaestra.upload`` and the ``/v1`` HTTP layer under it (spec §4).

The 2017 flow, on the wire unchanged (the schemas are :mod:`palaestra.scoreboard.protocol`):

1. ``POST /v1/files`` ``{"purpose": "episode_batch"}``, then the episode batch JSON as a multipart
   form to the answer's ``post_url`` (``post_fields`` + ``file``, no API headers, 204);
2. the same for the video archive (``purpose="video"``), a tar.gz of at most 100 videos, their
   ``.meta.json`` files and ``manifest.json``;
3. ``POST /v1/evaluations`` linking both, which returns the evaluation and its web page.

A benchmark upload walks the sub-directories, makes one evaluation per directory that has manifests
under one ``POST /v1/benchmark_runs``, and commits the run at the end.

What palaestra adds to 2017:

* **Retries**: connection errors, timeouts, 429 (honouring ``Retry-After``) and 5xx are retried with
  exponential backoff and full jitter (:class:`RetryPolicy`); other 4xx are not.
* **No duplicates**: every creating POST carries an ``Idempotency-Key`` derived from the content and
  the parameters (:func:`idempotency_key`), so a retried request, or the same ``palaestra upload``
  run again after a crash, gets the objects the first attempt created. Uploading the same directory
  with the same parameters twice therefore returns the same evaluation.
* **Streaming**: the video archive is written to a temporary file and streamed from disk, with a
  progress bar when stderr is a terminal.
* **Broken videos**: a video that the recorder marked ``broken`` or ``empty`` in its ``.meta.json``
  (or an empty video file) is skipped with a warning; a video or ``.meta.json`` that a manifest
  lists but that does not exist is an error naming the file (restore it, or upload with
  ``skip_videos=True`` / ``--skip-videos``).
* **Configuration**: argument, then ``PALAESTRA_API_KEY`` / ``PALAESTRA_SERVER``, then the 2017
  ``OPENAI_GYM_API_KEY`` / ``OPENAI_GYM_API_BASE``, then the file ``palaestra login`` writes.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import hashlib
import io
import json
import logging
import os
import random
import stat
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, TypeVar, cast
from urllib.parse import quote, urljoin

import httpx
import numpy as np
import platformdirs
from pydantic import BaseModel, ValidationError

from palaestra._version import __version__
from palaestra.benchmarks import benchmark_spec
from palaestra.benchmarks.runs import training_directories
from palaestra.errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    ConfigurationError,
    Error,
    InvalidRequestError,
    MonitorError,
    RateLimitError,
    ResultsError,
    RetriesExceededError,
    UnregisteredBenchmark,
)
from palaestra.monitoring import files as monitor_files
from palaestra.monitoring.monitor import open_monitors
from palaestra.monitoring.results import load_env_info_from_manifests, load_results
from palaestra.scoreboard import protocol

logger = logging.getLogger("palaestra.upload")

# --------------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------------

ENV_SERVER = "PALAESTRA_SERVER"
ENV_API_KEY = "PALAESTRA_API_KEY"
#: The 2017 names, honoured after palaestra's (``OPENAI_GYM_API_BASE`` is the same base URL).
LEGACY_ENV_SERVER = "OPENAI_GYM_API_BASE"
LEGACY_ENV_API_KEY = "OPENAI_GYM_API_KEY"
CONFIG_FILE_NAME = "config.json"
CONFIG_KEYS = ("server", "api_key")

_SERVER_HINT = (
    "Pass it (palaestra.upload(..., server='http://HOST:PORT') or 'palaestra upload --server URL'), "
    f"or 'export {ENV_SERVER}=http://HOST:PORT', or save it with 'palaestra login --server URL'."
)
_KEY_HINT = (
    f"Pass it (palaestra.upload(..., api_key=...)), or 'export {ENV_API_KEY}=...', or save it with "
    "'palaestra login'. An administrator of the server creates keys with 'palaestra users create NAME'."
)


def config_path() -> Path:
    """The file ``palaestra login`` writes: ``config.json`` in the user's config directory."""
    return Path(platformdirs.user_config_dir("palaestra", appauthor=False)) / CONFIG_FILE_NAME


def read_config(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The saved ``server`` and ``api_key`` (an absent file is an empty configuration)."""
    p = Path(path) if path is not None else config_path()
    try:
        text = p.read_text(encoding="utf-8")
        mode = p.stat().st_mode
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ConfigurationError(f"Cannot read the palaestra config file {p}: {e.strerror or e}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        logger.warning("The palaestra config file %s is readable by other users; run 'chmod 600 %s'", p, p)
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ConfigurationError(
            f"The palaestra config file {p} is not valid JSON ({e}); run 'palaestra login' to rewrite it"
        ) from None
    if not isinstance(doc, dict):
        raise ConfigurationError(
            f"The palaestra config file {p} must hold a JSON object; run 'palaestra login'"
        )
    return {k: v for k, v in doc.items() if k in CONFIG_KEYS and isinstance(v, str) and v}


def write_config(
    server: str | None = None, api_key: str | None = None, path: str | os.PathLike[str] | None = None
) -> Path:
    """Save ``server`` and/or ``api_key`` (keeping the other one), readable by the user only (0600)."""
    p = Path(path) if path is not None else config_path()
    try:
        doc = read_config(p)
    except ConfigurationError:
        doc = {}
    if server is not None:
        doc["server"] = normalize_server(server)
    if api_key is not None:
        doc["api_key"] = _check_api_key(api_key)
    p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = p.with_name(p.name + "~")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # also when the temporary file was left over with a wider mode
        os.write(fd, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, p)
    return p


def normalize_server(server: str) -> str:
    """``server`` as a base URL without a trailing slash (:class:`ConfigurationError` if it is not one)."""
    url = server.strip().rstrip("/")
    if not url.startswith(("http://", "https://")) or len(url) <= len("https://"):
        raise ConfigurationError(
            f"The scoreboard server must be an http:// or https:// base URL such as http://127.0.0.1:8000, "
            f"not {server!r}"
        )
    return url


def _check_api_key(api_key: str) -> str:
    key = api_key.strip()
    if not key or any(c.isspace() for c in key):
        raise ConfigurationError("An API key is one word without spaces; check what you pasted")
    return key


def _lookup(
    explicit: str | None, env_names: Sequence[str], config_key: str, config_file: Path | None
) -> str | None:
    if explicit:
        return explicit
    for name in env_names:
        value = os.environ.get(name)
        if value:
            return value
    return read_config(config_file).get(config_key)


def resolve_server(server: str | None = None, config_file: str | os.PathLike[str] | None = None) -> str:
    """The scoreboard base URL: ``server``, $PALAESTRA_SERVER, $OPENAI_GYM_API_BASE, the login file."""
    value = _lookup(server, (ENV_SERVER, LEGACY_ENV_SERVER), "server", _path(config_file))
    if not value:
        raise ConfigurationError(f"No scoreboard server is configured. {_SERVER_HINT}")
    return normalize_server(value)


def resolve_api_key(api_key: str | None = None, config_file: str | os.PathLike[str] | None = None) -> str:
    """The API key: ``api_key``, ``$PALAESTRA_API_KEY``, ``$OPENAI_GYM_API_KEY``, the login file."""
    value = _lookup(api_key, (ENV_API_KEY, LEGACY_ENV_API_KEY), "api_key", _path(config_file))
    if not value:
        raise ConfigurationError(f"You must provide a palaestra scoreboard API key. {_KEY_HINT}")
    return _check_api_key(value)


def _path(p: str | os.PathLike[str] | None) -> Path | None:
    return Path(p) if p is not None else None


# --------------------------------------------------------------------------------------------------
# Retries
# --------------------------------------------------------------------------------------------------

#: Exceptions of httpx that mean "no (complete) answer": retried.
RETRYABLE_EXCEPTIONS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


def is_retryable_status(status: int) -> bool:
    """429 and every 5xx are retried; other statuses are answers."""
    return status == 429 or status >= 500


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: before retry ``n`` (0-based) sleep a uniform random time in
    ``[0, min(max_delay, base_delay * 2**n)]``, or the server's ``Retry-After`` (capped) when it sent one."""

    max_retries: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, retry: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        ceiling = min(self.max_delay, self.base_delay * (2**retry))
        return (rng or random).uniform(0.0, ceiling)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date); ``None`` if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def error_from_response(response: httpx.Response, describe: str) -> APIError:
    """The palaestra error for a non-2xx answer (spec §4.3 mapping; ``request-id`` shown in ``str()``)."""
    status = response.status_code
    text = response.text
    json_body: Any = None
    detail: str | None = None
    param: str | None = None
    with contextlib.suppress(ValueError):
        json_body = response.json()
    if isinstance(json_body, dict):
        try:
            body = protocol.ErrorBody.model_validate(json_body)
        except ValidationError:
            pass
        else:
            detail = body.detail
            param = None if body.type == protocol.NO_PARAM else body.type
    if detail is None:
        detail = f"HTTP {status} {response.reason_phrase}: {text[:500]}".rstrip(": ")
    message = f"{detail} (while requesting {describe})"
    dev_info = json_body.get("dev_info") if isinstance(json_body, dict) else None
    if isinstance(dev_info, dict) and dev_info.get("traceback"):
        message += f"\n\n<dev_info>\n{dev_info['traceback']}\n</dev_info>"
    kwargs: dict[str, Any] = {
        "http_body": text,
        "http_status": status,
        "json_body": json_body,
        "headers": dict(response.headers),
    }
    if status in (400, 404, 409, 410, 413, 422):
        return InvalidRequestError(message, param=param, **kwargs)
    if status == 401:
        return AuthenticationError(
            f"{message}. (HINT: check the API key in ${ENV_API_KEY} or run 'palaestra login' again.)",
            **kwargs,
        )
    if status == 429:
        return RateLimitError(message, **kwargs)
    return APIError(message, **kwargs)


# --------------------------------------------------------------------------------------------------
# Idempotency keys
# --------------------------------------------------------------------------------------------------

IDEMPOTENCY_NAMESPACE = "palaestra-upload/1"


def idempotency_key(kind: str, *parts: Any) -> str:
    """A key that depends only on ``kind`` and ``parts`` (JSON-encoded), so a rerun reuses it."""
    h = hashlib.sha256(IDEMPOTENCY_NAMESPACE.encode())
    for part in (kind, *parts):
        data = json.dumps(part, sort_keys=True, separators=(",", ":"), default=str).encode()
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return f"pal-{kind}-{h.hexdigest()}"


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------------
# Preparing a training directory
# --------------------------------------------------------------------------------------------------


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
                [os.path.basename(v), _sha256_file(v), os.path.basename(m), _sha256_file(m)]
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


def episode_batch_document(results: Any, training_dir: str) -> dict[str, Any]:
    """The episode-batch document (exactly the 2017 keys), validated with the protocol's schema."""
    doc = {
        "data_sources": results["data_sources"],
        "episode_lengths": results["episode_lengths"],
        "episode_rewards": results["episode_rewards"],
        "episode_types": results["episode_types"],
        "initial_reset_timestamps": results["initial_reset_timestamps"],
        "timestamps": results["timestamps"],
    }
    try:
        protocol.parse_episode_batch(doc)
    except protocol.EpisodeBatchError as e:
        raise ResultsError(f"The episodes recorded in {training_dir} cannot be uploaded: {e}") from None
    return doc


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
            f"The video metadata file {path} is unreadable or invalid ({_short(e)}). Fix or remove the "
            "video, or upload without videos (skip_videos=True / --skip-videos)."
        ) from None


def _short(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0] if len(text) == 1 else "; ".join(line.strip() for line in text[:3])


def subsample_videos(
    videos: list[tuple[str, str]], limit: int = protocol.MAX_VIDEOS
) -> list[tuple[str, str]]:
    """At most ``limit`` videos, evenly spaced over the run (the 2017 ``np.linspace`` rule)."""
    if len(videos) <= limit:
        return videos
    indices = np.linspace(0, len(videos) - 1, limit).astype("int")
    return [videos[i] for i in indices]


def prepare_training_directory(
    training_dir: str | os.PathLike[str], skip_videos: bool = False
) -> PreparedDirectory:
    """Load and check one training directory; raises :class:`ResultsError` naming what is wrong."""
    directory = os.path.abspath(os.fspath(training_dir))
    results = load_results(directory)  # no directory, no manifests, commingled env_infos: ResultsError
    env_info = results["env_info"]
    episodes = len(results["episode_lengths"])
    batch = None
    if episodes:
        doc = episode_batch_document(results, directory)
        batch = json.dumps(doc, separators=(",", ":")).encode("utf-8")
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
    if batch is None and not videos:
        raise ResultsError(
            f"[{env_info['env_id']}] You didn't have any recorded training data in {directory}. Record with "
            "palaestra.Monitor(env, directory) and run some episodes to completion before uploading."
        )
    return PreparedDirectory(directory, env_info, batch, videos, episodes)


# --------------------------------------------------------------------------------------------------
# The video archive
# --------------------------------------------------------------------------------------------------


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
        raise ResultsError(f"{prefix}Invalid video archive: {_short(e)}") from None
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
def _temporary_archive(prepared: PreparedDirectory) -> Iterator[Path]:
    fd, name = tempfile.mkstemp(prefix="palaestra-videos-", suffix=".tar.gz")
    try:
        with os.fdopen(fd, "wb") as f:
            write_archive(prepared.videos, f, env_id=prepared.env_id)
        yield Path(name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


# --------------------------------------------------------------------------------------------------
# Progress
# --------------------------------------------------------------------------------------------------

#: Smaller uploads get no progress bar.
PROGRESS_MIN_BYTES = 1 << 20


class _ProgressReader:
    """A binary file whose reads advance a tqdm bar; a seek to 0 (a retry) starts the bar over."""

    def __init__(self, f: IO[bytes], bar: Any) -> None:
        self._f = f
        self._bar = bar
        self.name = f.name

    def read(self, size: int = -1) -> bytes:
        chunk = self._f.read(size)
        self._bar.update(len(chunk))
        return chunk

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        pos = self._f.seek(offset, whence)
        if pos == 0:
            self._bar.reset()
        return pos

    def tell(self) -> int:
        return self._f.tell()

    def fileno(self) -> int:
        return self._f.fileno()


def progress_bar(total: int, desc: str, stream: IO[str] | None = None) -> Any:
    """A tqdm bar on ``stream`` (stderr), disabled unless it is a terminal and ``total`` is large."""
    from tqdm import tqdm

    out = stream if stream is not None else sys.stderr
    enabled = total >= PROGRESS_MIN_BYTES and bool(getattr(out, "isatty", lambda: False)())
    return tqdm(
        total=total,
        desc=desc,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=out,
        disable=not enabled,
        leave=False,
    )


# --------------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------------

ModelT = TypeVar("ModelT", bound=BaseModel)
#: How many times an upload form that the server no longer accepts is replaced by a fresh one.
MAX_FORM_RENEWALS = 2
USER_AGENT = f"palaestra/{__version__} httpx/{httpx.__version__}"


class ScoreboardClient:
    """A session with one scoreboard server: the ``/v1`` resources and the upload flows.

    Args:
        server: base URL such as ``http://127.0.0.1:8000`` (API under ``/v1``, pages under ``/``).
        api_key: the user's API key (sent as ``Authorization: Bearer``).
        retry: the :class:`RetryPolicy` (tests pass short delays).
        timeout: seconds per request (connect, read and write each).
        transport: an httpx transport (tests inject faults with it).
        sleep: how to wait between retries.
        progress_stream: where progress bars go (default: ``sys.stderr`` at the time of the upload).
    """

    def __init__(
        self,
        server: str,
        api_key: str,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        progress_stream: IO[str] | None = None,
    ) -> None:
        self.server = normalize_server(server)
        self.api_key = _check_api_key(api_key)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._progress_stream = progress_stream
        #: the web page of the last evaluation or benchmark run :meth:`upload` made
        self.last_web_url: str | None = None
        self._http = httpx.Client(
            timeout=timeout, transport=transport, headers={"User-Agent": USER_AGENT}, follow_redirects=False
        )

    @classmethod
    def from_config(
        cls, server: str | None = None, api_key: str | None = None, **kwargs: Any
    ) -> ScoreboardClient:
        """A client for the configured server and key (:func:`resolve_server`, :func:`resolve_api_key`)."""
        return cls(resolve_server(server), resolve_api_key(api_key), **kwargs)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ScoreboardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the HTTP layer ------------------------------------------------------------------------------
    def send_with_retries(self, describe: str, send: Callable[[], httpx.Response]) -> httpx.Response:
        """Call ``send`` until it gets a 2xx answer; retry network errors, 429 and 5xx per :attr:`retry`."""
        errors: list[APIError] = []
        for attempt in range(self.retry.max_retries + 1):
            retry_after = None
            try:
                response = send()
            except RETRYABLE_EXCEPTIONS as e:
                error: APIError = APIConnectionError(
                    f"Could not reach the scoreboard while requesting {describe} "
                    f"(network error: {type(e).__name__}: {e or 'no answer'})"
                )
            else:
                if response.is_success:
                    return response
                error = error_from_response(response, describe)
                if not is_retryable_status(response.status_code):
                    raise error
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            errors.append(error)
            if attempt == self.retry.max_retries:
                break
            delay = self.retry.delay(attempt, retry_after)
            logger.warning(
                "%s; retrying in %.1f s (retry %d of %d)", error, delay, attempt + 1, self.retry.max_retries
            )
            self._sleep(delay)
        failure = RetriesExceededError(
            f"Gave up on {describe} after {len(errors)} attempts. The last error was: {errors[-1]}"
        )
        failure.errors = errors  # type: ignore[attr-defined]
        raise failure from errors[-1]

    def request(
        self,
        method: str,
        path: str,
        body: BaseModel | dict[str, Any] | None = None,
        *,
        idempotency_key: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        """One API call: JSON in (nulls stripped), JSON out, with retries and the 2017 error mapping."""
        url = self.server + path
        headers = {protocol.AUTHORIZATION_HEADER: f"Bearer {self.api_key}", "Accept": "application/json"}
        content = None
        if body is not None:
            data = body.model_dump(mode="json", exclude_none=True) if isinstance(body, BaseModel) else body
            content = json.dumps(_strip_nulls(data)).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if idempotency_key:
            headers[protocol.IDEMPOTENCY_HEADER] = idempotency_key
        describe = f"{method} {path}"
        response = self.send_with_retries(
            describe, lambda: self._http.request(method, url, content=content, headers=headers, params=params)
        )
        return _decode(response, describe)

    def _object(self, model: type[ModelT], method: str, path: str, **kwargs: Any) -> ModelT:
        data = self.request(method, path, **kwargs)
        try:
            return model.model_validate(data)
        except ValidationError as e:
            raise APIError(
                f"The server's answer to {method} {path} is not a valid {model.__name__}: {_short(e)}"
            ) from None

    # -- resources -----------------------------------------------------------------------------------
    def create_file(
        self, purpose: protocol.FilePurpose, *, idempotency_key: str | None = None
    ) -> protocol.FileObject:
        content_type = protocol.VIDEO_ARCHIVE_CONTENT_TYPE if purpose == "video" else None
        body = protocol.FileCreate(purpose=purpose, content_type=content_type)
        return self._object(
            protocol.FileObject, "POST", _v1("files"), body=body, idempotency_key=idempotency_key
        )

    def retrieve_file(self, file_id: str) -> protocol.FileObject:
        return self._object(protocol.FileObject, "GET", _v1("files", file_id))

    def create_evaluation(
        self, body: protocol.EvaluationCreate, *, idempotency_key: str | None = None
    ) -> protocol.EvaluationObject:
        return self._object(
            protocol.EvaluationObject, "POST", _v1("evaluations"), body=body, idempotency_key=idempotency_key
        )

    def retrieve_evaluation(self, evaluation_id: str) -> protocol.EvaluationObject:
        return self._object(protocol.EvaluationObject, "GET", _v1("evaluations", evaluation_id))

    def create_benchmark_run(
        self, body: protocol.BenchmarkRunCreate, *, idempotency_key: str | None = None
    ) -> protocol.BenchmarkRunObject:
        data = body.model_dump(mode="json", exclude_none=True)
        if "tags" in data:
            data["tags"] = json.dumps(data["tags"])  # a JSON-encoded string on the wire, as in 2017
        return self._object(
            protocol.BenchmarkRunObject,
            "POST",
            _v1("benchmark_runs"),
            body=data,
            idempotency_key=idempotency_key,
        )

    def commit_benchmark_run(
        self, run_id: str, *, idempotency_key: str | None = None
    ) -> protocol.BenchmarkRunObject:
        path = _v1("benchmark_runs", run_id) + "/commit"
        return self._object(protocol.BenchmarkRunObject, "POST", path, idempotency_key=idempotency_key)

    def retrieve_benchmark_run(self, run_id: str) -> protocol.BenchmarkRunObject:
        return self._object(protocol.BenchmarkRunObject, "GET", _v1("benchmark_runs", run_id))

    def verify_api_key(self) -> None:
        """Check the key with an authenticated read (``GET /v1/files?limit=1``).

        Raises :class:`AuthenticationError` when the server refuses the key; a server without that route
        is only warned about.
        """
        try:
            self.request("GET", _v1("files"), params={"limit": 1})
        except InvalidRequestError as e:
            logger.warning("Could not verify the API key with %s (%s); saving it anyway", self.server, e)

    def web_url(self, obj: protocol.EvaluationObject | protocol.BenchmarkRunObject) -> str:
        """The object's page: the server's ``web_url``, else ``{server}/evaluations/{id}`` (or runs')."""
        if obj.web_url:
            return urljoin(self.server + "/", obj.web_url)
        if isinstance(obj, protocol.BenchmarkRunObject):
            return self.server + protocol.benchmark_run_web_path(obj.id)
        return self.server + protocol.evaluation_web_path(obj.id)

    # -- file uploads --------------------------------------------------------------------------------
    def put_file(self, file: protocol.FileObject, content: bytes | Path) -> None:
        """POST ``content`` to the file's ``post_url`` as ``post_fields`` + ``file`` (no API headers)."""
        if not file.post_url:
            raise APIError(f"The server gave no post_url to upload file {file.id} to")
        url = urljoin(self.server + "/", file.post_url)
        describe = f"POST {file.post_url} (uploading the {file.purpose} of file {file.id})"
        if isinstance(content, bytes):
            upload = ("upload", content, file.content_type)
            self.send_with_retries(
                describe, lambda: self._http.post(url, data=file.post_fields, files={"file": upload})
            )
            return
        size = content.stat().st_size
        with (
            open(content, "rb") as f,
            progress_bar(size, f"Uploading {file.purpose}", self._progress_stream) as bar,
        ):
            reader = _ProgressReader(f, bar)
            parts = {"file": (content.name, cast(IO[bytes], reader), file.content_type)}
            self.send_with_retries(describe, lambda: self._http.post(url, data=file.post_fields, files=parts))

    def upload_content(
        self,
        purpose: protocol.FilePurpose,
        key: str,
        content: Callable[[], contextlib.AbstractContextManager[bytes | Path]],
    ) -> protocol.FileObject:
        """Create a file (idempotently) and upload ``content`` to it, unless an earlier run already did.

        ``content`` is only opened (the archive only written) when the bytes still have to go up. If the
        server no longer accepts the upload form (it expired, or a crashed run used it up), the file is
        checked and, if it is still pending, replaced by a new one whose key follows from the old id.
        """
        file = self.create_file(purpose, idempotency_key=key)
        for renewal in range(MAX_FORM_RENEWALS + 1):
            if file.status == "uploaded":
                logger.debug("File %s (%s) was uploaded before; not sending it again", file.id, purpose)
                return file
            try:
                with content() as data:
                    self.put_file(file, data)
                return file.model_copy(update={"status": "uploaded"})
            except APIError as e:
                if e.http_status is None or is_retryable_status(e.http_status):
                    raise
                current = self.retrieve_file(file.id)
                if current.status == "uploaded":
                    return current
                if renewal == MAX_FORM_RENEWALS or not _form_is_spent(e, current):
                    raise
                logger.info(
                    "The upload form of file %s is no longer valid (%s); asking for a new one", file.id, e
                )
                file = self.create_file(purpose, idempotency_key=f"{key}.renew.{file.id}")
        raise AssertionError("unreachable")

    # -- the upload flows ----------------------------------------------------------------------------
    def upload_prepared(
        self,
        prepared: PreparedDirectory,
        algorithm_id: str | None = None,
        writeup: str | None = None,
        benchmark_run_id: str | None = None,
        slot: str | None = None,
    ) -> protocol.EvaluationObject:
        """Upload one checked training directory and create its evaluation.

        ``slot`` tells apart directories of one benchmark run (their path relative to the run's root),
        so that two directories with equal content still become two evaluations.
        """
        context = {
            "algorithm": algorithm_id,
            "writeup": writeup,
            "benchmark_run": benchmark_run_id,
            "slot": slot,
        }
        batch_file, video_file = self.upload_training_files(prepared, context)
        body = protocol.EvaluationCreate(
            training_episode_batch=batch_file.id if batch_file else None,
            training_video=video_file.id if video_file else None,
            env=prepared.env_id,
            algorithm=protocol.AlgorithmRef(id=algorithm_id),
            benchmark_run_id=benchmark_run_id,
            writeup=writeup,
            gym_version=prepared.env_info.get("gym_version"),
        )
        key = idempotency_key("evaluation", body.model_dump(mode="json", exclude_none=True))
        logger.info("[%s] Creating evaluation object from %s", prepared.env_id, prepared.training_dir)
        evaluation = self.create_evaluation(body, idempotency_key=key)
        if not evaluation.env_listed:
            logger.warning(
                "[%s] This env id is not listed on the scoreboard; the evaluation is stored but not ranked.",
                prepared.env_id,
            )
        return evaluation

    def upload_training_files(
        self, prepared: PreparedDirectory, context: Any = None
    ) -> tuple[protocol.FileObject | None, protocol.FileObject | None]:
        """Upload the episode batch and the video archive of ``prepared`` (either may be absent).

        The files' idempotency keys follow from their content and ``context`` (the parameters of the
        evaluation they are for): the server lets a file back one evaluation only, so the same content
        uploaded for another evaluation (another algorithm, say) must become new files.
        """
        batch_file = video_file = None
        if prepared.batch is not None:
            batch = prepared.batch
            logger.info("[%s] Uploading data from manifest %s", prepared.env_id, prepared.training_dir)
            batch_file = self.upload_content(
                "episode_batch",
                idempotency_key("file", "episode_batch", prepared.batch_digest, context),
                lambda: contextlib.nullcontext(batch),
            )
        if prepared.videos:
            logger.info(
                "[%s] Uploading videos of %d training episodes", prepared.env_id, len(prepared.videos)
            )
            video_file = self.upload_content(
                "video",
                idempotency_key("file", "video", prepared.video_digest, context),
                lambda: _temporary_archive(prepared),
            )
        return batch_file, video_file

    def upload(
        self,
        training_dir: str | os.PathLike[str],
        algorithm_id: str | None = None,
        writeup: str | None = None,
        tags: dict[str, Any] | None = None,
        benchmark_id: str | None = None,
        ignore_open_monitors: bool = False,
        skip_videos: bool = False,
    ) -> str:
        """See :func:`upload`."""
        if benchmark_id:
            return self.upload_benchmark(
                training_dir, benchmark_id, algorithm_id, tags, ignore_open_monitors, skip_videos
            )
        if tags is not None:
            logger.warning("Tags are NOT uploaded for evaluation submissions (only for benchmark runs).")
        if not ignore_open_monitors:
            check_open_monitors()
        prepared = prepare_training_directory(training_dir, skip_videos=skip_videos)
        evaluation = self.upload_prepared(prepared, algorithm_id, writeup)
        self.last_web_url = self.web_url(evaluation)
        _banner(
            f"You successfully uploaded your evaluation on {evaluation.env} to the scoreboard! "
            f"You can find it at:\n\n    {self.last_web_url}"
        )
        return evaluation.id

    def upload_benchmark(
        self,
        training_dir: str | os.PathLike[str],
        benchmark_id: str,
        algorithm_id: str | None = None,
        tags: dict[str, Any] | None = None,
        ignore_open_monitors: bool = False,
        skip_videos: bool = False,
    ) -> str:
        """Upload every sub-directory with manifests as one evaluation of one benchmark run; commit it."""
        if not ignore_open_monitors:
            check_open_monitors()
        directories = training_directories(os.path.abspath(os.fspath(training_dir)))
        if not directories:
            raise ResultsError(f"Could not find any evaluations in {os.path.abspath(training_dir)}")
        env_ids = [
            load_env_info_from_manifests(monitor_files.detect_training_manifests(d), d)["env_id"]
            for d in directories
        ]
        check_benchmark(benchmark_id, env_ids, os.fspath(training_dir))
        prepared = [prepare_training_directory(d, skip_videos=skip_videos) for d in directories]
        body = protocol.BenchmarkRunCreate(
            benchmark_id=benchmark_id, algorithm_id=algorithm_id, tags=tags or {}
        )
        digests = sorted([p.env_id, p.batch_digest, p.video_digest] for p in prepared)
        run_key = idempotency_key("benchmark_run", body.model_dump(mode="json", exclude_none=True), digests)
        run = self.create_benchmark_run(body, idempotency_key=run_key)
        # A replayed answer shows the run as it was created; ask for its state now.
        run = self.retrieve_benchmark_run(run.id)
        if run.status == "committed":
            logger.info("Benchmark run %s was uploaded and committed before", run.id)
        else:
            root = os.path.abspath(os.fspath(training_dir))
            for p in prepared:
                self.upload_prepared(p, benchmark_run_id=run.id, slot=os.path.relpath(p.training_dir, root))
            run = self.commit_benchmark_run(run.id, idempotency_key=idempotency_key("commit", run.id))
        self.last_web_url = self.web_url(run)
        _banner(
            f"You successfully uploaded {len(prepared)} evaluations of benchmark {benchmark_id}! "
            f"You can find the run at:\n\n    {self.last_web_url}"
        )
        return run.id


def _form_is_spent(error: APIError, current: protocol.FileObject) -> bool:
    """Whether an upload form was refused because it was used up (409/410) or has expired."""
    if error.http_status in (409, 410):
        return True
    expires = current.expires_at
    if expires is None:
        return False
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=timezone.utc)
    return expires <= datetime.now(timezone.utc)


def check_benchmark(benchmark_id: str, env_ids: list[str], training_dir: str) -> None:
    """The benchmark must be registered; a different set of env ids than its tasks x trials is only a
    warning, as in 2017."""
    try:
        spec = benchmark_spec(benchmark_id)
    except Error as e:
        raise UnregisteredBenchmark(
            f"Invalid benchmark id: {benchmark_id}. Are you using a benchmark registered in "
            f"palaestra.benchmarks? ({e})"
        ) from None
    expected = sorted(t.env_id for t in spec.tasks for _ in range(t.trials))
    if sorted(env_ids) != expected:
        logger.warning(
            "Benchmark %s expects env ids %s (one directory per trial) but %s has %s. Uploading anyway; the "
            "run may not be scored in full.",
            benchmark_id,
            expected,
            training_dir,
            sorted(env_ids),
        )


def _banner(message: str) -> None:
    line = "*" * 80
    logger.info("\n%s\n%s\n%s", line, message, line)


def _v1(kind: str, object_id: str | None = None) -> str:
    """``/v1/{kind}`` or ``/v1/{kind}/{quoted id}``."""
    path = f"{protocol.API_PREFIX}/{kind}"
    return path if object_id is None else f"{path}/{quote(object_id, safe='')}"


def _strip_nulls(value: Any) -> Any:
    """The 2017 ``_strip_nulls``: drop ``None`` values recursively (an empty dict survives)."""
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


def _decode(response: httpx.Response, describe: str) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    if response.headers.get("Content-Type", "").startswith("text/plain"):
        return response.text
    try:
        return response.json()
    except ValueError:
        raise APIError(
            f"Invalid response body from API: {response.text[:300]!r} (HTTP response code was "
            f"{response.status_code}; while requesting {describe})",
            http_body=response.text,
            http_status=response.status_code,
            headers=dict(response.headers),
        ) from None


# --------------------------------------------------------------------------------------------------
# The 2017 functions
# --------------------------------------------------------------------------------------------------


def upload(
    training_dir: str | os.PathLike[str],
    algorithm_id: str | None = None,
    writeup: str | None = None,
    tags: dict[str, Any] | None = None,
    benchmark_id: str | None = None,
    api_key: str | None = None,
    ignore_open_monitors: bool = False,
    skip_videos: bool = False,
    server: str | None = None,
) -> str:
    """Upload a training directory to the scoreboard; returns the evaluation id (or benchmark-run id).

    Args:
        training_dir: the directory a :class:`palaestra.Monitor` recorded into (for a benchmark, the
            directory whose sub-directories hold one run each).
        algorithm_id: the algorithm's id or name; an unknown one creates an algorithm of that name.
        writeup: a URL describing the run (the 2017 Gist).
        tags: a JSON-able dict, uploaded with benchmark runs only.
        benchmark_id: upload every sub-directory with manifests as one evaluation of a benchmark run.
        api_key: the API key (default: ``$PALAESTRA_API_KEY``, ``$OPENAI_GYM_API_KEY``, ``palaestra login``).
        ignore_open_monitors: skip the check that no Monitor of this process is still open.
        skip_videos: upload the episode statistics only.
        server: base URL (default: ``$PALAESTRA_SERVER``, ``$OPENAI_GYM_API_BASE``, ``palaestra login``).

    Safe to call again after a crash or a failed network: the same directory and parameters give the
    same evaluation, never a second one. Logs the web page's URL at INFO level.
    """
    with ScoreboardClient.from_config(server, api_key) as client:
        return client.upload(
            training_dir,
            algorithm_id=algorithm_id,
            writeup=writeup,
            tags=tags,
            benchmark_id=benchmark_id,
            ignore_open_monitors=ignore_open_monitors,
            skip_videos=skip_videos,
        )


def upload_training_data(
    training_dir: str | os.PathLike[str],
    api_key: str | None = None,
    skip_videos: bool = False,
    server: str | None = None,
) -> tuple[dict[str, Any], protocol.FileObject | None, protocol.FileObject | None]:
    """Upload a directory's episode batch and video archive without creating an evaluation (2017 API).

    Returns ``(env_info, episode_batch_file, video_file)``; either file is ``None`` when there was
    nothing of that kind to upload.
    """
    prepared = prepare_training_directory(training_dir, skip_videos=skip_videos)
    with ScoreboardClient.from_config(server, api_key) as client:
        batch_file, video_file = client.upload_training_files(prepared)
    return prepared.env_info, batch_file, video_file


__all__ = [
    "RetryPolicy",
    "ScoreboardClient",
    "config_path",
    "idempotency_key",
    "prepare_training_directory",
    "read_config",
    "resolve_api_key",
    "resolve_server",
    "upload",
    "upload_training_data",
    "write_archive",
    "write_config",
]
