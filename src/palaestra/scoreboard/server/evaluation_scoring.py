"""An evaluation's score, derived once at ingest and stored with it so that pages never recompute it:
the "solved" statistics against its env's ``trials`` and ``reward_threshold`` (by the registry of the
gym that recorded it) and the learning-curve series, over :mod:`palaestra.solved_stats`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from palaestra import catalogue, solved_stats
from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.config import GRAPH_BUCKETS

__all__ = ["EvaluationScoring", "score_batch", "warm_up"]


@dataclass
class EvaluationScoring:
    """What ingest stores with an evaluation so that pages never recompute it."""

    score: protocol.EvaluationScore
    graph_stats: dict[str, Any] | None
    listed: bool
    group: str | None

    def columns(self) -> dict[str, Any]:
        """The score's columns of :class:`palaestra.scoreboard.server.db.Evaluation` (named as its
        fields), and the leaderboard's ``ranking_mean``."""
        ranking = solved_stats.ranking_mean(self.score.mean, self.score.episodes_mean)
        return {**self.score.model_dump(), "ranking_mean": ranking}


def score_batch(
    batch: protocol.EpisodeBatch | None, env_id: str | None, gym_version: str | None = None
) -> EvaluationScoring:
    """Score an evaluation's episodes against its env's ``trials`` and ``reward_threshold``, by the
    registry of the gym that recorded it (:func:`palaestra.catalogue.solving_criteria`)."""
    entry = catalogue.lookup(env_id) if env_id else None
    trials, threshold = (
        catalogue.solving_criteria(env_id, gym_version) if env_id else (solved_stats.DEFAULT_TRIALS, None)
    )
    if batch is None:
        stats = solved_stats.score_from_merged(
            [], [], None, [], None, trials=trials, reward_threshold=threshold
        )
        graph = None
    else:
        stats = solved_stats.score_from_merged(
            batch.episode_lengths,
            batch.episode_rewards,
            batch.episode_types,
            batch.timestamps,
            batch.first_reset_timestamp,
            trials=trials,
            reward_threshold=threshold,
        )
        graph = solved_stats.compute_graph_stats(
            batch.episode_lengths,
            batch.episode_rewards,
            batch.timestamps,
            batch.first_reset_timestamp,
            GRAPH_BUCKETS,
        )
    score = protocol.EvaluationScore(
        **stats, trials=trials, reward_threshold=threshold, solved=stats["episode_t_value"] is not None
    )
    return EvaluationScoring(score, graph, entry is not None, entry.group if entry else None)


def warm_up() -> None:
    """Build the env catalogue now, not on the first upload."""
    catalogue.entries()
