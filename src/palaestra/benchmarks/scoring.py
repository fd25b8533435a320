"""Benchmark scoring: the 2017 rules (spec §5.3, §5.4), two defects fixed, ``legacy=True`` for 2017 numbers.

This is palaestra's one benchmark-scoring module: the CLI (``palaestra benchmark score``), the
runner and the scoreboard server all call it, through :mod:`palaestra.benchmarks.runs` when they
score a whole run. (Per-env "solved" statistics are a different thing and live in
:mod:`palaestra.solved_stats`.)

Scorers, exactly as in 2017 (``null_score`` 0.0; each returns the :class:`TaskScores` of one
evaluation, with one entry per task of the env):

* :class:`ClipTo01ThenAverage` (``num_episodes=100``): the last ``num_episodes`` *evaluation*
  episodes (type ``'e'``; every episode when there are none) that ended before the *training* budget
  ran out, padded with ``reward_floor``; score = mean of ``clip((r - floor) / (ceiling - floor), 0, 1)``.
* :class:`TotalReward`: every episode before the budget ran out (episode types ignored);
  score = ``clip((mean(r) - floor) / (ceiling - floor), 0, 1)``.
* :class:`RewardPerTime`: ``sum(r) / elapsed training seconds``, clipped the same way; never "solved".

palaestra adds :class:`HumanNormalised` (the Atari benchmarks): ClipTo01ThenAverage's episodes,
neither padded nor clipped, ``(mean(r) - floor) / (ceiling - floor)`` with the random and human
scores of a table of :mod:`palaestra.benchmarks.normalisation` as floor and ceiling.

The budget: the first episode whose cumulative steps exceed ``max_timesteps`` (or whose cumulative
duration exceeds ``max_seconds``) and everything after it are excluded.

The two 2017 defects, fixed unless ``legacy=True``:

1. **Evaluation-episode indexing** (ClipTo01ThenAverage with a budget cut-off): 2017 took the
   *positions* of the allowed episodes within the evaluation-episode list and used them as indices
   into the list of *all* episodes, so with interleaved training and evaluation episodes it scored
   the first k episodes of the run (mostly training ones) instead of the k evaluation episodes. Fixed:
   the evaluation episodes themselves are scored.
2. **"Solved"** (the run aggregate, :func:`benchmark_aggregate_score`): 2017 counted an env as solved
   when ``np.sum(solves)`` was truthy, i.e. when *any* scored episode of *any* task reached the
   ceiling, although its comment says "every episode". Fixed: an env is solved when every one of its
   trials was submitted and, in each, every task scored at least one episode and every scored
   episode reached its task's ceiling. Episodes added as padding (ClipTo01ThenAverage with fewer
   than ``num_episodes`` evaluation episodes) are never "solved" episodes.

palaestra's data additions, also ignored with ``legacy=True`` (a 2017 training directory has none,
so its numbers are the same either way): steps of episodes reset before they ended
(``abandoned_steps`` with their ``abandoned_timestamps``) count toward ``max_timesteps``. The
cumulative step count at the end of a training episode is the steps of the completed training
episodes up to and including it *plus* every abandoned step whose reset happened at or before that
episode's end time, so a run cannot stretch its budget by abandoning episodes. A task with no scored
episode gets ``null_score`` (2017's TotalReward gave NaN).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np

from palaestra.benchmarks import normalisation
from palaestra.episodes import Episodes, EpisodesError

if TYPE_CHECKING:
    from palaestra.benchmarks.registry import Benchmark, Task

logger = logging.getLogger("palaestra.benchmarks")

__all__ = [
    "AggregateScore",
    "BenchmarkScorer",
    "BenchmarkScoringRule",
    "ClipTo01ThenAverage",
    "HumanNormalised",
    "RewardPerTime",
    "TaskScores",
    "TotalReward",
    "benchmark_aggregate_score",
    "env_solved",
    "score_results",
]


class TaskScores(TypedDict):
    """The scores of one evaluation (one training directory): one entry per task of its env."""

    rewards: list[np.ndarray]
    lengths: list[np.ndarray]
    scores: list[float]
    solves: list[np.ndarray]
    timestamps: list[float]
    elapsed_times: list[float]
    initial_reset_timestamp: float


class AggregateScore(TypedDict):
    """:func:`benchmark_aggregate_score`: the 2017 keys, then palaestra's."""

    score: float
    num_envs_solved: int
    start_to_finish_seconds: float
    summed_task_wall_time: float
    summed_training_seconds: float
    #: env_id -> one list of per-task scores per trial (missing trials as null scores)
    env_scores: dict[str, list[list[float]]]
    #: env_id -> solved (by the fixed rule, or 2017's with legacy=True)
    env_solved: dict[str, bool]
    #: env_id -> number of evaluations that were submitted for it (before padding)
    env_trials_submitted: dict[str, int]


