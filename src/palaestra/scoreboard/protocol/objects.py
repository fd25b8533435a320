"""The ``/v1`` objects of the scoreboard wire protocol (:mod:`palaestra.scoreboard.protocol`): request
and response bodies of files, algorithms, evaluations, benchmark runs, envs, groups, health and the
log, and the pages of every list."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import ConfigDict, Field, field_validator, model_validator

from palaestra.scoreboard.protocol.common import (
    EPISODE_BATCH_CONTENT_TYPE,
    MAX_ID_LENGTH,
    MAX_TEXT_LENGTH,
    VIDEO_ARCHIVE_CONTENT_TYPE,
    BenchmarkRunStatus,
    FilePurpose,
    FileStatus,
    Request,
    Response,
    Timestamp,
    WriteupURL,
)
from palaestra.scoreboard.protocol.json_input import parse_json
from palaestra.scoreboard.protocol.provenance import Provenance

# --------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------


class FileCreate(Request):
    """``POST /v1/files``."""

    purpose: FilePurpose
    content_type: str | None = Field(default=None, max_length=MAX_ID_LENGTH)

    @model_validator(mode="after")
    def _check_content_type(self) -> FileCreate:
        expected = default_content_type(self.purpose)
        if self.content_type is not None and self.content_type != expected:
            raise ValueError(
                f"content_type {self.content_type!r} does not fit purpose {self.purpose!r}; use {expected!r}"
            )
        return self


def default_content_type(purpose: str) -> str:
    """The content type of an upload of ``purpose``."""
    return VIDEO_ARCHIVE_CONTENT_TYPE if purpose == "video" else EPISODE_BATCH_CONTENT_TYPE


class FileObject(Response):
    """A file: created ``pending`` with a signed upload form, ``uploaded`` once the bytes arrived."""

    object: Literal["file"] = "file"
    id: str
    purpose: FilePurpose
    content_type: str
    #: where to POST the multipart form (no API headers); answers 204; single use; expires
    post_url: str | None = None
    #: form fields to send with the ``file`` field
    post_fields: dict[str, str] = Field(default_factory=dict)
    status: FileStatus = "pending"
    size: int | None = None
    #: when ``post_url`` stops working
    expires_at: Timestamp | None = None
    created: Timestamp | None = None


# --------------------------------------------------------------------------------------------------
# Algorithms
# --------------------------------------------------------------------------------------------------


class AlgorithmRef(Request):
    """The ``algorithm`` field of an evaluation: ``{"id": <id or name>}`` or ``{}``."""

    id: str | None = Field(default=None, max_length=MAX_ID_LENGTH)


class AlgorithmCreate(Request):
    """``POST /v1/algorithms``."""

    name: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    description: str | None = Field(default=None, max_length=MAX_TEXT_LENGTH)
    writeup: WriteupURL | None = None


class AlgorithmObject(Response):
    object: Literal["algorithm"] = "algorithm"
    id: str
    name: str
    description: str | None = None
    writeup: str | None = None
    owner: str | None = None
    created: Timestamp | None = None
    web_url: str | None = None


# --------------------------------------------------------------------------------------------------
# Evaluations
# --------------------------------------------------------------------------------------------------


class EvaluationCreate(Request):
    """``POST /v1/evaluations`` (every field is optional once the 2017 client stripped nulls)."""

    training_episode_batch: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    training_video: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    env: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    algorithm: AlgorithmRef | None = None
    benchmark_run_id: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    writeup: WriteupURL | None = None
    gym_version: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    #: what ran (palaestra's Monitor records it; the 2017 client sends none): provenance_wire.py
    provenance: Provenance | None = None


class EvaluationScore(Response):
    """The "solved" statistics of an evaluation (spec §4.6), computed once on ingest.

    The first eleven fields are :class:`palaestra.solved_stats.SolvedStats`; the server stores each
    field in the ``evaluations`` column of the same name. ``mean`` is the best ``trials``-episode
    window's; a run with fewer training episodes has ``episodes_mean`` (the mean of those it has)
    instead, and ``evaluation_mean`` is the mean of the evaluation episodes (type ``'e'``).
    """

    episode_t_value: int | None = None
    timestep_t_value: int | None = None
    mean: float | None = None
    error: float | None = None
    number_episodes: int = 0
    number_timesteps: int = 0
    seconds_to_solve: float | None = None
    seconds_in_total: float | None = None
    episodes_mean: float | None = None
    evaluation_episodes: int = 0
    evaluation_mean: float | None = None
    #: the window and threshold it was scored against
    trials: int = 100
    reward_threshold: float | None = None
    solved: bool = False


class HumanNormalisedScore(Response):
    """An Atari evaluation's mean score, human-normalised: ``(raw - random) / (human - random)``.

    ``raw`` is the stored mean named by ``of`` (``evaluation_mean``: the evaluation episodes'; else
    ``mean``: the best ``trials``-episode window's; else ``episodes_mean``: every training episode's);
    ``random`` and ``human`` are ``game``'s scores in table ``table`` version ``version``
    (:mod:`palaestra.benchmarks.normalisation`). Computed when read, never stored.
    """

    value: float
    raw: float
    of: str
    game: str
    random: float
    human: float
    table: str
    version: int


class VideoSummary(Response):
    """One video of an evaluation (the server keeps where its bytes are besides)."""

    name: str
    metadata_name: str
    episode_id: int | None = None
    content_type: str
    size: int
    #: ``"observations"`` for a video made from a vector env's observations; None when rendered
    frame_source: str | None = None


class EvaluationObject(Response):
    object: Literal["evaluation"] = "evaluation"
    id: str
    env: str | None
    #: whether the env id is one the scoreboard knows (unknown ids are accepted, unlisted)
    env_listed: bool = False
    env_group: str | None = None
    algorithm: AlgorithmObject | None = None
    benchmark_run_id: str | None = None
    writeup: str | None = None
    gym_version: str | None = None
    training_episode_batch: str | None = None
    training_video: str | None = None
    owner: str | None = None
    score: EvaluationScore | None = None
    #: Atari games of the default table only (None for every other env, and without a mean)
    human_normalised: HumanNormalisedScore | None = None
    videos: list[VideoSummary] = Field(default_factory=list)
    created: Timestamp | None = None
    web_url: str | None = None
    #: what ran, as uploaded and validated by :class:`Provenance` (None: not recorded, as for every
    #: 2017 upload); a plain object here, so that a client reads what a newer server adds
    provenance: dict[str, Any] | None = None
    #: the evaluation protocol derived from it (palaestra.scoreboard.server.evaluations.conditions)
    conditions: dict[str, Any] | None = None
    #: the board ran these episodes itself (an agent uploaded to /v1/agents), and how: the job, its
    #: seeds, the artifact's sha256 and the evaluator (None: a self-reported upload)
    verified: bool = False
    verification: dict[str, Any] | None = None


class EvaluationCreated(EvaluationObject):
    """The answer to ``POST /v1/evaluations``: the evaluation, made now (201) or, ``already_uploaded``,
    made before from the same episodes with the same details (200): a repeat of an upload (the rule:
    ``palaestra.scoreboard.server.evaluations.repeats``; docs/upload.md, "Uploading the same run again")."""

    already_uploaded: bool = False

    @classmethod
    def of(cls, evaluation: EvaluationObject, already_uploaded: bool) -> EvaluationCreated:
        return cls(**dict(evaluation), already_uploaded=already_uploaded)


# --------------------------------------------------------------------------------------------------
# Benchmark runs
# --------------------------------------------------------------------------------------------------


class BenchmarkRunCreate(Request):
    """``POST /v1/benchmark_runs``; ``tags`` arrives as a JSON-encoded string (a dict is accepted too)."""

    benchmark_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    algorithm_id: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    tags: dict[str, Any] | None = None

    @field_validator("tags", mode="before")
    @classmethod
    def _decode_tags(cls, value: Any) -> Any:
        return decode_tags(value)


def decode_tags(value: Any) -> Any:
    """``tags`` as the 2017 client sends them (a JSON string) or as a dict; ``None`` stays ``None``."""
    if isinstance(value, str):
        if len(value) > MAX_TEXT_LENGTH:
            raise ValueError(f"tags must be at most {MAX_TEXT_LENGTH} characters of JSON")
        value = parse_json(value, "tags")  # a JSONInputError is a ValueError: a validation error
    if value is not None and not isinstance(value, dict):
        raise ValueError("tags must be a JSON object (a dict), e.g. '{\"lr\": 0.01}'")
    return value


class BenchmarkRunUpdate(Request):
    """``POST /v1/benchmark_runs/{id}`` (the 2017 ``save()``)."""

    algorithm_id: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    tags: dict[str, Any] | None = None

    @field_validator("tags", mode="before")
    @classmethod
    def _decode_tags(cls, value: Any) -> Any:
        return decode_tags(value)


class BenchmarkRunObject(Response):
    object: Literal["benchmark_run"] = "benchmark_run"
    id: str
    benchmark_id: str
    algorithm: AlgorithmObject | None = None
    tags: dict[str, Any] = Field(default_factory=dict)
    status: BenchmarkRunStatus = "open"
    evaluations: list[str] = Field(default_factory=list)
    #: the benchmark's aggregate score (``benchmark_aggregate_score``), once it could be computed
    score: dict[str, Any] | None = None
    owner: str | None = None
    created: Timestamp | None = None
    committed: Timestamp | None = None
    web_url: str | None = None


# --------------------------------------------------------------------------------------------------
# Environments, groups and the service
# --------------------------------------------------------------------------------------------------


class EnvObject(Response):
    """An env id: what the scoreboard's catalogue says about it, and its evaluations so far."""

    object: Literal["env"] = "env"
    id: str
    #: whether the catalogue knows the env id (an unknown id gets evaluations, unranked)
    listed: bool = False
    group: str | None = None
    summary: str | None = None
    reward_threshold: float | None = None
    trials: int = 100
    solving_rule: str | None = None
    evaluation_count: int = 0
    solved_count: int = 0
    best_mean: float | None = None
    best_evaluation_id: str | None = None


