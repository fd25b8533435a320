"""Benchmark registration: ``Task``, ``Benchmark`` and the registry (spec §5.1), 2017 semantics.

A benchmark is a list of tasks; a task is an env id with a number of trials, a training budget
(``max_timesteps`` and/or ``max_seconds``) and the reward floor and ceiling that normalise its score.
Task dicts given to :func:`register_benchmark` default to ``reward_floor=0`` and
``reward_ceiling=100`` as in 2017. Every benchmark registered with ``add_view=True`` (the default)
also gets a view of the same name in its ``view_group`` ("Miscellaneous" when not given).

palaestra's additions: ``Task.available`` (can the env id be made in this installation),
``Benchmark.equivalent_of`` (the 2017 benchmark a current one re-creates with today's env ids),
``Benchmark.env_id_order`` (env ids in task order; ``env_ids`` stays the 2017 ``set``), and
re-registering an id replaces the benchmark and its view instead of listing the view twice.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from palaestra import catalogue
from palaestra.benchmarks.scoring import BenchmarkScorer, TaskScores, score_results
from palaestra.episodes import Episodes
from palaestra.errors import Error, Unregistered, UnregisteredBenchmark

logger = logging.getLogger("palaestra.benchmarks")

DEFAULT_REWARD_FLOOR = 0.0
DEFAULT_REWARD_CEILING = 100.0
DEFAULT_VIEW_GROUP = "Miscellaneous"


@dataclass(frozen=True)
class Task:
    """One env of a benchmark: its trials, training budget and score normalisation."""

    env_id: str
    trials: int
    max_timesteps: int | None
    max_seconds: float | None
    reward_floor: float = DEFAULT_REWARD_FLOOR
    reward_ceiling: float = DEFAULT_REWARD_CEILING

    def __post_init__(self) -> None:
        object.__setattr__(self, "reward_floor", float(self.reward_floor))
        object.__setattr__(self, "reward_ceiling", float(self.reward_ceiling))
        if self.max_timesteps is None and self.max_seconds is None:
            raise Error(f"Must provide at least one of max_timesteps and max_seconds for {self}")
        if not isinstance(self.trials, int) or self.trials < 1:
            raise Error(f"{self}: trials must be a positive integer, not {self.trials!r}")
        if self.reward_floor == self.reward_ceiling:
            raise Error(f"{self}: reward_floor and reward_ceiling are equal, so no score can be normalised")

    def __str__(self) -> str:
        return (
            f"Task<env_id={self.env_id} trials={self.trials} max_timesteps={self.max_timesteps} "
            f"max_seconds={self.max_seconds} reward_floor={self.reward_floor} "
            f"reward_ceiling={self.reward_ceiling}>"
        )

    @property
    def available(self) -> bool:
        """Whether ``env_id`` can be made here (registered, and its entry point imports)."""
        return catalogue.unavailable_reason(self.env_id, import_probe=True) is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "trials": self.trials,
            "max_timesteps": self.max_timesteps,
            "max_seconds": self.max_seconds,
            "reward_floor": self.reward_floor,
            "reward_ceiling": self.reward_ceiling,
        }


def _as_task(task: Task | Mapping[str, Any]) -> Task:
    if isinstance(task, Task):
        return task
    if "env_id" not in task or "trials" not in task:
        raise Error(f"A benchmark task needs 'env_id' and 'trials'; got {dict(task)!r}")
    return Task(
        env_id=task["env_id"],
        trials=task["trials"],
        max_timesteps=task.get("max_timesteps"),
        max_seconds=task.get("max_seconds"),
        reward_floor=task.get("reward_floor", DEFAULT_REWARD_FLOOR),
        reward_ceiling=task.get("reward_ceiling", DEFAULT_REWARD_CEILING),
    )


class Benchmark:
    """A scored set of tasks (``scorer`` is one of :mod:`palaestra.benchmarks.scoring`'s rules).

    ``equivalent_of`` names the 2017 benchmark that this one re-creates with today's env ids.
    """

    def __init__(
        self,
        id: str,
        scorer: BenchmarkScorer,
        tasks: Iterable[Task | Mapping[str, Any]],
        description: str | None = None,
        name: str | None = None,
        view_group: str | None = None,
        equivalent_of: str | None = None,
    ) -> None:
        self.id = id
        self.scorer = scorer
        self.description = description
        self.name = name
        self.view_group = view_group
        self.equivalent_of = equivalent_of
        self.tasks = [_as_task(t) for t in tasks]
        self.env_ids = {t.env_id for t in self.tasks}
        self.env_id_order = list(dict.fromkeys(t.env_id for t in self.tasks))

    def __repr__(self) -> str:
        return f"Benchmark<id={self.id} scorer={type(self.scorer).__name__} tasks={len(self.tasks)}>"

    def task_specs(self, env_id: str) -> list[Task]:
        """The tasks of ``env_id``, in order; :class:`~palaestra.errors.Unregistered` if it has none."""
        results = [task for task in self.tasks if task.env_id == env_id]
        if not results:
            raise Unregistered(
                f"No task with env_id {env_id} registered for benchmark {self.id} "
                f"(its env ids are: {', '.join(self.env_id_order)})"
            )
        return results

    def unavailable_env_ids(self) -> list[str]:
        """Env ids of this benchmark that cannot be made in this installation."""
        return [env_id for env_id in self.env_id_order if catalogue.unavailable_reason(env_id, import_probe=True) is not None]

    def unavailable_reasons(self) -> dict[str, str]:
        """``{env_id: why it cannot be made here}`` for this benchmark's unavailable env ids."""
        reasons = {env_id: catalogue.unavailable_reason(env_id, import_probe=True) for env_id in self.env_id_order}
        return {env_id: why for env_id, why in reasons.items() if why is not None}

    @property
    def available(self) -> bool:
        """Whether every env id of this benchmark is registered here."""
        return not self.unavailable_env_ids()

    def score_evaluation(
        self,
        env_id: str,
        data_sources: Sequence[int],
        initial_reset_timestamps: Sequence[float],
        episode_lengths: Sequence[int],
        episode_rewards: Sequence[float],
        episode_types: Sequence[str] | None,
        timestamps: Sequence[float],
        *,
        abandoned_steps: Sequence[int] | None = None,
        abandoned_timestamps: Sequence[float] | None = None,
        legacy: bool = False,
    ) -> TaskScores:
        """Score one evaluation (one training directory) against every task of ``env_id``."""
        return self.scorer.score_evaluation(
            self,
            env_id,
            data_sources,
            initial_reset_timestamps,
            episode_lengths,
            episode_rewards,
            episode_types,
            timestamps,
            abandoned_steps=abandoned_steps,
            abandoned_timestamps=abandoned_timestamps,
            legacy=legacy,
        )

    def score_episodes(self, env_id: str, episodes: Episodes, legacy: bool = False) -> TaskScores:
        """The :class:`TaskScores` of one evaluation's :class:`~palaestra.episodes.Episodes`."""
        return self.scorer.score_episodes(self, env_id, episodes, legacy=legacy)

    def score_results(self, env_id: str, results: Mapping[str, Any], legacy: bool = False) -> TaskScores:
        """:meth:`score_evaluation` on what :func:`palaestra.load_results` (or an episode batch) holds."""
        return score_results(self, env_id, results, legacy=legacy)

    def score_benchmark(self, score_map: Mapping[str, Sequence[Sequence[float]]]) -> float:
        """The benchmark score of ``{env_id: [per-trial list of per-task scores]}``."""
        return self.scorer.score_benchmark(self, score_map)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (for ``palaestra benchmark list --json`` and the scoreboard)."""
        return {
            "id": self.id,
            "name": self.name or self.id,
            "description": self.description,
            "view_group": self.view_group or DEFAULT_VIEW_GROUP,
            "scorer": type(self.scorer).__name__,
            "equivalent_of": self.equivalent_of,
            "tasks": [t.to_dict() for t in self.tasks],
        }


class BenchmarkView(NamedTuple):
    """Several benchmarks shown as one table (2017 ``BenchmarkView``)."""

    name: str
    benchmarks: list[str]
    primary: str
    group: str


class Registry:
    """Registered benchmarks and their views, in registration order."""

    def __init__(self) -> None:
        self.benchmarks: collections.OrderedDict[str, Benchmark] = collections.OrderedDict()
        self.benchmark_views: collections.OrderedDict[str, BenchmarkView] = collections.OrderedDict()
        self.benchmark_view_groups: collections.OrderedDict[str, list[BenchmarkView]] = (
            collections.OrderedDict()
        )

    def register_benchmark_view(
        self, name: str, benchmarks: list[str], primary: str, group: str | None = None
    ) -> BenchmarkView:
        """Show ``benchmarks`` as one table named ``name`` (``primary`` is the one to submit to)."""
        if not name.replace("_", "").replace("-", "").isalnum():
            raise Error(f"Name of benchmark view {name!r} must be a combination of letters, numbers, - and _")
        if primary not in benchmarks:
            raise Error(
                f"Benchmark view {name!r}: primary {primary!r} is not one of its benchmarks {benchmarks}"
            )
        view = BenchmarkView(
            name=name, benchmarks=list(benchmarks), primary=primary, group=group or DEFAULT_VIEW_GROUP
        )
        old = self.benchmark_views.get(name)
        if old is not None:
            self.benchmark_view_groups[old.group] = [
                v for v in self.benchmark_view_groups[old.group] if v.name != name
            ]
            if not self.benchmark_view_groups[old.group]:
                del self.benchmark_view_groups[old.group]
        self.benchmark_views[name] = view
        self.benchmark_view_groups.setdefault(view.group, []).append(view)
        return view

    def register_benchmark(
        self,
        id: str,
        scorer: BenchmarkScorer,
        tasks: Iterable[Task | Mapping[str, Any]],
        description: str | None = None,
        name: str | None = None,
        add_view: bool = True,
        view_group: str | None = None,
        equivalent_of: str | None = None,
    ) -> Benchmark:
        """Register (or replace) benchmark ``id``; returns it."""
        benchmark = Benchmark(
            id=id,
            scorer=scorer,
            tasks=tasks,
            description=description,
            name=name,
            view_group=view_group,
            equivalent_of=equivalent_of,
        )
        if id in self.benchmarks:
            logger.debug("Replacing the registered benchmark %s", id)
        self.benchmarks[id] = benchmark
        if add_view:
            self.register_benchmark_view(
                name=name if name is not None else id, benchmarks=[id], primary=id, group=view_group
            )
        return benchmark

    def benchmark_spec(self, id: str) -> Benchmark:
        """The benchmark registered as ``id``; :class:`~palaestra.errors.UnregisteredBenchmark` if none."""
        try:
            return self.benchmarks[id]
        except KeyError:
            raise UnregisteredBenchmark(
                f"No registered benchmark with id: {id} "
                "(see `palaestra benchmark list` for the registered ids)"
            ) from None

    def all(self) -> list[Benchmark]:
        return list(self.benchmarks.values())


registry = Registry()
register_benchmark = registry.register_benchmark
register_benchmark_view = registry.register_benchmark_view
benchmark_spec = registry.benchmark_spec
