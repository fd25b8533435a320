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
and size caps.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    field_validator,
    model_validator,
)

try:
    import orjson
except ImportError:  # a client-only install: the json module does the same, slower
    orjson = None  # type: ignore[assignment]

from palaestra.monitoring.files import CONTENT_TYPE_ANSI, CONTENT_TYPE_MP4, VIDEO_META_NAME_RE, VIDEO_NAME_RE
from palaestra.scoreboard.provenance_wire import Provenance

# --------------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------------

API_PREFIX = "/v1"
#: Content type of a video archive upload (a tar.gz of videos, their metadata and ``manifest.json``).
VIDEO_ARCHIVE_CONTENT_TYPE = "application/vnd.openai.video+x-compressed"
#: Content type of an episode-batch upload.
EPISODE_BATCH_CONTENT_TYPE = "application/json"
#: Name of the manifest member inside a video archive.
VIDEO_ARCHIVE_MANIFEST = "manifest.json"
#: Content types a video inside an archive may have (from its ``.meta.json``).
VIDEO_CONTENT_TYPES = (CONTENT_TYPE_MP4, CONTENT_TYPE_ANSI)

#: At most this many videos per archive (the 2017 client subsamples to it).
MAX_VIDEOS = 100
#: At most this many members in a video archive: every video, its metadata, and the manifest.
MAX_ARCHIVE_MEMBERS = 2 * MAX_VIDEOS + 1
#: At most this many episodes in one episode batch.
MAX_EPISODES = 1_000_000
#: At most this many data sources (merged stats files) in one episode batch.
MAX_DATA_SOURCES = 10_000
#: Default upload size caps (a server may be configured lower or higher; it answers 413 above them).
MAX_EPISODE_BATCH_BYTES = 64 * 1024 * 1024
MAX_VIDEO_ARCHIVE_BYTES = 256 * 1024 * 1024
#: Caps while unpacking a video archive: one member, and all members together.
MAX_ARCHIVE_MEMBER_BYTES = 64 * 1024 * 1024
MAX_ARCHIVE_EXPANDED_BYTES = 1024 * 1024 * 1024
#: Longest accepted strings.
MAX_ID_LENGTH = 200
MAX_TEXT_LENGTH = 10_000
#: Deepest nesting of arrays and objects accepted in any JSON a client sends. The protocol's own
#: documents are at most four deep; this leaves room for nested ``tags`` and stops the recursion
#: that deeper documents cause in every JSON encoder and decoder downstream.
MAX_JSON_DEPTH = 64

#: Headers.
AUTHORIZATION_HEADER = "Authorization"
IDEMPOTENCY_HEADER = "Idempotency-Key"
REQUEST_ID_HEADER = "request-id"

#: Id prefixes of each kind of object.
ID_PREFIX = {
    "evaluation": "eval_",
    "file": "file_",
    "benchmark_run": "brun_",
    "algorithm": "alg_",
    "request": "req_",
    "api_key": "key_",
    "ladder_match": "match_",
    "ladder_game": "game_",
    "live_evaluation": "live_",
}

#: Error ``type`` meaning "no particular parameter" (the 2017 client maps it to ``param=None``).
NO_PARAM = "about:blank"

FilePurpose = Literal["episode_batch", "video"]
FileStatus = Literal["pending", "uploaded"]
BenchmarkRunStatus = Literal["open", "committed"]
EpisodeType = Literal["t", "e"]

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
NonNegativeInt = Annotated[int, Field(ge=0)]
#: A moment on the wire: ISO 8601 with the offset written out (``...+00:00``), as the server has always
#: sent it (pydantic alone would write ``Z``, which ``datetime.fromisoformat`` before Python 3.11 refuses).
Timestamp = Annotated[datetime, PlainSerializer(lambda moment: moment.isoformat(), when_used="json")]


