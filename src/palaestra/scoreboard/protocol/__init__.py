"""The scoreboard wire protocol: the ``/v1`` schemas that client and server both use.

This is the 2017 gym client's protocol (spec §4.3-4.4, §10), written down once as pydantic models.
palaestra's upload client builds its requests and reads its responses with these models, and the
server validates requests and answers with the same ones, so the two cannot drift apart.

Conventions of the 2017 protocol kept here:

- every object carries ``object`` (its kind) and ``id`` (``eval_...``, ``file_...``, ``brun_...``,
  ``alg_...``); request ids are ``req_...`` and come back in a ``request-id`` header;
- an error is a JSON body ``{"detail": <message>, "type": <param or "about:blank">}``;
- files are uploaded in two steps: ``POST /v1/files`` answers a signed ``post_url`` plus
  ``post_fields``, and the bytes go there as a multipart form (``post_fields`` + ``file``), which
  answers 204;
- ``POST /v1/benchmark_runs`` takes ``tags`` as a JSON-encoded *string*;
- the evaluation's ``algorithm`` is ``{"id": ...}`` (possibly ``{}``); an id that does not exist
  creates an algorithm with that name.

The episode-batch document (what is uploaded for ``purpose="episode_batch"``) is validated by
:func:`parse_episode_batch` on both sides: equal-length arrays, finite numbers, types ``t``/``e``,
integers that are JSON integers (never a string or a boolean) within their bounds, and size caps.

The package is the contract's one home, in four rooms (import from the package):

- :mod:`.common`: constants (limits, content types, headers, id prefixes), field types, the
  request/response base classes and the error body, the web paths of objects;
- :mod:`.objects`: the ``/v1`` objects (files, algorithms, evaluations, benchmark runs, envs, groups,
  health, the log) and list pages;
- :mod:`.documents`: the documents uploaded as files (the episode batch, the video archive's
  manifest and each video's metadata), with their validators;
- :mod:`.json_input`: the one parser of JSON a client sent (:func:`parse_json`).
"""

from __future__ import annotations

from palaestra.scoreboard.protocol.common import (
    API_PREFIX,
    AUTHORIZATION_HEADER,
    EPISODE_BATCH_CONTENT_TYPE,
    ID_PREFIX,
    IDEMPOTENCY_HEADER,
    MAX_ARCHIVE_EXPANDED_BYTES,
    MAX_ARCHIVE_MEMBER_BYTES,
    MAX_ARCHIVE_MEMBERS,
    MAX_DATA_SOURCES,
    MAX_ENV_INDEX,
    MAX_EPISODE_BATCH_BYTES,
    MAX_EPISODE_LENGTH,
    MAX_EPISODES,
    MAX_ID_LENGTH,
    MAX_JSON_DEPTH,
    MAX_TEXT_LENGTH,
    MAX_VIDEO_ARCHIVE_BYTES,
    MAX_VIDEOS,
    NO_PARAM,
    REQUEST_ID_HEADER,
    VIDEO_ARCHIVE_CONTENT_TYPE,
    VIDEO_ARCHIVE_MANIFEST,
    VIDEO_CONTENT_TYPES,
    BenchmarkRunStatus,
    EpisodeLength,
    EpisodeType,
    ErrorBody,
    FilePurpose,
    FileStatus,
    FiniteFloat,
    NonNegativeInt,
    Request,
    Response,
    Timestamp,
    WriteupURL,
    algorithm_web_path,
    benchmark_run_web_path,
    check_writeup,
    evaluation_web_path,
)
from palaestra.scoreboard.protocol.documents import (
    EpisodeBatch,
    EpisodeBatchError,
    VideoArchiveManifest,
    VideoMetadata,
    loads_json,
    parse_episode_batch,
)
from palaestra.scoreboard.protocol.json_input import (
    JSONInputError,
    parse_json,
)
from palaestra.scoreboard.protocol.objects import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    AlgorithmCreate,
    AlgorithmObject,
    AlgorithmRef,
    BenchmarkRunCreate,
    BenchmarkRunObject,
    BenchmarkRunUpdate,
    EnvObject,
    EvaluationCreate,
    EvaluationCreated,
    EvaluationObject,
    EvaluationScore,
    FileCreate,
    FileObject,
    GroupObject,
    HealthObject,
    HumanNormalisedScore,
    ListPage,
    ListParams,
    LogBlob,
    LogEntryObject,
    VideoSummary,
    decode_tags,
    default_content_type,
)

__all__ = [
    "API_PREFIX",
    "AUTHORIZATION_HEADER",
    "DEFAULT_PAGE_SIZE",
    "EPISODE_BATCH_CONTENT_TYPE",
    "IDEMPOTENCY_HEADER",
    "ID_PREFIX",
    "MAX_ARCHIVE_EXPANDED_BYTES",
    "MAX_ARCHIVE_MEMBERS",
    "MAX_ARCHIVE_MEMBER_BYTES",
    "MAX_DATA_SOURCES",
    "MAX_ENV_INDEX",
    "MAX_EPISODES",
    "MAX_EPISODE_BATCH_BYTES",
    "MAX_EPISODE_LENGTH",
    "MAX_ID_LENGTH",
    "MAX_JSON_DEPTH",
    "MAX_PAGE_SIZE",
    "MAX_TEXT_LENGTH",
    "MAX_VIDEOS",
    "MAX_VIDEO_ARCHIVE_BYTES",
    "NO_PARAM",
    "REQUEST_ID_HEADER",
    "VIDEO_ARCHIVE_CONTENT_TYPE",
    "VIDEO_ARCHIVE_MANIFEST",
    "VIDEO_CONTENT_TYPES",
    "AlgorithmCreate",
    "AlgorithmObject",
    "AlgorithmRef",
    "BenchmarkRunCreate",
    "BenchmarkRunObject",
    "BenchmarkRunStatus",
    "BenchmarkRunUpdate",
    "EnvObject",
    "EpisodeBatch",
    "EpisodeBatchError",
    "EpisodeLength",
    "EpisodeType",
    "ErrorBody",
    "EvaluationCreate",
    "EvaluationCreated",
    "EvaluationObject",
    "EvaluationScore",
    "FileCreate",
    "FileObject",
    "FilePurpose",
    "FileStatus",
    "FiniteFloat",
    "GroupObject",
    "HealthObject",
    "HumanNormalisedScore",
    "JSONInputError",
    "ListPage",
    "ListParams",
    "LogBlob",
    "LogEntryObject",
    "NonNegativeInt",
    "Request",
    "Response",
    "Timestamp",
    "VideoArchiveManifest",
    "VideoMetadata",
    "VideoSummary",
    "WriteupURL",
    "algorithm_web_path",
    "benchmark_run_web_path",
    "check_writeup",
    "decode_tags",
    "default_content_type",
    "evaluation_web_path",
    "loads_json",
    "parse_episode_batch",
    "parse_json",
]
