"""The upload client: ``palaestra.upload`` and the ``/v1`` HTTP layer under it (spec §4).

The 2017 flow, on the wire unchanged (the schemas are :mod:`palaestra.scoreboard.protocol`):

1. ``POST /v1/files`` ``{"purpose": "episode_batch"}``, then the episode batch JSON as a multipart
   form to the answer's ``post_url`` (``post_fields`` + ``file``, no API headers, 204);
2. the same for the video archive (``purpose="video"``), a tar.gz of at most 100 videos, their
   ``.meta.json`` files and ``manifest.json``;
3. ``POST /v1/evaluations`` linking both, which returns the evaluation and its web page.

A benchmark upload makes one evaluation per directory that has manifests, in the order the run is
scored locally, under one ``POST /v1/benchmark_runs``, and commits the run at the end.

The modules, in the order an upload uses them:

- :mod:`.config`: the server and API key (argument, ``PALAESTRA_*``, the 2017 ``OPENAI_GYM_*``,
  then the file ``palaestra login`` writes);
- :mod:`.preparation`: a training directory checked before any request (broken or empty videos
  skipped with a warning, missing files named), and the video archive;
- :mod:`.keys`: idempotency keys derived from content and parameters, so that a rerun after a crash
  gets the objects the first attempt made, never duplicates;
- :mod:`.transport`: HTTP with retries (connection errors, timeouts, 429 with ``Retry-After``, 5xx;
  exponential backoff, full jitter) and the 2017 error mapping;
- :mod:`.progress`: progress bars of large uploads on a terminal;
- :mod:`.session`: :class:`ScoreboardClient` (``upload`` returns an :class:`UploadResult`: the id
  and the web page) and the 2017 functions :func:`upload` and :func:`upload_training_data`.
"""

from __future__ import annotations

from palaestra.scoreboard.client.config import (
    config_path,
    normalize_server,
    read_config,
    resolve_api_key,
    resolve_server,
    write_config,
)
from palaestra.scoreboard.client.keys import idempotency_key
from palaestra.scoreboard.client.preparation import (
    PreparedDirectory,
    prepare_training_directory,
    subsample_videos,
    write_archive,
)
from palaestra.scoreboard.client.session import ScoreboardClient, UploadResult, upload, upload_training_data
from palaestra.scoreboard.client.transport import RetryPolicy, parse_retry_after

__all__ = [
    "PreparedDirectory",
    "RetryPolicy",
    "ScoreboardClient",
    "UploadResult",
    "config_path",
    "idempotency_key",
    "normalize_server",
    "parse_retry_after",
    "prepare_training_directory",
    "read_config",
    "resolve_api_key",
    "resolve_server",
    "subsample_videos",
    "upload",
    "upload_training_data",
    "write_archive",
    "write_config",
]
