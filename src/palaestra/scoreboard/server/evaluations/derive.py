"""An evaluation, derived once at ingest and stored with it so that pages and ``/v1`` never recompute
it from the episode batch:

- the "solved" statistics against its env's ``trials`` and ``reward_threshold`` (by the registry of
  the gym that recorded it), over :mod:`palaestra.solved_stats`;
- the page's learning-curve series (:func:`palaestra.curves.from_episode_batch`:
  training episodes, at display resolution), the one curve meaning of the evaluation page, the env
  page's chart, compare and the algorithm page;
- for an evaluation of a benchmark run, its benchmark's per-task ``TaskScores``, which the run's
  aggregate is computed from (:func:`palaestra.scoreboard.server.evaluations.benchmarking.score_run`).

``palaestra server rescore`` (:mod:`.rescore`) derives the same again for evaluations already stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from palaestra import catalogue, solved_stats
from palaestra.episodes import Episodes
from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.core.database import RawJSON
from palaestra.scoreboard.server.evaluations import benchmarking

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
        """The score's columns of :class:`palaestra.scoreboard.server.tables.scores.Evaluation` (named as its
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
    batch: protocol.EpisodeBatch | Episodes | None, env_id: str | None, gym_version: str | None = None
) -> EvaluationScoring:
    """Score an evaluation's episodes against its env's ``trials`` and ``reward_threshold``, by the
    registry of the gym that recorded it (:func:`palaestra.catalogue.solving_criteria`)."""
    entry = catalogue.lookup(env_id) if env_id else None
    trials, threshold = (
        catalogue.solving_criteria(env_id, gym_version) if env_id else (solved_stats.DEFAULT_TRIALS, None)
    )
    episodes = _episodes_of(batch)
    stats = solved_stats.solved_stats(episodes, trials=trials, reward_threshold=threshold)
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
    of benchmark ``benchmark_id``, its TaskScores, all from one :class:`~palaestra.episodes.Episodes`
    read of the batch."""
    if batch is None:
        return score_batch(None, env_id, gym_version)
    episodes = Episodes.from_batch(batch)
    scoring = score_batch(episodes, env_id, gym_version)
    scoring.curves = curves_of(episodes, scoring.score.trials, scoring.score.reward_threshold)
    if benchmark_id is not None:
        scoring.benchmark_score = benchmarking.score_evaluation(benchmark_id, env_id, episodes)
    return scoring


def _episodes_of(batch: protocol.EpisodeBatch | Episodes | None) -> Episodes:
    if isinstance(batch, Episodes):
        return batch
    return Episodes.from_batch(batch) if batch is not None else Episodes.from_columns([], [], [])


def curves_of(episodes: Episodes | dict[str, Any], trials: int, threshold: float | None) -> dict[str, Any]:
    """The page's curve series of an evaluation's episodes (or of an enriched batch document), judged
    by ``trials`` episodes (``{}``: no training episodes to draw; the column's NULL means not derived)."""
    # imported here: the web package's __init__ loads the pages, which load the API, which loads this
    from palaestra import curves

    return curves.from_episode_batch(episodes, trials, threshold) or {}


def warm_up() -> None:
    """Build the env catalogue now, not on the first upload."""
    catalogue.entries()