class BenchmarkScorer(Protocol):
    """What a scoring rule provides (2017's scorer interface, plus the ``legacy`` switch)."""

    @property
    def null_score(self) -> float: ...

    def score_evaluation(
        self,
        benchmark: Benchmark,
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
    ) -> TaskScores: ...

    def score_episodes(
        self, benchmark: Benchmark, env_id: str, episodes: Episodes, *, legacy: bool = False
    ) -> TaskScores: ...

    def score_benchmark(
        self, benchmark: Benchmark, episode_scores: Mapping[str, Sequence[Sequence[float]]]
    ) -> float: ...


# -- shared helpers --------------------------------------------------------------------------------


def _initial_reset_timestamp(initial_reset_timestamps: Sequence[float] | np.ndarray) -> float:
    return float(min(initial_reset_timestamps)) if len(initial_reset_timestamps) > 0 else 0.0


_FEW_SOURCES = 16


def episode_durations(
    initial_reset_timestamps: Sequence[float] | np.ndarray,
    data_sources: Sequence[int] | np.ndarray,
    timestamps: np.ndarray,
) -> np.ndarray:
    """How long each episode took: the time since the previous episode *of the same source* ended
    (the source's initial reset for its first episode). Episodes whose source has no initial reset
    timestamp get 0, as in 2017."""
    n = len(timestamps)
    durations = np.zeros(n)
    if n == 0:
        return durations
    sources = np.asarray(data_sources, dtype=np.int64)
    if len(sources) != n:
        raise ValueError(f"data_sources has {len(sources)} entries but there are {n} episodes")
    initial = np.asarray(initial_reset_timestamps, dtype=float)
    if len(initial) <= _FEW_SOURCES:  # the usual case: a few monitors, one pass per source (as in 2017)
        for source, initial_ts in enumerate(initial):
            idx = np.flatnonzero(sources == source)
            if len(idx) == n:  # every episode from this source: no gather needed
                durations[0] = timestamps[0] - initial_ts
                durations[1:] = np.diff(timestamps)
            elif len(idx):
                stamps = timestamps[idx]
                durations[idx[0]] = stamps[0] - initial_ts
                durations[idx[1:]] = np.diff(stamps)
        return durations
    order = np.argsort(sources, kind="stable")  # episodes grouped by source, in time order within each
    s_sorted = sources[order]
    t_sorted = timestamps[order]
    first = np.ones(n, dtype=bool)
    first[1:] = s_sorted[1:] != s_sorted[:-1]
    d_sorted = np.empty(n)
    d_sorted[1:] = t_sorted[1:] - t_sorted[:-1]
    valid = (s_sorted >= 0) & (s_sorted < len(initial))
    start = np.zeros(n)
    start[valid] = initial[s_sorted[valid]]
    d_sorted[first] = t_sorted[first] - start[first]
    d_sorted[~valid] = 0.0
    durations[order] = d_sorted
    return durations


def abandoned_steps_before(
    timestamps: np.ndarray,
    abandoned_steps: Sequence[int] | np.ndarray | None,
    abandoned_timestamps: Sequence[float] | np.ndarray | None,
) -> np.ndarray:
    """For each episode end time, the abandoned steps whose reset happened at or before it."""
    if abandoned_steps is None or len(abandoned_steps) == 0:
        return np.zeros(len(timestamps), dtype=np.int64)
    steps = np.asarray(abandoned_steps, dtype=np.int64)
    stamps = np.asarray(abandoned_timestamps if abandoned_timestamps is not None else [], dtype=float)
    if len(stamps) != len(steps):
        raise ValueError(f"{len(steps)} abandoned_steps but {len(stamps)} abandoned_timestamps")
    order = np.argsort(stamps, kind="stable")
    cumulative = np.concatenate([[0], np.cumsum(steps[order])])
    return cumulative[np.searchsorted(stamps[order], timestamps, side="right")]