def check_writeup(url: str) -> str:
    """A writeup is a web page: an ``http(s)://`` URL (2017: a Gist). Raises ``ValueError`` otherwise."""
    parsed = urlsplit(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(
            f"writeup must be an http(s) URL, such as https://gist.github.com/you/1234, not {url!r}"
        )
    return url.strip()


WriteupURL = Annotated[str, Field(max_length=MAX_TEXT_LENGTH), AfterValidator(check_writeup)]


def evaluation_web_path(evaluation_id: str) -> str:
    """Path of an evaluation's web page, relative to the public URL."""
    return f"/evaluations/{evaluation_id}"


def benchmark_run_web_path(benchmark_run_id: str) -> str:
    """Path of a benchmark run's web page, relative to the public URL."""
    return f"/benchmark_runs/{benchmark_run_id}"


def algorithm_web_path(algorithm_id: str) -> str:
    """Path of an algorithm's web page, relative to the public URL."""
    return f"/algorithms/{algorithm_id}"


# --------------------------------------------------------------------------------------------------
# Base classes
# --------------------------------------------------------------------------------------------------


class Request(BaseModel):
    """A request body: unknown fields are an error that names them (as the 2017 server did)."""

    model_config = ConfigDict(extra="forbid")


class Response(BaseModel):
    """A response body: unknown fields are kept, so an older client reads a newer server."""

    model_config = ConfigDict(extra="allow")


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


class ErrorBody(Response):
    """The error body every non-2xx answer carries (problem+json shaped, as the 2017 client parses it).

    ``type`` is the offending parameter (e.g. ``"episode_rewards"``) or ``"about:blank"``.
    """

    detail: str
    type: str = NO_PARAM
    status: int | None = None
    title: str | None = None
    request_id: str | None = None


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
    #: the evaluation protocol derived from it (palaestra.scoreboard.server.conditions)
    conditions: dict[str, Any] | None = None


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
    ``record_sha256``, ``blobs`` (key and sha256), ``previous_sha256`` and ``created``;
    ``record`` is the record's canonical document as the board holds it now (None: it is gone), which
    hashes to ``record_sha256`` unless it was changed after it was scored.
    """

    object: Literal["log_entry"] = "log_entry"
    seq: int
    kind: Literal["evaluation", "benchmark_run"]
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


class EpisodeBatchError(ValueError):
    """An episode-batch document that is not valid; ``field`` names the offending key."""

    def __init__(self, message: str, field: str = NO_PARAM) -> None:
        super().__init__(message)
        self.field = field


class EpisodeBatch(BaseModel):
    """The episode-batch document (spec §4.2): what ``gym.upload`` POSTs for ``episode_batch``.

    The uploaded keys are ``data_sources, episode_lengths, episode_rewards, episode_types,
    initial_reset_timestamps, timestamps``, plus palaestra's ``env_index`` for a vector run (each
    episode's sub-environment; 2017 clients and single-env runs send none). The server stores an
    enriched copy that also has ``env_id`` and ``initial_reset_timestamp`` (spec §10.17); both are
    accepted here.
    """

    model_config = ConfigDict(extra="forbid")

    data_sources: list[NonNegativeInt] | None = None
    episode_lengths: list[NonNegativeInt]
    episode_rewards: list[FiniteFloat]
    episode_types: list[EpisodeType] | None = None
    initial_reset_timestamps: list[FiniteFloat | None] = Field(default_factory=list)
    timestamps: list[FiniteFloat]
    env_index: list[NonNegativeInt] | None = None
    # enriched form
    env_id: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    initial_reset_timestamp: FiniteFloat | None = None

    @model_validator(mode="after")
    def _check_shape(self) -> EpisodeBatch:
        n = len(self.episode_lengths)
        if n > MAX_EPISODES:
            raise EpisodeBatchError(
                f"episode batch has {n} episodes; at most {MAX_EPISODES} fit in one upload", "episode_lengths"
            )
        for name in ("episode_rewards", "timestamps", "episode_types", "data_sources", "env_index"):
            values = getattr(self, name)
            if values is not None and len(values) != n:
                raise EpisodeBatchError(
                    f"{name} has {len(values)} entries but episode_lengths has {n}; "
                    "every per-episode array must have one entry per episode",
                    name,
                )
        if len(self.initial_reset_timestamps) > MAX_DATA_SOURCES:
            raise EpisodeBatchError(
                f"initial_reset_timestamps has {len(self.initial_reset_timestamps)} entries; "
                f"at most {MAX_DATA_SOURCES} data sources fit in one upload",
                "initial_reset_timestamps",
            )
        if self.data_sources and self.initial_reset_timestamps:
            top = max(self.data_sources)
            if top >= len(self.initial_reset_timestamps):
                raise EpisodeBatchError(
                    f"data_sources refers to source {top} but initial_reset_timestamps has only "
                    f"{len(self.initial_reset_timestamps)} entries",
                    "data_sources",
                )
        return self

    @property
    def first_reset_timestamp(self) -> float | None:
        """The earliest reset: ``initial_reset_timestamp``, else the least of the per-source ones."""
        if self.initial_reset_timestamp is not None:
            return self.initial_reset_timestamp
        known = [t for t in self.initial_reset_timestamps if t is not None]
        return min(known) if known else (self.timestamps[0] if self.timestamps else None)

    def enriched(self, env_id: str | None) -> dict[str, Any]:
        """The stored document: the uploaded keys plus ``env_id`` and ``initial_reset_timestamp``."""
        doc = self.model_dump(exclude_none=False)
        doc["env_id"] = env_id
        doc["initial_reset_timestamp"] = self.first_reset_timestamp
        if doc["episode_types"] is None:
            doc["episode_types"] = ["t"] * len(self.episode_lengths)
        if doc["data_sources"] is None:
            doc["data_sources"] = [0] * len(self.episode_lengths)
        if doc["env_index"] is None:
            del doc["env_index"]  # unknown, not sub-environment 0: the stored document says nothing
        return doc


def _error_field(loc: tuple[int | str, ...]) -> str:
    return str(loc[0]) if loc else NO_PARAM


class JSONInputError(ValueError):
    """JSON that a client sent and that is malformed, nested too deep or holds NaN/Infinity."""


def parse_json(
    data: bytes | str, what: str, *, max_depth: int = MAX_JSON_DEPTH, allow_nan: bool = False
) -> Any:
    """Decode JSON that came from a client: every parse of client-supplied JSON goes through here.

    Malformed input, nesting deeper than ``max_depth`` and (unless ``allow_nan``) NaN or Infinity
    raise :class:`JSONInputError` whose message starts with ``what`` ("The request body", "tags"...).
    Never ``RecursionError``: orjson stops at 1024 levels and the ``json`` fallback's recursion is
    caught. orjson (the server extra) decodes; a document it refuses (NaN or Infinity, integers past
    64 bits, bad JSON) goes to ``json``, which decodes the first two and words the error of the last.
    """
    doc: Any = _NOTHING
    if orjson is not None:
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            if str(e).startswith("depth limit exceeded"):
                raise JSONInputError(f"{what} is nested deeper than {max_depth} levels.") from None
    if doc is _NOTHING:
        try:
            doc = (
                json.loads(data)
                if allow_nan
                else json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
            )
        except RecursionError:
            raise JSONInputError(f"{what} is nested deeper than {max_depth} levels.") from None
        except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, integers past 4300 digits
            raise JSONInputError(f"{what} is not valid JSON: {e}") from None
    if _brackets(data) > max_depth and _deeper_than(doc, max_depth):
        raise JSONInputError(f"{what} is nested deeper than {max_depth} levels.")
    return doc


def _brackets(data: bytes | str) -> int:
    """How many arrays and objects ``data`` opens at most: no deeper than that (counted at C speed, it
    spares an episode batch, with its seven, the walk through its million numbers)."""
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


_NOTHING = object()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} is too large for a double")
    return value


def _deeper_than(doc: Any, max_depth: int) -> bool:
    """Whether ``doc`` nests arrays/objects more than ``max_depth`` deep (level by level, no recursion;
    an array of numbers costs one C-level pass over its item types)."""
    level = [doc] if isinstance(doc, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        below: list[Any] = []
        for node in level:
            items = node.values() if isinstance(node, dict) else node
            kinds = set(map(type, items))
            if list in kinds or dict in kinds:
                below.extend(item for item in items if isinstance(item, dict | list))
        level = below
    return False


def loads_json(data: bytes | str) -> Any:
    """Decode an episode batch (:func:`parse_json`; NaN and Infinity pass, to be refused field by
    field with a name); :class:`EpisodeBatchError` if it is not JSON or nested too deep."""
    try:
        return parse_json(data, "episode batch", allow_nan=True)
    except JSONInputError as e:
        raise EpisodeBatchError(str(e)) from None


def parse_episode_batch(
    data: bytes | str | dict[str, Any], max_bytes: int = MAX_EPISODE_BATCH_BYTES
) -> EpisodeBatch:
    """Validate an episode-batch document (raw JSON or an already decoded dict).

    Raises :class:`EpisodeBatchError` whose message says what is wrong and whose ``field`` names the
    key: unequal array lengths, a non-finite number, an episode type other than ``t``/``e``, a
    negative length, or a document over ``max_bytes``/:data:`MAX_EPISODES`.
    """
    if isinstance(data, bytes | str):
        size = len(data)
        if size > max_bytes:
            raise EpisodeBatchError(f"episode batch is {size} bytes; the limit is {max_bytes} bytes")
        doc = loads_json(data)
    else:
        doc = data
    if not isinstance(doc, dict):
        raise EpisodeBatchError(f"episode batch must be a JSON object, not {type(doc).__name__}")
    try:
        return EpisodeBatch.model_validate(doc)
    except EpisodeBatchError:
        raise
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, EpisodeBatchError):
            raise cause from None
        field = _error_field(tuple(err["loc"]))
        where = ".".join(str(p) for p in err["loc"])
        value = err.get("input")
        shown = "" if isinstance(value, dict | list) else f" (got {value!r})"
        raise EpisodeBatchError(f"episode batch field {where}: {err['msg']}{shown}", field) from None


# --------------------------------------------------------------------------------------------------
# The video archive
# --------------------------------------------------------------------------------------------------


class VideoArchiveManifest(BaseModel):
    """``manifest.json`` inside a video archive: ``{"version": 0, "videos": [[video, meta], ...]}``."""

    model_config = ConfigDict(extra="allow")

    version: int = 0
    videos: list[tuple[str, str]]

    @field_validator("videos")
    @classmethod
    def _check_videos(cls, videos: list[tuple[str, str]]) -> list[tuple[str, str]]:
        if len(videos) > MAX_VIDEOS:
            raise ValueError(f"the archive lists {len(videos)} videos; at most {MAX_VIDEOS} are allowed")
        seen: set[str] = set()
        for video, meta in videos:
            if not VIDEO_NAME_RE.match(video):
                raise ValueError(f"video name {video!r} must match {VIDEO_NAME_RE.pattern}")
            if not VIDEO_META_NAME_RE.match(meta):
                raise ValueError(f"video metadata name {meta!r} must match {VIDEO_META_NAME_RE.pattern}")
            for name in (video, meta):
                if name in seen or name == VIDEO_ARCHIVE_MANIFEST:
                    raise ValueError(f"{name!r} appears twice in the archive manifest")
                seen.add(name)
        return videos


class VideoMetadata(BaseModel):
    """A video's ``.meta.json`` (spec §3.3)."""

    model_config = ConfigDict(extra="allow")

    episode_id: int | None = None
    content_type: str
    encoder_version: dict[str, Any] | None = None
    empty: bool = False
    broken: bool = False
    #: ``"observations"``: the frames are a vector env's observations (it cannot render); else rendered
    frame_source: str | None = Field(default=None, max_length=32)

    @field_validator("content_type")
    @classmethod
    def _check_content_type(cls, value: str) -> str:
        if value not in VIDEO_CONTENT_TYPES:
            raise ValueError(f"content_type {value!r} is not one of {', '.join(VIDEO_CONTENT_TYPES)}")
        return value


__all__ = [
    "API_PREFIX",
    "EPISODE_BATCH_CONTENT_TYPE",
    "IDEMPOTENCY_HEADER",
    "ID_PREFIX",
    "MAX_EPISODES",
    "MAX_JSON_DEPTH",
    "MAX_VIDEOS",
    "NO_PARAM",
    "REQUEST_ID_HEADER",
    "VIDEO_ARCHIVE_CONTENT_TYPE",
    "AlgorithmCreate",
    "AlgorithmObject",
    "AlgorithmRef",
    "BenchmarkRunCreate",
    "BenchmarkRunObject",
    "BenchmarkRunUpdate",
    "EnvObject",
    "EpisodeBatch",
    "EpisodeBatchError",
    "ErrorBody",
    "EvaluationCreate",
    "EvaluationObject",
    "EvaluationScore",
    "FileCreate",
    "FileObject",
    "GroupObject",
    "HealthObject",
    "HumanNormalisedScore",
    "JSONInputError",
    "ListPage",
    "ListParams",
    "LogBlob",
    "LogEntryObject",
    "Timestamp",
    "VideoArchiveManifest",
    "VideoMetadata",
    "VideoSummary",
    "WriteupURL",
    "check_writeup",
    "parse_episode_batch",
    "parse_json",
]