class GroupObject(Response):
    """A group of envs on the scoreboard (spec §4.5), with the env ids it lists."""

    object: Literal["group"] = "group"
    id: str
    name: str
    description: str
    envs: list[str] = Field(default_factory=list)


class HealthObject(Response):
    """``GET /v1/health``: the service answers, and its database and blob store each wrote and read
    back a probe (else the answer is a 503 error document naming the part that failed, with the same
    ``checks``)."""

    object: Literal["health"] = "health"
    status: Literal["ok"] = "ok"
    #: the database's schema revision (the newest migration)
    schema_revision: str
    #: each part probed (``database``, ``blob_store``): ``"ok"`` or what went wrong
    checks: dict[str, str] = Field(default_factory=dict)
    #: ``read-write``, or ``read-only`` for an archive that refuses every write (probed by reading only)
    mode: Literal["read-write", "read-only"] = "read-write"


class LogBlob(Response):
    """A blob of a logged record: its key in the store, its sha256 when the record was scored, and
    where to download its bytes."""

    key: str
    sha256: str
    url: str


class LogEntryObject(Response):
    """``GET /v1/log``: one entry of the hash chain of scores (``docs/archive.md``).

    ``entry_sha256`` is the sha256 of the canonical JSON of ``seq``, ``kind``, ``record_id``,
    ``record_sha256``, ``blobs`` (key and sha256), ``previous_sha256``, ``created`` and, from version
    2 on, ``version`` and ``fields``; ``record`` is the record's canonical document of that version as the board holds
    it now (None: it is gone), which hashes to ``record_sha256`` unless it was changed after it was
    scored (for ``ladder_ratings``, logged at each rating, only a ladder's latest entry is held to it).
    """

    object: Literal["log_entry"] = "log_entry"
    seq: int
    kind: Literal["evaluation", "benchmark_run", "ladder_match", "ladder_ratings"]
    #: which documents the entry covers (1: before schema revision 0013_score_log_coverage)
    version: int = 1
    #: version 2: ``{field: sha256}`` of the record's document when it was logged (hashed into
    #: ``entry_sha256``), so that a verifier names the fields changed since
    fields: dict[str, str] | None = None
    record_id: str
    record_sha256: str
    blobs: list[LogBlob] = Field(default_factory=list)
    previous_sha256: str
    entry_sha256: str
    #: ISO 8601, UTC, as hashed
    created: str
    record: dict[str, Any] | None = None


# --------------------------------------------------------------------------------------------------
# Lists
# --------------------------------------------------------------------------------------------------

T = TypeVar("T")

#: Largest page a list endpoint returns (``limit``).
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 20


class ListPage(Response, Generic[T]):
    """A page of a list (Stripe style): ``GET /v1/<kind>s?limit=N&starting_after=<id>``.

    The 2017 client sends GET parameters as a raw JSON query string (``?{"limit": 10}``); the
    server accepts that too. Pages run newest first.
    """

    object: Literal["list"] = "list"
    url: str
    data: list[T]
    has_more: bool = False


class ListParams(Request):
    """Parameters of every list endpoint (plus filters, which the server reads per kind)."""

    model_config = ConfigDict(extra="allow")

    limit: int = Field(default=DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)
    starting_after: str | None = Field(default=None, max_length=MAX_ID_LENGTH)


# --------------------------------------------------------------------------------------------------
# The episode batch document
# --------------------------------------------------------------------------------------------------
