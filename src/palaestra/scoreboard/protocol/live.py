"""The wire schemas of live runs (``/v1/live_evaluations``), shared by the follower and the server.

A live evaluation is a training run followed while it trains (``palaestra upload --follow DIR``):

- ``POST /v1/live_evaluations`` (:class:`LiveEvaluationCreate`): a new one, *in progress*;
- ``POST /v1/live_evaluations/{id}/chunks`` (:class:`LiveChunk`): the next episodes of one *source*
  (one manifest of the directory: a Monitor process, or a vector Monitor's sub-environment). ``start``
  is the chunk's sequence number: the index, in that source, of its first episode. A chunk the server
  already applied is acknowledged and changes nothing (``applied: false``); one that would leave a gap
  or overlap part of what is stored is refused (409) with the source's next expected sequence;
- ``GET /v1/live_evaluations/{id}`` (:class:`LiveEvaluationObject`): its state and each source's
  position (what the follower resumes from);
- ``POST /v1/live_evaluations/{id}/seal``: the evaluation an upload of the finished directory makes
  (same stored batch, same score); the live evaluation then names it in ``evaluation_id``.

A live evaluation with no new episode for :data:`LIVE_ABANDONED_AFTER_S` seconds (a server setting,
``PALAESTRA_LIVE_ABANDONED_AFTER_S``) is shown as *abandoned*; it keeps every episode and its owner
can seal it (``palaestra upload --seal ID``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, model_validator

from palaestra.scoreboard.protocol import (
    MAX_ID_LENGTH,
    AlgorithmRef,
    EpisodeLength,
    EpisodeType,
    FiniteFloat,
    Request,
    Response,
    WriteupURL,
)
from palaestra.scoreboard.protocol.provenance import Provenance

__all__ = [
    "LIVE_ABANDONED_AFTER_S",
    "MAX_CHUNK_BODY_BYTES",
    "MAX_CHUNK_EPISODES",
    "LiveChunk",
    "LiveChunkAnswer",
    "LiveEvaluationCreate",
    "LiveEvaluationObject",
    "LiveSeal",
    "LiveStatus",
    "live_web_path",
]

#: A live run silent (no new episode) this long is shown as abandoned: 10 minutes, longer than any
#: evaluation pause or checkpoint save seen in a training loop, short enough to spot a dead run.
LIVE_ABANDONED_AFTER_S = 600
#: The most episodes one chunk may carry (the follower sends at most 1,000 per request).
MAX_CHUNK_EPISODES = 5000
#: The longest episode one chunk can spell in JSON as the client writes it (``", "`` between values):
#: a timestamp and a reward of 24 characters each (``-1.2345678901234567e+308``), a length below
#: 2^63 (19 digits), a type (``"e"``) and a truncation flag (``false``), 85 bytes with their separators.
MAX_EPISODE_JSON_BYTES = 96
#: The body cap of ``POST /v1/live_evaluations/{id}/chunks``: a chunk of :data:`MAX_CHUNK_EPISODES`
#: episodes of the longest spelling, with room for the keys and a source name of the longest.
MAX_CHUNK_BODY_BYTES = MAX_CHUNK_EPISODES * MAX_EPISODE_JSON_BYTES + 8 * 1024
#: The longest episode a chunk may carry (the counters are 64-bit integers).
MAX_EPISODE_LENGTH = 2**63 - 1
#: A source's name: the manifest's file name.
MAX_SOURCE_NAME = 300
#: A run's name (``LiveEvaluationCreate.name``).
MAX_RUN_NAME = 300

LiveStatus = Literal["in_progress", "abandoned", "sealing", "sealed"]


def live_web_path(live_id: str) -> str:
    return f"/live/{live_id}"


def live_chunks_path(live_id: str) -> str:
    """The path chunks of ``live_id`` are posted to (under ``/v1``)."""
    return f"/live_evaluations/{live_id}/chunks"


class LiveEvaluationCreate(Request):
    """``POST /v1/live_evaluations``: the run's env and what the evaluation will carry when sealed."""

    env: str = Field(max_length=MAX_ID_LENGTH)
    gym_version: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    algorithm: AlgorithmRef | None = None
    writeup: WriteupURL | None = None
    #: the run's name on its page and in the lists (the follower gives the env id and the algorithm,
    #: or the directory's name)
    name: str | None = Field(default=None, max_length=MAX_RUN_NAME)


class LiveChunk(Request):
    """``POST /v1/live_evaluations/{id}/chunks``: episodes ``start .. start + n`` of ``source``, in the
    order that source journalled them (the keys of a stats document)."""

    source: str = Field(min_length=1, max_length=MAX_SOURCE_NAME)
    start: int = Field(ge=0)
    initial_reset_timestamp: FiniteFloat | None = None
    timestamps: list[FiniteFloat]
    episode_lengths: list[EpisodeLength]
    episode_rewards: list[FiniteFloat]
    episode_types: list[EpisodeType] | None = None
    episode_truncated: list[bool] | None = None

    @model_validator(mode="after")
    def _same_lengths(self) -> LiveChunk:
        n = len(self.timestamps)
        for name in ("episode_lengths", "episode_rewards", "episode_types", "episode_truncated"):
            values = getattr(self, name)
            if values is not None and len(values) != n:
                raise ValueError(f"{name} has {len(values)} entries but timestamps has {n}")
        if any(length < 0 or length > MAX_EPISODE_LENGTH for length in self.episode_lengths):
            raise ValueError(f"episode_lengths must be between 0 and {MAX_EPISODE_LENGTH}")
        return self


class LiveSeal(Request):
    """``POST /v1/live_evaluations/{id}/seal``'s body (it may be empty): what an upload of the finished
    directory carries besides its episodes (the server has those), so that the sealed evaluation equals
    that upload in everything: its video archive (an uploaded file of purpose ``video``) and provenance."""

    training_video: str | None = Field(default=None, max_length=MAX_ID_LENGTH)
    provenance: Provenance | None = None


class LiveChunkAnswer(Response):
    """What a chunk did: ``applied`` false when it had been applied before (a retry)."""

    object: Literal["live_chunk"] = "live_chunk"
    source: str
    applied: bool
    #: the source's next expected ``start`` (its episode count on the server)
    position: int


class LiveEvaluationObject(Response):
    object: Literal["live_evaluation"] = "live_evaluation"
    id: str
    env: str
    status: LiveStatus
    owner: str | None = None
    episodes: int = 0
    timesteps: int = 0
    created: datetime
    #: when the server last received an episode (None: none yet)
    last_episode_at: datetime | None = None
    #: seconds since then (as the server computed it when answering)
    seconds_since_last_episode: float | None = None
    #: each source's next expected ``start``
    sources: dict[str, int] = Field(default_factory=dict)
    #: the mean reward of the last (up to) 100 episodes received
    recent_mean: float | None = None
    #: the evaluation it was sealed as
    evaluation_id: str | None = None
    #: its name (None: the follower gave none)
    name: str | None = None
    web_url: str | None = None
