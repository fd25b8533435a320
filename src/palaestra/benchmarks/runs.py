"""A benchmark run as a whole: its folders on disk, and scoring all of it at once.

- :func:`trial_directory`: where trial ``t`` of env ``E`` is recorded, ``{out}/{E}-{t}`` (the 2017
  ``benchmark_runner``'s layout; the runner writes it);
- :func:`training_directories`: the one walker of a run's folders, in natural order (``E-2`` before
  ``E-10``), so that trials are read in trial order by everyone who walks a run: the scorer here,
  the upload client and ``palaestra benchmark run``;
- :func:`score_benchmark_run`: the run's score from its evaluations; :func:`aggregate_benchmark_run`
  the same from their ``TaskScores`` without the bootstrap, and :func:`run_statistics` the bootstrap
  (the scoreboard server stores each evaluation's TaskScores and bootstraps after the upload);
- :func:`benchmark_score_from_local`: the same from a run's folders (``palaestra benchmark score``).

The per-evaluation rules and the 2017 aggregate are :mod:`palaestra.benchmarks.scoring`'s; this module
puts them together with the registry and the interval statistics.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from palaestra import catalogue
from palaestra.benchmarks import normalisation
from palaestra.benchmarks.registry import Benchmark, benchmark_spec
from palaestra.benchmarks.scoring import HumanNormalised, TaskScores, benchmark_aggregate_score, score_results
from palaestra.benchmarks.statistics import (
    DEFAULT_PROFILE_REPS,
    DEFAULT_REPS,
    interval_estimates,
    performance_profile,
)
from palaestra.errors import ResultsError
from palaestra.monitoring.files import detect_training_manifests
from palaestra.monitoring.results import load_results

logger = logging.getLogger("palaestra.benchmarks")

__all__ = [
    "aggregate_benchmark_run",
    "benchmark_score_from_local",
    "normalisation_of",
    "profile_thresholds",
    "run_statistics",
    "score_benchmark_run",
    "training_directories",
    "trial_directory",
]


# -- the run's folders -----------------------------------------------------------------------------


def trial_directory(out_dir: str, env_id: str, trial: int) -> str:
    """The training directory of trial ``trial`` of ``env_id`` in a run recorded under ``out_dir``."""
    return os.path.join(out_dir, f"{env_id}-{trial}")


def _natural_key(path: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def training_directories(root: str | os.PathLike[str]) -> list[str]:
    """Every directory under ``root`` (``root`` included) that holds a training manifest, in natural
    order of their paths below ``root``; :class:`~palaestra.errors.ResultsError` if ``root`` is not a
    directory."""
    top = os.fspath(root)
    if not os.path.isdir(top):
        raise ResultsError(f"Training directory {top} does not exist or is not a directory")
    found = [name for name, _, files in os.walk(top) if detect_training_manifests(name, files=files)]
    return sorted(found, key=lambda path: _natural_key(os.path.relpath(path, top)))


# -- scoring a whole run ---------------------------------------------------------------------------


def normalisation_of(benchmark: Benchmark) -> normalisation.NormalisationTable | None:
    """The score table a benchmark's scorer human-normalises with (``None``: floor/ceiling scores)."""
    scorer = benchmark.scorer
    return normalisation.table(scorer.table) if isinstance(scorer, HumanNormalised) else None


def profile_thresholds(benchmark: Benchmark) -> np.ndarray:
    """The thresholds tau of a benchmark's performance profiles: 0 to 8 in steps of 0.1 for
    human-normalised scores (rliable's Atari figures; agents score far above 1 on some games), 0 to 1
    in steps of 0.02 for scores clipped to [0, 1]."""
    if normalisation_of(benchmark) is not None:
        return np.linspace(0.0, 8.0, 81)
    return np.linspace(0.0, 1.0, 51)


def _task_key(env_id: str, index: int, count: int) -> str:
    return env_id if count == 1 else f"{env_id}[{index}]"


