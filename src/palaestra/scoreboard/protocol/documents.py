"""The documents uploaded as files (:mod:`palaestra.scoreboard.protocol`): the episode batch
(spec §4.2) and the video archive's manifest and per-video metadata (spec §3.3), each with the one
validator that client and server both run."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from palaestra.monitoring.files import VIDEO_META_NAME_RE, VIDEO_NAME_RE
from palaestra.scoreboard.protocol.common import (
    MAX_DATA_SOURCES,
    MAX_ENV_INDEX,
    MAX_EPISODE_BATCH_BYTES,
    MAX_EPISODES,
    MAX_ID_LENGTH,
    MAX_VIDEOS,
    NO_PARAM,
    VIDEO_ARCHIVE_MANIFEST,
    VIDEO_CONTENT_TYPES,
    EpisodeLength,
    EpisodeType,
    FiniteFloat,
    NonNegativeInt,
)
from palaestra.scoreboard.protocol.json_input import JSONInputError, parse_json


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

    data_sources: list[Annotated[NonNegativeInt, Field(lt=MAX_DATA_SOURCES)]] | None = None
    episode_lengths: list[EpisodeLength]
    episode_rewards: list[FiniteFloat]
    episode_types: list[EpisodeType] | None = None
    initial_reset_timestamps: list[FiniteFloat | None] = Field(default_factory=list)
    timestamps: list[FiniteFloat]
    env_index: list[Annotated[NonNegativeInt, Field(le=MAX_ENV_INDEX)]] | None = None
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
        # as JSON wrote it: a string "5" and true are not the numbers 5 and 1 they look like in Python
        shown = "" if isinstance(value, dict | list) else f" (got {json.dumps(value)})"
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
