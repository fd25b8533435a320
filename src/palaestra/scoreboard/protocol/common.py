"""Constants, field types and base classes of the scoreboard wire protocol (:mod:`palaestra.scoreboard.protocol`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer

from palaestra.monitoring.files import CONTENT_TYPE_ANSI, CONTENT_TYPE_MP4

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
#: The longest episode an episode batch may record, in steps: a trillion is far beyond any run, and
#: :data:`MAX_EPISODES` of them still sum to less than 2**63 (the 64-bit columns a board keeps steps in;
#: 2**63 itself was a 500 on SQLite).
MAX_EPISODE_LENGTH = 10**12
#: The highest sub-environment index of a vector run's ``env_index`` (a 32-bit count of sub-environments).
MAX_ENV_INDEX = 2**31 - 1
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
    "agent_job": "job_",
}

#: Error ``type`` meaning "no particular parameter" (the 2017 client maps it to ``param=None``).
NO_PARAM = "about:blank"

FilePurpose = Literal["episode_batch", "video"]
FileStatus = Literal["pending", "uploaded"]
BenchmarkRunStatus = Literal["open", "committed"]
EpisodeType = Literal["t", "e"]

# Strict: a JSON string ("5") or boolean (true) is not a number on the wire, although pydantic's lax
# mode would turn it into one; an integer is a float (JSON does not tell 1 from 1.0).
FiniteFloat = Annotated[float, Field(strict=True, allow_inf_nan=False)]
NonNegativeInt = Annotated[int, Field(strict=True, ge=0)]
#: An episode's length in steps: a JSON integer, not a string, boolean or 5.0, from 0 to :data:`MAX_EPISODE_LENGTH`.
EpisodeLength = Annotated[int, Field(strict=True, ge=0, le=MAX_EPISODE_LENGTH)]
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