def _find_cutoff(task: Task, elapsed_timesteps: np.ndarray, elapsed_seconds: np.ndarray) -> int | None:
    """The first episode over the task's budget (2017 ``_find_cutoffs_for_task``), or None."""
    cutoff: int | None = None
    if task.max_timesteps:
        over = elapsed_timesteps > task.max_timesteps
        if over.any():
            cutoff = int(np.argmax(over))
    if task.max_seconds:
        over = elapsed_seconds > task.max_seconds
        if over.any():
            first = int(np.argmax(over))
            cutoff = first if cutoff is None else min(cutoff, first)
    return cutoff


def _normalised(task: Task, values: np.ndarray | float) -> Any:
    return np.clip((values - task.reward_floor) / (task.reward_ceiling - task.reward_floor), 0, 1)


# -- the scorers' shared face --------------------------------------------------------------------


class _EpisodeScorer:
    """What every scorer shares: its null score, the benchmark score (the mean of every task score
    of every trial of every env) and the 2017 ten-column :meth:`score_evaluation`, a thin adapter
    over :meth:`score_episodes`."""

    @property
    def null_score(self) -> float:
        """The score of a missing evaluation."""
        return 0.0

    def score_episodes(
        self, benchmark: Benchmark, env_id: str, episodes: Episodes, *, legacy: bool = False
    ) -> TaskScores:
        raise NotImplementedError

    def score_evaluation(
        self,
        benchmark: Benchmark,
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
        """:meth:`score_episodes` on the 2017 columns (``episode_types`` may run past the episodes,
        as 2017's did: it is cut to them)."""
        n = len(timestamps)
        if episode_types is not None and len(episode_types) < n:
            raise EpisodesError(f"{len(episode_types)} episode_types but there are {n} episodes")
        episodes = Episodes.from_columns(
            episode_lengths,
            episode_rewards,
            timestamps,
            types=None if episode_types is None else episode_types[:n],
            data_sources=data_sources,
            initial_reset_timestamps=initial_reset_timestamps,
            abandoned_steps=abandoned_steps,
            abandoned_timestamps=abandoned_timestamps,
            what="The evaluation",
        )
        return self.score_episodes(benchmark, env_id, episodes, legacy=legacy)

    def score_benchmark(
        self, benchmark: Benchmark, episode_scores: Mapping[str, Sequence[Sequence[float]]]
    ) -> float:
        """The mean of every task score of every trial of every env."""
        return _mean_of_all(episode_scores)


# -- ClipTo01ThenAverage ---------------------------------------------------------------------------


class ClipTo01ThenAverage(_EpisodeScorer):
    """Benchmark scoring rule: the mean clipped score of the last ``num_episodes`` evaluation episodes.

    For each task, take the last ``num_episodes`` (default 100) evaluation episodes before either
    the ``max_seconds`` or ``max_timesteps`` limit, whichever is earlier; if there are fewer, fill in
    the rest with ``reward_floor``. Clip each reward to ``[floor, ceiling]``, rescale to ``[0, 1]``,
    and average. The benchmark score is the mean of all task scores.
    """

    def __init__(self, num_episodes: int = 100) -> None:
        self.num_episodes = num_episodes

    def __repr__(self) -> str:
        return f"ClipTo01ThenAverage(num_episodes={self.num_episodes})"

    def score_episodes(
        self, benchmark: Benchmark, env_id: str, episodes: Episodes, *, legacy: bool = False
    ) -> TaskScores:
        tasks = benchmark.task_specs(env_id)
        initial_reset_timestamp = _initial_reset_timestamp(episodes.initial_reset_timestamps)
        stamps, lengths, rewards = episodes.timestamps, episodes.lengths, episodes.rewards
        abandoned_steps, abandoned_timestamps = episodes.abandoned_steps, episodes.abandoned_timestamps
        n = len(stamps)
        durations = episode_durations(episodes.initial_reset_timestamps, episodes.data_sources, stamps)

        e_idx = np.flatnonzero(episodes.is_evaluation)
        t_idx = np.flatnonzero(~episodes.is_evaluation)
        if len(e_idx) == 0:  # no evaluation episodes: every episode is both
            t_idx = e_idx = np.arange(n)

        elapsed_timesteps = np.cumsum(lengths[t_idx])
        if not legacy:
            elapsed_timesteps = elapsed_timesteps + abandoned_steps_before(
                stamps[t_idx], abandoned_steps, abandoned_timestamps
            )
        elapsed_seconds = np.cumsum(durations[t_idx])

        result = TaskScores(
            rewards=[],
            lengths=[],
            scores=[],
            solves=[],
            timestamps=[],
            elapsed_times=[],
            initial_reset_timestamp=initial_reset_timestamp,
        )
        for task in tasks:
            cutoff = _find_cutoff(task, elapsed_timesteps, elapsed_seconds)
            if cutoff is None:
                allowed = e_idx
            elif legacy:
                # 2017: positions within e_idx, later used as indices into *all* episodes
                allowed = np.flatnonzero(e_idx < t_idx[cutoff])
            else:
                allowed = e_idx[e_idx < t_idx[cutoff]]

            reward = rewards[allowed][-self.num_episodes :]
            length = lengths[allowed][-self.num_episodes :]
            score, solved, reward, length = self._task_score(task, reward, length, legacy)
            result["scores"].append(score)
            result["solves"].append(solved)
            result["rewards"].append(reward)
            result["lengths"].append(length)

            if len(allowed) > 0 and len(t_idx) > 0:
                last = cutoff if cutoff is not None else len(elapsed_seconds) - 1
                result["timestamps"].append(float(stamps[t_idx[last]]))
                result["elapsed_times"].append(float(elapsed_seconds[last]))
            elif len(allowed) > 0:  # only evaluation episodes (2017 raised IndexError here)
                result["timestamps"].append(float(stamps[allowed[-1]]))
                result["elapsed_times"].append(0.0)
            else:  # nothing to score: the last valid timestamp is the start
                result["timestamps"].append(initial_reset_timestamp)
                result["elapsed_times"].append(0.0)
        return result

    def _task_score(
        self, task: Task, reward: np.ndarray, length: np.ndarray, legacy: bool
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """``(score, solved, rewards, lengths)`` of a task's last ``num_episodes`` scored episodes:
        padded with the floor to ``num_episodes``, each clipped to [0, 1], averaged."""
        scored = len(reward)
        if scored < self.num_episodes:
            extra = self.num_episodes - scored
            reward = np.concatenate([reward, np.full(extra, float(task.reward_floor))])
            length = np.concatenate([length, np.zeros(extra, dtype=np.int64)])
        solved = reward >= task.reward_ceiling
        if not legacy:
            solved[scored:] = False  # padding is not a solved episode
        return float(np.mean(_normalised(task, reward))), solved, reward, length


class HumanNormalised(ClipTo01ThenAverage):
    """Atari's rule: the human-normalised mean of the last ``num_episodes`` evaluation episodes.

    The same episodes as :class:`ClipTo01ThenAverage` (the last ``num_episodes`` evaluation episodes
    before the training budget ran out, or the last episodes of any type when there are no
    evaluation ones), but neither padded nor clipped: the task score is
    ``(mean reward - floor) / (ceiling - floor)``, where the benchmark's tasks have as floor and
    ceiling the random and human scores of table ``table`` (:mod:`palaestra.benchmarks.normalisation`),
    so 0 is random play, 1 a human, and an agent can score above 1. A trial without a finished
    episode scores ``null_score`` (0, random play). "Solved": every scored episode reached the human score.
    """

    def __init__(self, table: str = "atari57", num_episodes: int = 100) -> None:
        normalisation.table(table)  # an unknown name fails here, naming the known tables
        super().__init__(num_episodes=num_episodes)
        self.table = table

    def __repr__(self) -> str:
        return f"HumanNormalised(table={self.table!r}, num_episodes={self.num_episodes})"

    def _task_score(
        self, task: Task, reward: np.ndarray, length: np.ndarray, legacy: bool
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        solved = reward >= task.reward_ceiling
        if len(reward) == 0:
            return self.null_score, solved, reward, length
        mean = float(np.mean(reward))
        return (mean - task.reward_floor) / (task.reward_ceiling - task.reward_floor), solved, reward, length


def _mean_of_all(episode_scores: Mapping[str, Sequence[Sequence[float]]]) -> float:
    all_scores = [float(s) for trials in episode_scores.values() for trial in trials for s in trial]
    if not all_scores:
        return math.nan  # np.mean([]) in 2017, without the warning
    return float(np.mean(all_scores))


# -- TotalReward and RewardPerTime -----------------------------------------------------------------

ScoreAndSolved = Callable[["Task", np.ndarray, np.ndarray, bool], "tuple[float, np.ndarray]"]


class BenchmarkScoringRule(_EpisodeScorer):
    """The base of :class:`TotalReward` and :class:`RewardPerTime`: every episode (of any type) before
    the budget ran out is passed to ``score_and_solved_func(task, rewards, elapsed_seconds, legacy)``."""

    def __init__(self, score_and_solved_func: ScoreAndSolved) -> None:
        self.score_and_solved_func = score_and_solved_func

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def score_episodes(
        self, benchmark: Benchmark, env_id: str, episodes: Episodes, *, legacy: bool = False
    ) -> TaskScores:
        tasks = benchmark.task_specs(env_id)
        initial_reset_timestamp = _initial_reset_timestamp(episodes.initial_reset_timestamps)
        stamps, lengths, rewards = episodes.timestamps, episodes.lengths, episodes.rewards
        abandoned_steps, abandoned_timestamps = episodes.abandoned_steps, episodes.abandoned_timestamps
        durations = episode_durations(episodes.initial_reset_timestamps, episodes.data_sources, stamps)

        elapsed_timesteps = np.cumsum(lengths)
        if not legacy:
            elapsed_timesteps = elapsed_timesteps + abandoned_steps_before(
                stamps, abandoned_steps, abandoned_timestamps
            )
        elapsed_seconds = np.cumsum(durations)

        result = TaskScores(
            rewards=[],
            lengths=[],
            scores=[],
            solves=[],
            timestamps=[],
            elapsed_times=[],
            initial_reset_timestamp=initial_reset_timestamp,
        )
        for task in tasks:
            cutoff = _find_cutoff(task, elapsed_timesteps, elapsed_seconds)
            end = len(lengths) if cutoff is None else cutoff
            reward = rewards[:end]
            score, solved = self.score_and_solved_func(task, reward, elapsed_seconds[:end], legacy)
            result["scores"].append(score)
            result["solves"].append(solved)
            result["rewards"].append(reward)
            result["lengths"].append(lengths[:end])
            if np.any(stamps[:end]):
                result["timestamps"].append(float(stamps[end - 1]))
                result["elapsed_times"].append(float(elapsed_seconds[end - 1]))
            else:  # no valid episode: the last valid timestamp is the start
                result["timestamps"].append(initial_reset_timestamp)
                result["elapsed_times"].append(0.0)
        return result


def total_reward_from_episode_rewards(
    task: Task, reward: np.ndarray, elapsed_seconds: np.ndarray, legacy: bool = False
) -> tuple[float, np.ndarray]:
    """TotalReward: the mean episode reward, normalised and clipped to [0, 1]."""
    solved = reward >= task.reward_ceiling
    if len(reward) == 0:
        if not legacy:
            return 0.0, solved
        with warnings.catch_warnings():  # 2017: np.mean([]) -> nan
            warnings.simplefilter("ignore", RuntimeWarning)
            return float(_normalised(task, np.mean(reward))), solved
    return float(_normalised(task, np.mean(reward))), solved


class TotalReward(BenchmarkScoringRule):
    """Score = ``clip((mean episode reward - floor) / (ceiling - floor), 0, 1)`` over the episodes
    before the budget ran out."""

    def __init__(self) -> None:
        super().__init__(total_reward_from_episode_rewards)


def reward_per_time_from_episode_rewards(
    task: Task, reward: np.ndarray, elapsed_seconds: np.ndarray, legacy: bool = False
) -> tuple[float, np.ndarray]:
    """RewardPerTime: total reward / elapsed seconds, normalised and clipped; never solved."""
    solved = np.zeros(len(reward))
    reward_per_second = float(np.sum(reward) / elapsed_seconds[-1]) if np.any(elapsed_seconds) else 0.0
    return float(_normalised(task, reward_per_second)), solved


class RewardPerTime(BenchmarkScoringRule):
    """Score = ``clip((total reward / training seconds - floor) / (ceiling - floor), 0, 1)``."""

    def __init__(self) -> None:
        super().__init__(reward_per_time_from_episode_rewards)


# -- one evaluation from a results mapping ---------------------------------------------------------


def score_results(
    benchmark: Benchmark, env_id: str, results: Mapping[str, Any], legacy: bool = False
) -> TaskScores:
    """Score a results-like mapping (what :func:`palaestra.load_results` returns, or an uploaded
    episode batch) against ``env_id``'s tasks.

    Needs ``episode_lengths``, ``episode_rewards`` and ``timestamps``; ``episode_types``,
    ``data_sources`` (default: all from one source), ``initial_reset_timestamps`` (default:
    ``[initial_reset_timestamp]``, else the first timestamp), ``abandoned_steps`` and
    ``abandoned_timestamps`` are optional.
    """
    timestamps = results["timestamps"]
    initial = results.get("initial_reset_timestamps")
    if initial is None:
        single = results.get("initial_reset_timestamp")
        if single is None and len(timestamps):
            single = timestamps[0]
        initial = [] if single is None else [single]
    sources = results.get("data_sources")
    if sources is None:
        sources = [0] * len(timestamps)
    episodes = Episodes.from_columns(
        results["episode_lengths"],
        results["episode_rewards"],
        timestamps,
        types=results.get("episode_types"),
        data_sources=sources,
        initial_reset_timestamps=initial,
        abandoned_steps=results.get("abandoned_steps"),
        abandoned_timestamps=results.get("abandoned_timestamps"),
        what="The evaluation",
    )
    return benchmark.scorer.score_episodes(benchmark, env_id, episodes, legacy=legacy)


# -- the run aggregate (§5.4) ----------------------------------------------------------------------


def _legacy_solved_count(solves: Sequence[np.ndarray]) -> float:
    # 2017: np.sum(result['solves']); summed per task so that tasks of different lengths also work
    return float(sum(np.sum(s) for s in solves))


def env_solved(result: TaskScores) -> bool:
    """The fixed rule for one evaluation: every task scored an episode and every scored episode
    reached the ceiling."""
    return bool(result["solves"]) and all(len(s) > 0 and bool(np.all(s)) for s in result["solves"])


def benchmark_aggregate_score(
    benchmark: Benchmark,
    env_id_to_benchmark_results: Mapping[str, Sequence[TaskScores]],
    legacy: bool = False,
) -> AggregateScore:
    """Aggregate a benchmark run: ``{env_id: [one TaskScores per trial, ...]}``.

    For each env of the benchmark, the first ``trials`` evaluations count (extra ones are ignored,
    missing ones score ``null_score`` for every task and make the env unsolved). Returns the 2017
    keys ``score`` (the scorer's mean over every task score), ``num_envs_solved``,
    ``start_to_finish_seconds``, ``summed_task_wall_time`` and ``summed_training_seconds``, then
    ``env_scores``, ``env_solved`` and ``env_trials_submitted``.
    """
    scores: dict[str, list[list[float]]] = {}
    solves: dict[str, Any] = {}
    submitted: dict[str, int] = {}
    start_times: list[float] = []
    end_times: list[float] = []
    elapsed_times: list[float] = []
    for env_id in benchmark.env_id_order:
        task_list = benchmark.task_specs(env_id)
        num_trials = task_list[0].trials
        results = list(env_id_to_benchmark_results.get(env_id, []))
        submitted[env_id] = len(results)
        env_scores = scores.setdefault(env_id, [])
        for trial in range(num_trials):
            if trial < len(results):
                result = results[trial]
                env_scores.append([float(s) for s in result["scores"]])
                solved = solves.setdefault(env_id, True)
                if legacy:
                    solves[env_id] = solved and _legacy_solved_count(result["solves"])
                else:
                    solves[env_id] = bool(solved) and env_solved(result)
                start_times.append(float(result["initial_reset_timestamp"]))
                end_times.append(float(max(result["timestamps"])))
                elapsed_times.extend(float(t) for t in result["elapsed_times"])
            else:
                env_scores.append([benchmark.scorer.null_score for _ in task_list])
                solves[env_id] = False

    return AggregateScore(
        score=benchmark.score_benchmark(scores),
        num_envs_solved=len([s for s in solves.values() if s]),
        start_to_finish_seconds=(max(end_times) - min(start_times)) if end_times and start_times else 0.0,
        summed_task_wall_time=float(
            np.sum([end - start for end, start in zip(end_times, start_times, strict=True)])
        ),
        summed_training_seconds=float(np.sum(elapsed_times)),
        env_scores=scores,
        env_solved={env_id: bool(s) for env_id, s in solves.items()},
        env_trials_submitted=submitted,
    )