def score_benchmark_run(
    benchmark_id: str | Benchmark,
    evaluations: Sequence[tuple[str, Mapping[str, Any]]],
    legacy: bool = False,
    reps: int | None = None,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Score a benchmark run from its evaluations' episode batches.

    ``evaluations`` is a list of ``(env_id, results)``, one per trial, in trial order per env;
    ``results`` is a results-like mapping (see :func:`~palaestra.benchmarks.scoring.score_results`).
    An env id that is not in the benchmark raises :class:`~palaestra.errors.Unregistered`.

    Returns a JSON-ready dict:

    * ``benchmark_id``, ``legacy``;
    * the 2017 aggregate: ``score``, ``num_envs_solved``, ``start_to_finish_seconds``,
      ``summed_task_wall_time``, ``summed_training_seconds``;
    * ``tasks``: one entry per task, in benchmark order: ``key`` (the env id, or ``env_id[i]`` when
      an env has several tasks), ``env_id``, ``task_index``, ``trials``, ``reward_floor``,
      ``reward_ceiling``, ``max_timesteps``, ``max_seconds``, ``trial_scores`` (one per trial,
      missing trials as 0.0), ``mean_score``, ``trials_submitted``, ``env_solved``, ``available``;
    * ``statistics``: ``iqm``, ``mean``, ``median``, ``optimality_gap``, each
      ``{value, low, high, confidence}`` (stratified bootstrap 95% percentile intervals over the
      trial scores of every task), plus ``num_runs``, ``reps`` and ``seed``. ``mean`` is the mean
      over tasks of each task's mean (rliable's), while ``score`` is 2017's mean over every
      task-trial score; they differ when tasks have different numbers of trials. The intervals are
      left out when a score is NaN (only possible with ``legacy=True``); ``profile``, the performance
      profile (:func:`~palaestra.benchmarks.statistics.performance_profile` at
      :func:`profile_thresholds`, ``{taus, fraction, low, high, confidence}``); for a human-normalised
      benchmark, ``normalisation``: the table's name, version and source.
    """
    benchmark = benchmark_spec(benchmark_id) if isinstance(benchmark_id, str) else benchmark_id
    scored = [(env_id, score_results(benchmark, env_id, results, legacy=legacy)) for env_id, results in evaluations]
    out = aggregate_benchmark_run(benchmark, scored, legacy=legacy, reps=reps, seed=seed)
    out["statistics"].update(run_statistics(benchmark, out))
    return out


def aggregate_benchmark_run(
    benchmark: Benchmark,
    evaluations: Sequence[tuple[str, TaskScores]],
    legacy: bool = False,
    reps: int | None = None,
    seed: int | None = 0,
) -> dict[str, Any]:
    """:func:`score_benchmark_run`'s dict from each evaluation's ``TaskScores`` (``(env_id, scores)``,
    in trial order per env), without the bootstrap: ``statistics`` holds ``num_runs``, ``reps``,
    ``seed`` (and ``normalisation``); :func:`run_statistics` adds the intervals and the profile."""
    per_env: dict[str, list[TaskScores]] = {}
    for env_id, scores in evaluations:
        per_env.setdefault(env_id, []).append(scores)
    aggregate = benchmark_aggregate_score(benchmark, per_env, legacy=legacy)

    tasks_out: list[dict[str, Any]] = []
    for env_id in benchmark.env_id_order:
        specs = benchmark.task_specs(env_id)
        trial_lists = aggregate["env_scores"][env_id]
        available = catalogue.unavailable_reason(env_id, import_probe=True) is None
        for index, task in enumerate(specs):
            trial_scores = [trial[index] for trial in trial_lists]
            tasks_out.append(
                {
                    "key": _task_key(env_id, index, len(specs)),
                    "env_id": env_id,
                    "task_index": index,
                    **task.to_dict(),
                    "trial_scores": trial_scores,
                    "mean_score": float(np.mean(trial_scores)),
                    "trials_submitted": aggregate["env_trials_submitted"][env_id],
                    "env_solved": aggregate["env_solved"].get(env_id, False),
                    "available": available,
                }
            )
    statistics: dict[str, Any] = {
        "num_runs": sum(len(t["trial_scores"]) for t in tasks_out),
        "reps": DEFAULT_REPS if reps is None else reps,
        "seed": seed,
    }
    scores_table = normalisation_of(benchmark)
    if scores_table is not None:
        statistics["normalisation"] = scores_table.describe()
    return {
        "benchmark_id": benchmark.id,
        "legacy": legacy,
        "score": float(aggregate["score"]),
        "num_envs_solved": aggregate["num_envs_solved"],
        "start_to_finish_seconds": float(aggregate["start_to_finish_seconds"]),
        "summed_task_wall_time": float(aggregate["summed_task_wall_time"]),
        "summed_training_seconds": float(aggregate["summed_training_seconds"]),
        "tasks": tasks_out,
        "statistics": statistics,
    }


def run_statistics(benchmark: Benchmark, scored: Mapping[str, Any]) -> dict[str, Any]:
    """The stratified-bootstrap intervals (``iqm``, ``mean``, ``median``, ``optimality_gap``) and the
    performance ``profile`` of an :func:`aggregate_benchmark_run` dict's trial scores, with its
    ``reps`` and ``seed``; empty when a score is not finite (NaN: only with ``legacy=True``; a stored
    score holds it as null)."""
    table = {str(t["key"]): list(t["trial_scores"]) for t in scored["tasks"]}
    finite = all(isinstance(s, int | float) and math.isfinite(s) for v in table.values() for s in v)
    if not table or not finite:
        return {}
    reps, seed = scored["statistics"]["reps"], scored["statistics"]["seed"]
    out: dict[str, Any] = {
        name: interval.to_dict() for name, interval in interval_estimates(table, reps=reps, seed=seed).items()
    }
    profile = performance_profile(
        table, taus=profile_thresholds(benchmark), reps=min(reps, DEFAULT_PROFILE_REPS), seed=seed
    )
    out["profile"] = profile.to_dict()
    return out


def benchmark_score_from_local(
    benchmark_id: str | Benchmark,
    training_dir: str | os.PathLike[str],
    legacy: bool = False,
    reps: int | None = None,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Score the benchmark run stored under ``training_dir``: one evaluation per directory that holds
    a manifest (as the runner lays them out, ``{env_id}-{trial}``), in :func:`training_directories`'
    order.

    Directories of env ids that are not in the benchmark are skipped with a warning. Returns
    :func:`score_benchmark_run`'s dict, plus ``directories`` (the scored ones) and ``skipped``.
    """
    benchmark = benchmark_spec(benchmark_id) if isinstance(benchmark_id, str) else benchmark_id
    evaluations: list[tuple[str, Mapping[str, Any]]] = []
    used: list[str] = []
    skipped: list[str] = []
    for directory in training_directories(training_dir):
        results = load_results(directory)
        env_id = results["env_info"]["env_id"]
        if env_id not in benchmark.env_ids:
            logger.warning(
                "Skipping %s: its env %s is not part of benchmark %s", directory, env_id, benchmark.id
            )
            skipped.append(directory)
            continue
        evaluations.append((env_id, results))
        used.append(directory)
    scored = score_benchmark_run(benchmark, evaluations, legacy=legacy, reps=reps, seed=seed)
    scored["directories"] = used
    scored["skipped"] = skipped
    return scored
