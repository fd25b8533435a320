"""An evaluation, derived once at ingest and stored with it so that pages and ``/v1`` never recompute
it from the episode batch:

- the "solved" statistics against its env's ``trials`` and ``reward_threshold`` (by the registry of
  the gym that recorded it), over :mod:`palaestra.solved_stats`;
- the page's learning-curve series (:func:`palaestra.scoreboard.server.web.curves.from_episode_batch`:
  training episodes, at display resolution), the one curve meaning of the evaluation page, the env
  page's chart, compare and the algorithm page;
- for an evaluation of a benchmark run, its benchmark's per-task ``TaskScores``, which the run's
  aggregate is computed from (:func:`palaestra.scoreboard.server.benchmarking.score_run`).

``palaestra server rescore`` (:mod:`.rescore`) derives the same again for evaluations already stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from palaestra import catalogue, solved_stats
from palaestra.scoreboard import protocol
from palaestra.scoreboard.server import benchmarking
from palaestra.scoreboard.server.db_base import RawJSON

__all__ = ["EvaluationScoring", "curves_of", "derive_evaluation", "score_batch", "warm_up"]


@dataclass
class EvaluationScoring:
    """What ingest stores with an evaluation so that pages never recompute it."""

    score: protocol.EvaluationScore
    listed: bool
    group: str | None
    #: the page's curve series (:func:`curves_of`; None: no batch)
    curves: dict[str, Any] | None = None
    #: the benchmark's TaskScores of the evaluation, JSON-ready (None: not of a known benchmark's run)
    benchmark_score: dict[str, Any] | None = None

    def columns(self) -> dict[str, Any]:
        """The score's columns of :class:`palaestra.scoreboard.server.db.Evaluation` (named as its
        fields), and the leaderboard's ``ranking_mean``."""
        ranking = solved_stats.ranking_mean(self.score.mean, self.score.episodes_mean)
        return {**self.score.model_dump(), "ranking_mean": ranking}

    def derived_columns(self) -> dict[str, Any]:
        """The derived JSON columns, serialised now (not while a write lock is held)."""
        return {
            "curves": None if self.curves is None else RawJSON(json.dumps(self.curves)),
            "benchmark_score": self.benchmark_score,
        }


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
        stats = solved_stats.score_from_merged([], [], None, [], None, trials=trials, reward_threshold=threshold)
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
    score = protocol.EvaluationScore(
        **stats, trials=trials, reward_threshold=threshold, solved=stats["episode_t_value"] is not None
    )
    return EvaluationScoring(score, entry is not None, entry.group if entry else None)


def derive_evaluation(
    batch: protocol.EpisodeBatch | None,
    env_id: str | None,
    gym_version: str | None = None,
    benchmark_id: str | None = None,
) -> EvaluationScoring:
    """Everything stored with an evaluation of ``batch``: its score, its page's curves and, in a run
    of benchmark ``benchmark_id``, its TaskScores."""
    scoring = score_batch(batch, env_id, gym_version)
    if batch is None:
        return scoring
    document = batch.enriched(env_id)
    scoring.curves = curves_of(document, scoring.score.trials, scoring.score.reward_threshold)
    if benchmark_id is not None:
        scoring.benchmark_score = benchmarking.score_evaluation(benchmark_id, env_id, document)
    return scoring


def curves_of(document: dict[str, Any], trials: int, threshold: float | None) -> dict[str, Any]:
    """The page's curve series of an enriched batch document, judged by ``trials`` episodes (``{}``:
    no training episodes to draw; the column's NULL means not derived)."""
    # imported here: the web package's __init__ loads the pages, which load the API, which loads this
    from palaestra.scoreboard.server.web import curves

    return curves.from_episode_batch(document, trials, threshold) or {}


def warm_up() -> None:
    """Build the env catalogue now, not on the first upload."""
    catalogue.entries()
