"""The scoreboard's records: one typed object per concept, read once from the database, rendered by
the ``/v1`` API and by the web pages alike (so the two cannot disagree).

- :class:`StoredVideo`: one video of an evaluation as the server keeps it (what the wire shows, plus
  the blob keys of the video and its metadata); ingest writes it, everyone else reads it.
- :class:`AlgorithmRecord`: an algorithm and its owner.
- :class:`EvaluationRecord`: an evaluation with its algorithm (its own, else its benchmark run's: the
  2017 client names the algorithm on the run only), owner, run, "solved" statistics and videos, and
  for an Atari game its human-normalised score (:func:`human_normalised_of`).
  :func:`evaluation_select` is its one query, :func:`evaluation_record` builds it from a row.
- Which evaluations belong to an algorithm, the one rule (its own evaluations, and those of its
  benchmark runs that name no algorithm of their own): :func:`of_algorithm` for one algorithm,
  :func:`algorithm_of_evaluations` for all of them at once, and ``RunAlgorithm`` in
  :func:`evaluation_select` (an evaluation shows its own algorithm, else its run's). The ``/v1``
  filter, the algorithms index and the algorithm page all use these.

Each record renders itself as its :mod:`~palaestra.scoreboard.protocol` object (``to_object``); the
pages render the record itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import aliased

from palaestra import catalogue
from palaestra.benchmarks import normalisation
from palaestra.monitoring.files import CONTENT_TYPE_ANSI, CONTENT_TYPE_MP4
from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.evaluations.conditions import derive_conditions
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.base import sorted_keys
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, Evaluation

__all__ = [
    "SCORE_FIELDS",
    "AlgorithmRecord",
    "EvaluationRecord",
    "RunAlgorithm",
    "StoredVideo",
    "algorithm_evaluation_seqs",
    "algorithm_of_evaluations",
    "evaluation_record",
    "evaluation_select",
    "human_normalised_of",
    "of_algorithm",
    "score_of",
]


# -- videos ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredVideo:
    """One video of an evaluation as stored (``evaluations.videos`` and the video file's ``ingest``)."""

    name: str
    metadata_name: str
    episode_id: int | None
    content_type: str
    size: int
    #: blob keys of the video and of its ``.meta.json``
    key: str
    metadata_key: str
    #: ``"observations"`` when its frames are a vector env's observations (the page says so)
    frame_source: str | None = None
    #: sha256 hex of the video and of its metadata, recorded at ingest (``None``: stored before
    #: palaestra recorded them; filled on the first read, :mod:`.video_integrity`)
    sha256: str | None = None
    metadata_sha256: str | None = None

    @classmethod
    def from_stored(cls, doc: Mapping[str, Any]) -> StoredVideo:
        return cls(
            name=doc["name"],
            metadata_name=doc["metadata_name"],
            episode_id=doc.get("episode_id"),
            content_type=doc["content_type"],
            size=doc["size"],
            key=doc["key"],
            metadata_key=doc["metadata_key"],
            frame_source=doc.get("frame_source"),
            sha256=doc.get("sha256"),
            metadata_sha256=doc.get("metadata_sha256"),
        )

    def stored(self) -> dict[str, Any]:
        """The JSON document kept in the database (``frame_source`` only where there is one)."""
        doc: dict[str, Any] = {
            "name": self.name,
            "metadata_name": self.metadata_name,
            "episode_id": self.episode_id,
            "content_type": self.content_type,
            "size": self.size,
            "key": self.key,
            "metadata_key": self.metadata_key,
            "sha256": self.sha256,
            "metadata_sha256": self.metadata_sha256,
        }
        if self.frame_source is not None:
            doc["frame_source"] = self.frame_source
        return doc

    def summary(self) -> protocol.VideoSummary:
        """What the API shows (no blob keys)."""
        return protocol.VideoSummary(
            name=self.name,
            metadata_name=self.metadata_name,
            episode_id=self.episode_id,
            content_type=self.content_type,
            size=self.size,
            frame_source=self.frame_source,
        )

    @property
    def kind(self) -> str:
        """``"mp4"``, ``"terminal"`` (an asciicast recording) or ``"other"``."""
        if self.content_type == CONTENT_TYPE_MP4:
            return "mp4"
        if self.content_type == CONTENT_TYPE_ANSI:
            return "terminal"
        return "other"

    @property
    def media_type(self) -> str:
        """The Content-Type the video is served with."""
        if self.name.endswith(".avi"):
            return "video/x-msvideo"
        if self.content_type == CONTENT_TYPE_ANSI:
            return "application/json"
        return self.content_type or "video/mp4"


def stored_videos(docs: Sequence[Mapping[str, Any]] | None) -> tuple[StoredVideo, ...]:
    """The videos of an ``evaluations.videos`` column, by episode (then name)."""
    videos = (StoredVideo.from_stored(doc) for doc in docs or ())
    return tuple(sorted(videos, key=lambda v: (v.episode_id is None, v.episode_id or 0, v.name)))


# -- algorithms ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlgorithmRecord:
    id: str
    name: str
    description: str | None
    writeup: str | None
    owner: str | None
    created: datetime | None

    @classmethod
    def of(cls, algorithm: Any, owner: str | None) -> AlgorithmRecord:
        """From an ``algorithms`` row (ORM object, snapshot or Core row) and its owner's name."""
        return cls(
            algorithm.id, algorithm.name, algorithm.description, algorithm.writeup, owner, algorithm.created
        )

    def to_object(self, base_url: str) -> protocol.AlgorithmObject:
        return protocol.AlgorithmObject(
            id=self.id,
            name=self.name,
            description=self.description,
            writeup=self.writeup,
            owner=self.owner,
            created=self.created,
            web_url=f"{base_url}{protocol.algorithm_web_path(self.id)}",
        )


# -- evaluations -----------------------------------------------------------------------------------

#: The "solved" statistics and what they were scored against: the fields of
#: :class:`protocol.EvaluationScore`, each stored in the ``evaluations`` column of the same name.
SCORE_FIELDS: tuple[str, ...] = tuple(protocol.EvaluationScore.model_fields)


def score_of(row: Any) -> protocol.EvaluationScore:
    """The score columns of an ``evaluations`` row (or of the values inserted as one)."""
    return protocol.EvaluationScore(**{name: getattr(row, name) for name in SCORE_FIELDS})


#: The stored means a human-normalised score is computed from, in order of preference: the
#: evaluation episodes' (what Atari papers report), the best window's, every training episode's.
NORMALISED_MEANS = ("evaluation_mean", "mean", "episodes_mean")


def human_normalised_of(
    env_id: str | None, score: protocol.EvaluationScore
) -> protocol.HumanNormalisedScore | None:
    """An Atari evaluation's first stored mean of :data:`NORMALISED_MEANS`, human-normalised with the
    default table; ``None`` for other envs, games outside the table, or no mean."""
    for field in NORMALISED_MEANS:
        value = getattr(score, field)
        if value is None:
            continue
        found = normalisation.human_normalised(env_id, value)
        if found is None:
            return None
        return protocol.HumanNormalisedScore(of=field, **found.to_dict())
    return None


@dataclass(frozen=True)
class EvaluationRecord:
    id: str
    env_id: str | None
    #: the env id is in the catalogue (unknown ids are accepted, unranked)
    env_listed: bool
    env_group: str | None
    #: the evaluation's algorithm, else its benchmark run's
    algorithm: AlgorithmRecord | None
    benchmark_run_id: str | None
    writeup: str | None
    gym_version: str | None
    training_episode_batch: str | None
    training_video: str | None
    owner: str | None
    score: protocol.EvaluationScore
    videos: tuple[StoredVideo, ...]
    created: datetime | None
    #: blob key of the uploaded episode batch (None without one)
    episode_batch_key: str | None
    #: its sha256, checked when it is read (None: not recorded)
    episode_batch_sha256: str | None = None
    #: an Atari game's mean, human-normalised (computed from ``score``, not stored)
    human_normalised: protocol.HumanNormalisedScore | None = None
    #: what ran, as uploaded (None: not recorded) and its conditions card (server/conditions.py)
    provenance: dict[str, Any] | None = None
    conditions: dict[str, Any] | None = None
    conditions_key: str | None = None
    #: run by the board itself (an uploaded agent, server/agents/jobs.py): its seeds, artifact and evaluator
    verified: bool = False
    verification: dict[str, Any] | None = None

    @classmethod
    def of(
        cls, evaluation: Any, algorithm: Any | None, benchmark_run_id: str | None, owner: str | None
    ) -> EvaluationRecord:
        """From an ``evaluations`` row (or the values just inserted as one), the algorithm it shows, the
        id of its benchmark run and its owner's name."""
        entry = catalogue.lookup(evaluation.env_id) if evaluation.env_id else None
        score = score_of(evaluation)
        return cls(
            id=evaluation.id,
            env_id=evaluation.env_id,
            env_listed=bool(evaluation.env_listed),
            env_group=entry.group if entry else None,
            algorithm=AlgorithmRecord.of(algorithm, owner) if algorithm is not None else None,
            benchmark_run_id=benchmark_run_id,
            writeup=evaluation.writeup,
            gym_version=evaluation.gym_version,
            training_episode_batch=evaluation.training_episode_batch,
            training_video=evaluation.training_video,
            owner=owner,
            score=score,
            videos=stored_videos(evaluation.videos),
            created=evaluation.created,
            episode_batch_key=evaluation.episode_batch_key,
            episode_batch_sha256=evaluation.episode_batch_sha256,
            human_normalised=human_normalised_of(evaluation.env_id, score),
            # sorted: PostgreSQL's JSONB and SQLite hand the keys back in different orders
            provenance=sorted_keys(evaluation.provenance),
            conditions=sorted_keys(evaluation.conditions or derive_conditions(evaluation.env_id or "", None)),
            conditions_key=evaluation.conditions_key,
            verified=bool(evaluation.verified),
            verification=sorted_keys(evaluation.verification),
        )

    def to_object(self, base_url: str) -> protocol.EvaluationObject:
        return protocol.EvaluationObject(
            id=self.id,
            env=self.env_id,
            env_listed=self.env_listed,
            env_group=self.env_group,
            algorithm=self.algorithm.to_object(base_url) if self.algorithm else None,
            benchmark_run_id=self.benchmark_run_id,
            writeup=self.writeup,
            gym_version=self.gym_version,
            training_episode_batch=self.training_episode_batch,
            training_video=self.training_video,
            owner=self.owner,
            score=self.score,
            human_normalised=self.human_normalised,
            videos=[v.summary() for v in self.videos],
            created=self.created,
            web_url=f"{base_url}{protocol.evaluation_web_path(self.id)}",
            provenance=self.provenance,
            conditions=self.conditions,
            verified=self.verified,
            verification=self.verification,
        )


#: The algorithm of an evaluation's benchmark run.
RunAlgorithm = aliased(Algorithm, name="run_algorithm")


def evaluation_select() -> Any:
    """The evaluations with everything :func:`evaluation_record` needs (filter and order it)."""
    return (
        sa.select(Evaluation, Algorithm, RunAlgorithm, BenchmarkRun.id.label("run_id"), User.name)
        .join(User, User.seq == Evaluation.user_seq)
        .outerjoin(Algorithm, Algorithm.seq == Evaluation.algorithm_seq)
        .outerjoin(BenchmarkRun, BenchmarkRun.seq == Evaluation.benchmark_run_seq)
        .outerjoin(RunAlgorithm, RunAlgorithm.seq == BenchmarkRun.algorithm_seq)
    )


def evaluation_record(row: Any) -> EvaluationRecord:
    """The record of one row of :func:`evaluation_select`."""
    evaluation, own_algorithm, run_algorithm, run_id, owner = row
    return EvaluationRecord.of(evaluation, own_algorithm or run_algorithm, run_id, owner)


# -- which evaluations belong to an algorithm ----------------------------------------------------------
def of_algorithm(algorithm_seq: int) -> Any:
    """The condition on ``Evaluation`` that it belongs to the algorithm ``algorithm_seq``: it names that
    algorithm, or it names none and belongs to a benchmark run of that algorithm (the 2017 client names
    the algorithm on the run only). An evaluation that names another algorithm belongs to that one, even
    in this algorithm's run: each evaluation belongs to one algorithm at most."""
    runs = sa.select(BenchmarkRun.seq).where(BenchmarkRun.algorithm_seq == algorithm_seq)
    return sa.or_(
        Evaluation.algorithm_seq == algorithm_seq,
        sa.and_(Evaluation.algorithm_seq.is_(None), Evaluation.benchmark_run_seq.in_(runs)),
    )


def algorithm_evaluation_seqs(algorithm_seq: int, *where: Any) -> Any:
    """``seq`` of the evaluations of :func:`of_algorithm` (and ``where``), as a subquery: the two ways
    to belong each along an index of their own (``algorithm_seq``; ``benchmark_run_seq``), so a
    page of an algorithm's evaluations does not walk every evaluation, newest first, looking for it."""
    runs = sa.select(BenchmarkRun.seq).where(BenchmarkRun.algorithm_seq == algorithm_seq)
    own = sa.select(Evaluation.seq.label("seq")).where(Evaluation.algorithm_seq == algorithm_seq, *where)
    via_run = sa.select(Evaluation.seq).where(
        Evaluation.algorithm_seq.is_(None), Evaluation.benchmark_run_seq.in_(runs), *where
    )
    return sa.union_all(own, via_run).subquery()


def algorithm_of_evaluations() -> Any:
    """``(algorithm_seq, env_id, seq, solved)`` of every evaluation that belongs to an algorithm, by the
    rule of :func:`of_algorithm`, as a subquery (for counting per algorithm)."""
    own = sa.select(
        Evaluation.algorithm_seq.label("algorithm_seq"),
        Evaluation.env_id.label("env_id"),
        Evaluation.seq.label("seq"),
        Evaluation.solved.label("solved"),
    ).where(Evaluation.algorithm_seq.is_not(None))
    via_run = (
        sa.select(BenchmarkRun.algorithm_seq, Evaluation.env_id, Evaluation.seq, Evaluation.solved)
        .join(BenchmarkRun, BenchmarkRun.seq == Evaluation.benchmark_run_seq)
        .where(Evaluation.algorithm_seq.is_(None), BenchmarkRun.algorithm_seq.is_not(None))
    )
    return sa.union_all(own, via_run).subquery()
