"""A session with one scoreboard: :class:`ScoreboardClient` (the ``/v1`` resources and the upload
flows), :class:`UploadResult`, and the 2017 functions :func:`upload` and :func:`upload_training_data`.

Every creating POST carries an idempotency key that follows from the content and the parameters
(:mod:`.keys`), so a retried request, or the same upload run again after a crash, gets the objects
the first attempt created: uploading the same directory with the same parameters twice returns the
same evaluation, ``already_uploaded`` (the server's rule for repeats, also past the keys' lifetime and
with other parameters: docs/upload.md, "Uploading the same run again").
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Literal, cast
from urllib.parse import quote, urljoin

import httpx

from palaestra.errors import APIError, ConfigurationError, InvalidRequestError
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client.config import (
    check_api_key,
    normalize_server,
    resolve_api_key,
    resolve_retry_budget,
    resolve_server,
)
from palaestra.scoreboard.client.keys import idempotency_key
from palaestra.scoreboard.client.preparation import (
    PreparedDirectory,
    check_open_monitors,
    prepare_benchmark_run,
    prepare_training_directory,
    temporary_archive,
)
from palaestra.scoreboard.client.progress import ProgressReader, progress_bar
from palaestra.scoreboard.client.transport import RetryPolicy, Transport
from palaestra.scoreboard.protocol import ladder as ladder_protocol

__all__ = ["ScoreboardClient", "UploadResult", "upload", "upload_training_data"]

logger = logging.getLogger("palaestra.upload")

#: How many times an upload form that the server no longer accepts is replaced by a fresh one.
MAX_FORM_RENEWALS = 2


@dataclass(frozen=True)
class UploadResult:
    """What :meth:`ScoreboardClient.upload` made: an evaluation or a benchmark run, and its web page."""

    id: str
    web_url: str
    object: Literal["evaluation", "benchmark_run"] = "evaluation"
    #: made by an earlier upload of the same episodes (and details), not by this one
    already_uploaded: bool = False


class ScoreboardClient:
    """A session with one scoreboard server: the ``/v1`` resources and the upload flows.

    Args:
        server: base URL such as ``http://127.0.0.1:8000`` (API under ``/v1``, pages under ``/``).
        api_key: the user's API key (sent as ``Authorization: Bearer``).
        retry: the :class:`~.transport.RetryPolicy` (tests pass short delays).
        timeout: seconds per request (connect, read and write each).
        transport: an httpx transport (tests inject faults with it).
        sleep: how to wait between retries; ``clock``: what measures the retry budget.
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
        clock: Callable[[], float] = time.monotonic,
        progress_stream: IO[str] | None = None,
    ) -> None:
        self.http = Transport(
            normalize_server(server),
            check_api_key(api_key),
            retry=retry,
            timeout=timeout,
            transport=transport,
            sleep=sleep,
            clock=clock,
        )
        self._progress_stream = progress_stream

    @classmethod
    def from_config(
        cls, server: str | None = None, api_key: str | None = None, **kwargs: Any
    ) -> ScoreboardClient:
        """A client for the configured server, key and retry budget (:func:`~.config.resolve_server`,
        ``resolve_api_key``, ``resolve_retry_budget``; ``retry_budget`` in seconds may be given)."""
        budget = resolve_retry_budget(kwargs.pop("retry_budget", None))
        if budget is not None and "retry" not in kwargs:
            kwargs["retry"] = RetryPolicy(budget_s=budget)
        return cls(resolve_server(server), resolve_api_key(api_key), **kwargs)

    @property
    def server(self) -> str:
        return self.http.server

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> ScoreboardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- resources -----------------------------------------------------------------------------------
    def create_file(
        self, purpose: protocol.FilePurpose, *, idempotency_key: str | None = None
    ) -> protocol.FileObject:
        content_type = protocol.VIDEO_ARCHIVE_CONTENT_TYPE if purpose == "video" else None
        body = protocol.FileCreate(purpose=purpose, content_type=content_type)
        return self.http.call(
            protocol.FileObject, "POST", _v1("files"), body=body, idempotency_key=idempotency_key
        )

    def retrieve_file(self, file_id: str) -> protocol.FileObject:
        return self.http.call(protocol.FileObject, "GET", _v1("files", file_id))

    def create_evaluation(
        self, body: protocol.EvaluationCreate, *, idempotency_key: str | None = None
    ) -> protocol.EvaluationCreated:
        return self.http.call(
            protocol.EvaluationCreated, "POST", _v1("evaluations"), body=body, idempotency_key=idempotency_key
        )

    def upload_match(self, folder: str | Path) -> ladder_protocol.MatchObject:
        """Upload a match folder (``palaestra match``'s): the server replays and checks every game,
        and stores all of them or, naming the first game at fault, none."""
        body = ladder_protocol.MatchUpload.from_folder(folder)
        return self.http.call(
            ladder_protocol.MatchObject, "POST", protocol.API_PREFIX + ladder_protocol.LADDER_MATCHES_PATH, body=body
        )

    def retrieve_evaluation(self, evaluation_id: str) -> protocol.EvaluationObject:
        return self.http.call(protocol.EvaluationObject, "GET", _v1("evaluations", evaluation_id))

    def create_benchmark_run(
        self, body: protocol.BenchmarkRunCreate, *, idempotency_key: str | None = None
    ) -> protocol.BenchmarkRunObject:
        data = body.model_dump(mode="json", exclude_none=True)
        if "tags" in data:
            data["tags"] = json.dumps(data["tags"])  # a JSON-encoded string on the wire, as in 2017
        return self.http.call(
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
        return self.http.call(protocol.BenchmarkRunObject, "POST", path, idempotency_key=idempotency_key)

    def retrieve_benchmark_run(self, run_id: str) -> protocol.BenchmarkRunObject:
        return self.http.call(protocol.BenchmarkRunObject, "GET", _v1("benchmark_runs", run_id))

    def verify_api_key(self) -> None:
        """Check the key with an authenticated read (``GET /v1/files?limit=1``).

        Raises :class:`AuthenticationError` when the server refuses the key; a server without that route
        is only warned about.
        """
        try:
            self.http.request("GET", _v1("files"), params={"limit": 1})
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
            self.http.post_form(
                describe, url, file.post_fields, {"file": ("upload", content, file.content_type)}
            )
            return
        size = content.stat().st_size
        with (
            open(content, "rb") as f,
            progress_bar(size, f"Uploading {file.purpose}", self._progress_stream) as bar,
        ):
            reader = cast(IO[bytes], ProgressReader(f, bar))
            self.http.post_form(
                describe, url, file.post_fields, {"file": (content.name, reader, file.content_type)}
            )

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
                if e.http_status is None or e.http_status == 429 or e.http_status >= 500:
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
                lambda: temporary_archive(prepared),
            )
        return batch_file, video_file

    # -- the upload flows ----------------------------------------------------------------------------
    def upload(
        self,
        training_dir: str | os.PathLike[str],
        algorithm_id: str | None = None,
        writeup: str | None = None,
        tags: dict[str, Any] | None = None,
        benchmark_id: str | None = None,
        ignore_open_monitors: bool = False,
        skip_videos: bool = False,
        send_provenance: bool = True,
    ) -> UploadResult:
        """Upload a training directory (see :func:`upload`); what was made, and its page."""
        if writeup is not None:
            try:
                writeup = protocol.check_writeup(writeup)
            except ValueError as e:  # before anything is uploaded
                raise ConfigurationError(str(e)) from None
        if benchmark_id:
            return self.upload_benchmark(
                training_dir,
                benchmark_id,
                algorithm_id,
                tags,
                ignore_open_monitors,
                skip_videos,
                send_provenance,
            )
        if tags is not None:
            logger.warning("Tags are NOT uploaded for evaluation submissions (only for benchmark runs).")
        if not ignore_open_monitors:
            check_open_monitors()
        prepared = prepare_training_directory(training_dir, skip_videos, send_provenance)
        evaluation = self.upload_prepared(prepared, algorithm_id, writeup)
        result = UploadResult(evaluation.id, self.web_url(evaluation), already_uploaded=evaluation.already_uploaded)
        if result.already_uploaded:
            logger.info("already uploaded: %s", result.web_url)
        else:
            _banner(
                f"You successfully uploaded your evaluation on {evaluation.env} to the scoreboard! "
                f"You can find it at:\n\n    {result.web_url}"
            )
        return result

    def upload_benchmark(
        self,
        training_dir: str | os.PathLike[str],
        benchmark_id: str,
        algorithm_id: str | None = None,
        tags: dict[str, Any] | None = None,
        ignore_open_monitors: bool = False,
        skip_videos: bool = False,
        send_provenance: bool = True,
    ) -> UploadResult:
        """Upload every sub-directory with manifests as one evaluation of one benchmark run, in the order
        the run is scored; commit the run."""
        if not ignore_open_monitors:
            check_open_monitors()
        prepared = prepare_benchmark_run(training_dir, benchmark_id, skip_videos, send_provenance)
        body = protocol.BenchmarkRunCreate(
            benchmark_id=benchmark_id, algorithm_id=algorithm_id, tags=tags or {}
        )
        digests = sorted([p.env_id, p.batch_digest, p.video_digest] for p in prepared)
        run_key = idempotency_key("benchmark_run", body.model_dump(mode="json", exclude_none=True), digests)
        run = self.create_benchmark_run(body, idempotency_key=run_key)
        # A replayed answer shows the run as it was created; ask for its state now.
        run = self.retrieve_benchmark_run(run.id)
        already_uploaded = run.status == "committed"
        if not already_uploaded:
            root = os.path.abspath(os.fspath(training_dir))
            for p in prepared:
                self.upload_prepared(p, benchmark_run_id=run.id, slot=os.path.relpath(p.training_dir, root))
            run = self.commit_benchmark_run(run.id, idempotency_key=idempotency_key("commit", run.id))
        result = UploadResult(run.id, self.web_url(run), "benchmark_run", already_uploaded)
        if already_uploaded:
            logger.info("already uploaded: %s", result.web_url)
        else:
            _banner(
                f"You successfully uploaded {len(prepared)} evaluations of benchmark {benchmark_id}! "
                f"You can find the run at:\n\n    {result.web_url}"
            )
        return result

    def upload_prepared(
        self,
        prepared: PreparedDirectory,
        algorithm_id: str | None = None,
        writeup: str | None = None,
        benchmark_run_id: str | None = None,
        slot: str | None = None,
    ) -> protocol.EvaluationCreated:
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
            provenance=prepared.provenance,
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


def _banner(message: str) -> None:
    line = "*" * 80
    logger.info("\n%s\n%s\n%s", line, message, line)


def _v1(kind: str, object_id: str | None = None) -> str:
    """``/v1/{kind}`` or ``/v1/{kind}/{quoted id}``."""
    path = f"{protocol.API_PREFIX}/{kind}"
    return path if object_id is None else f"{path}/{quote(object_id, safe='')}"


# -- the 2017 functions ----------------------------------------------------------------------------


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
    send_provenance: bool = True,
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
        send_provenance: send what the Monitor recorded of the run (git commit, command line, env
            arguments, seeds; docs/provenance.md). ``palaestra upload --dry-run`` shows it.

    Safe to call again after a crash or a failed network: the same directory and parameters give the
    same evaluation, never a second one. Logs the web page's URL at INFO level
    (:meth:`ScoreboardClient.upload` returns it).
    """
    with ScoreboardClient.from_config(server, api_key) as client:
        result = client.upload(
            training_dir,
            algorithm_id=algorithm_id,
            writeup=writeup,
            tags=tags,
            benchmark_id=benchmark_id,
            ignore_open_monitors=ignore_open_monitors,
            skip_videos=skip_videos,
            send_provenance=send_provenance,
        )
    return result.id


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
