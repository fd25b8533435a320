"""Benchmarks: the 2017 registry and scorers, statistics across runs, and a runner.

* :class:`Task`, :class:`Benchmark`, :func:`register_benchmark`, :func:`benchmark_spec` and
  :data:`registry`: the 2017 registration semantics (spec §5.1); importing this package registers
  the twelve 2017 benchmarks and their current equivalents (:mod:`.definitions`).
* :mod:`.scoring` (also importable as ``scorers``): ``ClipTo01ThenAverage``, ``TotalReward``,
  ``RewardPerTime`` and the run aggregate.
* :mod:`.runs`: a run's folders (:func:`~.runs.training_directories`, the one walker, in natural
  order) and scoring a whole run: :func:`score_benchmark_run` (the scoreboard server's hook) and
  :func:`benchmark_score_from_local`.
* :mod:`.statistics`: IQM / mean / median / optimality gap with stratified bootstrap intervals,
  performance profiles.
* :mod:`.normalisation`: the random and human Atari score tables (``atari57``, ``dqn2015``) and the
  Atari env id -> game map; :class:`HumanNormalised` scores ``Atari-57``, ``Atari-100k``, ``Atari-5``.
* :mod:`.runner`: :func:`~palaestra.benchmarks.runner.run_benchmark`, every task x trial under the
  Monitor in worker processes or as Ray tasks.
"""

from __future__ import annotations

from palaestra.benchmarks import normalisation, runs, scoring
from palaestra.benchmarks import scoring as scorers
from palaestra.benchmarks.definitions import BENCHMARKS_2017, CURRENT_EQUIVALENTS, register_all
from palaestra.benchmarks.registry import (
    Benchmark,
    BenchmarkView,
    Registry,
    Task,
    benchmark_spec,
    register_benchmark,
    register_benchmark_view,
    registry,
)
from palaestra.benchmarks.runs import benchmark_score_from_local, score_benchmark_run
from palaestra.benchmarks.scoring import (
    ClipTo01ThenAverage,
    HumanNormalised,
    RewardPerTime,
    TotalReward,
    benchmark_aggregate_score,
)

register_all()

__all__ = [
    "BENCHMARKS_2017",
    "CURRENT_EQUIVALENTS",
    "Benchmark",
    "BenchmarkView",
    "ClipTo01ThenAverage",
    "HumanNormalised",
    "Registry",
    "RewardPerTime",
    "Task",
    "TotalReward",
    "benchmark_aggregate_score",
    "benchmark_score_from_local",
    "benchmark_spec",
    "normalisation",
    "register_benchmark",
    "register_benchmark_view",
    "registry",
    "runs",
    "score_benchmark_run",
    "scorers",
    "scoring",
]
