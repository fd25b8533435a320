"""Queries and statistics for the benchmark pages.

Benchmark definitions come from :mod:`palaestra.benchmarks` (benchmarks that have runs but no
definition here are listed too). A run's scores are what the server stored on ingest
(``benchmark_runs.score``: :func:`palaestra.benchmarks.runs.score_benchmark_run`'s dict, with
per-task trial scores and IQM/mean bootstrap intervals). The benchmark page adds, per algorithm
(the trial scores of all its runs pooled per task), rliable's set from
:mod:`palaestra.benchmarks.statistics`: per-task scores, IQM / mean / median / optimality gap, each
with a 95% stratified-bootstrap interval where one exists (no interval with one score per task), and
the performance profile; and the probability of improvement between two runs chosen on the page.
Computed results are cached, since stored runs never change.
Benchmarks are named by their ids, as the CLI names them (``palaestra benchmark run ClassicControl2-v1``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra.benchmarks import Benchmark, registry, statistics
from palaestra.benchmarks.runs import profile_thresholds
from palaestra.benchmarks.statistics import Interval
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, Evaluation
from palaestra.scoreboard.server.web.benchmark_texts import normalisation_text, scorer_text
from palaestra.scoreboard.server.web.compare import PALETTE
from palaestra.scoreboard.server.web.page_cache import cached, of_database
from palaestra.scoreboard.server.web.views import (
    PAGE_SIZE,
    AggregateRow,
    BenchmarkDetail,
    BenchmarkSummary,
    Improvement,
    Page,
    RunDetail,
    RunEvaluation,
    RunRow,
    RunTask,
    TaskView,
    clamp_page,
)

logger = logging.getLogger("palaestra.scoreboard.web")

#: Bootstrap replicates for the per-algorithm intervals on the benchmark page.
AGGREGATE_REPS = 5000
#: Replicates and thresholds of the performance profiles (scores clipped to [0, 1]; a human-normalised
#: benchmark's go to 8: :func:`palaestra.benchmarks.runs.profile_thresholds`).
PROFILE_REPS = 1000
PROFILE_TAUS = np.linspace(0.0, 1.0, 51)
#: rliable's aggregate metrics, in the order the page shows them.
METRIC_LABELS = {"iqm": "IQM", "mean": "Mean", "median": "Median", "optimality_gap": "Optimality gap"}
#: The most runs the probability-of-improvement form offers.
MAX_RUN_CHOICES = 200
#: (run id, its score, its kept bootstrap) -> (the statistics to show, whether they are being computed)
StatisticsOf = Callable[[str, dict[str, Any], dict[str, Any] | None], tuple[dict[str, Any], bool]]


def _spec(benchmark_id: str) -> Benchmark | None:
    return registry.benchmarks.get(benchmark_id)


def summaries(session: Session) -> list[BenchmarkSummary]:
    """Every registered benchmark, and any other that has runs."""
    counts = {
        r.benchmark_id: (int(r.n), r.best)
        for r in session.execute(
            sa.select(
                BenchmarkRun.benchmark_id,
                sa.func.count().label("n"),
                sa.func.max(BenchmarkRun.score_value).label("best"),
            ).group_by(BenchmarkRun.benchmark_id)
        )
    }
    best_ids: dict[str, str] = {}
    for benchmark_id, (_, best) in counts.items():
        if best is not None:
            run_id = session.execute(
                sa.select(BenchmarkRun.id)
                .where(BenchmarkRun.benchmark_id == benchmark_id, BenchmarkRun.score_value == best)
                .order_by(BenchmarkRun.seq)
                .limit(1)
            ).scalar()
            if run_id:
                best_ids[benchmark_id] = run_id
    items: list[BenchmarkSummary] = []
    seen: set[str] = set()
    for spec in registry.all():
        seen.add(spec.id)
        n, best = counts.get(spec.id, (0, None))
        items.append(
            BenchmarkSummary(
                id=spec.id,
                name=spec.id,
                description=spec.description or "",
                n_tasks=len(spec.tasks),
                n_runs=n,
                best_run_id=best_ids.get(spec.id),
                best_score=best,
            )
        )
    for benchmark_id in sorted(set(counts) - seen):
        n, best = counts[benchmark_id]
        items.append(
            BenchmarkSummary(
                id=benchmark_id,
                name=benchmark_id,
                description="(not defined on this server)",
                n_tasks=None,
                n_runs=n,
                best_run_id=best_ids.get(benchmark_id),
                best_score=best,
            )
        )
    # benchmarks with runs first, then the registry's order
    order = {b.id: i for i, b in enumerate(items)}
    items.sort(key=lambda b: (b.n_runs == 0, order[b.id]))
    return items


def _tasks_of(spec: Any) -> list[TaskView]:
    return [
        TaskView(
            env_id=t.env_id,
            trials=t.trials,
            max_timesteps=t.max_timesteps,
            floor=t.reward_floor,
            ceiling=t.reward_ceiling,
        )
        for t in spec.tasks
    ]


def _trial_table(score: dict[str, Any] | None) -> dict[str, list[float]]:
    """``{task key: [score of each trial]}`` from a stored run score.

    Reads ``env_scores`` (``benchmark_aggregate_score``: env id -> one list of per-task scores per
    trial) or ``tasks`` (``score_benchmark_run``). A task key is the env id, or ``env_id[i]`` when
    an env has several tasks, as palaestra.benchmarks names them.
    """
    out: dict[str, list[float]] = {}
    score = score or {}
    tasks = score.get("tasks")
    if isinstance(tasks, list):
        for task in tasks:
            if isinstance(task, dict) and task.get("key") is not None:
                out[str(task["key"])] = _finite(task.get("trial_scores"))
    env_scores = score.get("env_scores")
    if not out and isinstance(env_scores, dict):
        for env_id, trials in env_scores.items():
            rows = [t for t in trials if isinstance(t, list)] if isinstance(trials, list) else []
            width = max((len(t) for t in rows), default=0)
            for index in range(width):
                key = str(env_id) if width == 1 else f"{env_id}[{index}]"
                out[key] = _finite([t[index] for t in rows if index < len(t)])
    return {k: v for k, v in out.items() if v}


def _finite(values: Any) -> list[float]:
    if not isinstance(values, list):
        return []
    return [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]


def _task_scores(score: dict[str, Any] | None) -> dict[str, float]:
    """``{task key: mean over trials}`` from a stored run score."""
    return {key: sum(values) / len(values) for key, values in _trial_table(score).items()}


def _run_select() -> sa.Select[Any]:
    return (
        sa.select(
            BenchmarkRun.id,
            BenchmarkRun.status,
            BenchmarkRun.score,
            BenchmarkRun.score_value,
            BenchmarkRun.created,
            Algorithm.id.label("algorithm_id"),
            Algorithm.name.label("algorithm_name"),
            User.name.label("user"),
        )
        .select_from(BenchmarkRun)
        .join(User, User.seq == BenchmarkRun.user_seq)
        .outerjoin(Algorithm, Algorithm.seq == BenchmarkRun.algorithm_seq)
    )


def _run_row(r: Any) -> RunRow:
    score = r.score if isinstance(r.score, dict) else None
    return RunRow(
        id=r.id,
        status=r.status,
        algorithm_id=r.algorithm_id,
        algorithm_name=r.algorithm_name,
        user=r.user,
        score=r.score_value,
        num_envs_solved=(score or {}).get("num_envs_solved"),
        task_scores=_task_scores(score),
        created=r.created,
    )


def detail(
    session: Session, benchmark_id: str, page_number: int, path: str
) -> tuple[BenchmarkDetail, list[RunRow], Page, list[str], list[AggregateRow]] | None:
    """The benchmark page: definition, one page of ranked runs, task columns, per-algorithm aggregates."""
    spec = _spec(benchmark_id)
    total = int(
        session.execute(
            sa.select(sa.func.count())
            .select_from(BenchmarkRun)
            .where(BenchmarkRun.benchmark_id == benchmark_id)
        ).scalar()
        or 0
    )
    if spec is None and total == 0:
        return None
    if spec is not None:
        bench = BenchmarkDetail(
            id=spec.id,
            name=spec.id,
            description=spec.description or "",
            scorer=scorer_text(spec),
            tasks=_tasks_of(spec),
            normalisation=normalisation_text(spec),
        )
    else:
        bench = BenchmarkDetail(id=benchmark_id, name=benchmark_id, description="", scorer="", tasks=[])
    number = clamp_page(page_number, total)
    page = Page(number=number, size=PAGE_SIZE, total=total, path=path)
    stmt = (
        _run_select()
        .where(BenchmarkRun.benchmark_id == benchmark_id)
        .order_by(BenchmarkRun.score_value.desc().nulls_last(), BenchmarkRun.seq.asc())
        .limit(PAGE_SIZE)
        .offset(page.offset)
    )
    runs = [_run_row(r) for r in session.execute(stmt)]
    task_ids: list[str] = []
    for r in runs:
        for key in r.task_scores:
            if key not in task_ids:
                task_ids.append(key)
    taus = profile_thresholds(spec) if spec is not None else PROFILE_TAUS
    return bench, runs, page, task_ids, _algorithm_aggregates(session, benchmark_id, taus)


def _interval(stats: Any, spread: bool, n: int) -> Interval | None:
    """A stored ``{"value", "low", "high"}`` as an :class:`Interval` (without bounds if no ``spread``)."""
    if not isinstance(stats, dict):
        return None
    try:
        value, low, high = float(stats["value"]), float(stats["low"]), float(stats["high"])
    except (KeyError, TypeError, ValueError):
        return None
    return Interval(value, low, high, n=n) if spread else Interval(value, None, None, n=n)


def _estimate(stats: statistics.Interval, spread: bool, n: int) -> Interval:
    return Interval(stats.value, stats.low, stats.high, n=n) if spread else Interval(stats.value, None, None, n=n)


def _run_intervals(score: dict[str, Any], stored: dict[str, Any]) -> tuple[Interval | None, Interval | None]:
    """IQM and mean of a run's task-trial scores with the 95% CIs of its kept bootstrap (``stored``),
    without bounds when every task has a single trial."""
    table = _trial_table(score)
    spread = bool(table) and statistics.has_spread(table)
    most = max((len(v) for v in table.values()), default=0)
    return _interval(stored.get("iqm"), spread, most), _interval(stored.get("mean"), spread, most)


def _algorithm_aggregates(
    session: Session, benchmark_id: str, taus: np.ndarray = PROFILE_TAUS
) -> list[AggregateRow]:
    """Per algorithm: IQM and mean of its runs' trial scores pooled per task, with bootstrap CIs, over
    every scored run (computed once per set of scores, see ``_scores_signature``)."""
    scored = sa.and_(BenchmarkRun.benchmark_id == benchmark_id, BenchmarkRun.score.is_not(None))

    def compute() -> list[AggregateRow]:
        rows = session.execute(_run_select().where(scored).order_by(BenchmarkRun.seq)).all()
        return _pool_by_algorithm(session, rows, taus)

    return cached(session, of_database(session, "benchmark", benchmark_id, *_scores_signature(session, scored)), compute)


def _scores_signature(session: Session, scored: sa.ColumnElement[bool]) -> tuple[Any, ...]:
    """What changes whenever a scored run of the benchmark is added or scored again (a run's score is
    rewritten with each evaluation it gains, at its commit and by a rescore), read without the scores
    themselves: at a thousand runs their JSON is most of the page's time."""
    row = session.execute(
        sa.select(
            sa.func.count(),
            sa.func.max(BenchmarkRun.seq),
            sa.func.sum(BenchmarkRun.score_evaluations),
            sa.func.sum(BenchmarkRun.score_value),
            sa.func.count(BenchmarkRun.committed),
        ).where(scored)
    ).one()
    return tuple(row)


def _pool_by_algorithm(
    session: Session, rows: Sequence[Any], taus: np.ndarray = PROFILE_TAUS
) -> list[AggregateRow]:
    pooled: dict[str, tuple[str, dict[str, list[float]], int]] = {}
    for r in rows:
        key = r.algorithm_id or f"run:{r.id}"
        label = r.algorithm_name or r.algorithm_id or "unnamed"
        _, table, n = pooled.get(key, (label, {}, 0))
        for task, values in _trial_table(r.score if isinstance(r.score, dict) else None).items():
            table.setdefault(task, []).extend(values)
        pooled[key] = (label, table, n + 1)
    out = [_kept_aggregate_row(session, label, table, n, taus) for label, table, n in pooled.values() if table]
    out.sort(key=lambda a: -(a.iqm.value if a.iqm else -math.inf))
    return [dataclasses.replace(a, color=PALETTE[i % len(PALETTE)]) for i, a in enumerate(out)]


def _kept_aggregate_row(
    session: Session, label: str, table: dict[str, list[float]], n_runs: int, taus: np.ndarray
) -> AggregateRow:
    """:func:`_aggregate_row`, kept by its inputs (a bootstrap of fixed seed is a function of them): when
    a run is added or scored again, only its algorithm's statistics are computed again (at 1,666
    algorithms, all of them took 14 s)."""
    inputs = ("benchmark algorithm", label, n_runs, taus.tobytes(), tuple((t, tuple(v)) for t, v in sorted(table.items())))
    return cached(session, inputs, lambda: _aggregate_row(label, table, n_runs, taus))


def _aggregate_row(
    label: str, table: dict[str, list[float]], n_runs: int, taus: np.ndarray = PROFILE_TAUS
) -> AggregateRow:
    """rliable's set for one algorithm's pooled task-trial scores (intervals only where they exist)."""
    spread = statistics.has_spread(table)
    most = max(len(v) for v in table.values())
    stats = statistics.interval_estimates(table, metrics=tuple(METRIC_LABELS), reps=AGGREGATE_REPS, seed=0)
    per_task: dict[str, Interval] = {}
    for task, values in table.items():
        if len(values) < 2:
            per_task[task] = Interval(values[0], None, None, n=1)
            continue
        mean = statistics.interval_estimates({task: values}, metrics=("mean",), reps=AGGREGATE_REPS, seed=0)
        per_task[task] = _estimate(mean["mean"], True, len(values))
    profile = statistics.performance_profile(table, taus=taus, reps=PROFILE_REPS, seed=0)
    return AggregateRow(
        label=f"{label} ({n_runs} run{'s' if n_runs != 1 else ''})",
        run_id=None,
        n=sum(len(v) for v in table.values()),
        iqm=_estimate(stats["iqm"], spread, most),
        mean=_estimate(stats["mean"], spread, most),
        median=_estimate(stats["median"], spread, most),
        optimality_gap=_estimate(stats["optimality_gap"], spread, most),
        per_task=per_task,
        profile={**profile.to_dict(), "has_interval": spread},
    )


def chart_data(aggregates: Sequence[AggregateRow]) -> dict[str, Any]:
    """The JSON the benchmark page's charts draw (``static/stats-charts.js``); an interval is
    ``[value, low, high]``, with ``low``/``high`` null where none exists."""
    tasks = list(dict.fromkeys(task for a in aggregates for task in a.per_task))
    return {
        "tasks": tasks,
        "metrics": [[key, label] for key, label in METRIC_LABELS.items()],
        "algorithms": [
            {
                "label": a.label,
                "color": a.color,
                "per_task": [a.per_task[t].to_json() if t in a.per_task else None for t in tasks],
                "metrics": {
                    key: stat.to_json() if (stat := getattr(a, key)) is not None else None
                    for key in METRIC_LABELS
                },
                "profile": a.profile,
            }
            for a in aggregates
        ],
    }


def run_choices(session: Session, benchmark_id: str) -> list[RunRow]:
    """The runs the probability-of-improvement form offers (best first)."""
    stmt = (
        _run_select()
        .where(BenchmarkRun.benchmark_id == benchmark_id, BenchmarkRun.score.is_not(None))
        .order_by(BenchmarkRun.score_value.desc().nulls_last(), BenchmarkRun.seq.asc())
        .limit(MAX_RUN_CHOICES)
    )
    return [_run_row(r) for r in session.execute(stmt)]


def improvement(session: Session, benchmark_id: str, x_id: str, y_id: str) -> Improvement | str:
    """P(run ``x_id`` > run ``y_id``) over their common tasks, or a message saying why there is none."""
    rows = {
        r.id: r
        for r in session.execute(
            _run_select().where(BenchmarkRun.benchmark_id == benchmark_id, BenchmarkRun.id.in_([x_id, y_id]))
        )
    }
    for run_id in (x_id, y_id):
        if run_id not in rows:
            return f"No run {run_id!r} of {benchmark_id}: choose two of the runs listed."
    if x_id == y_id:
        return "Choose two different runs: a run against itself is 0.5 by definition."
    tables = [_trial_table(rows[i].score if isinstance(rows[i].score, dict) else None) for i in (x_id, y_id)]
    tx, ty = tables
    common = [task for task in tx if task in ty]
    if not common:
        return f"Runs {x_id} and {y_id} have no scored task in common."
    signature = ("improvement", x_id, y_id, json.dumps(tables, sort_keys=True))

    def compute() -> list[Any]:
        def estimate(tasks: list[str]) -> Interval:
            spread = any(len(tx[t]) > 1 or len(ty[t]) > 1 for t in tasks)
            most = max(max(len(tx[t]), len(ty[t])) for t in tasks)
            stats = statistics.probability_of_improvement(
                {t: tx[t] for t in tasks}, {t: ty[t] for t in tasks}, reps=AGGREGATE_REPS, seed=0
            )
            return _estimate(stats, spread, most)

        return [estimate(common), [(t, estimate([t])) for t in common]]

    overall, per_task = cached(session, signature, compute)
    return Improvement(x=_run_row(rows[x_id]), y=_run_row(rows[y_id]), overall=overall, per_task=per_task)


def run_detail(session: Session, run_id: str, statistics_of: StatisticsOf) -> RunDetail | None:
    """The benchmark run page: its score, statistics (``statistics_of``: the kept bootstrap, and
    whether it is being computed), and per task the evaluations and scores."""
    r = session.execute(
        _run_select()
        .add_columns(BenchmarkRun.seq, BenchmarkRun.benchmark_id, BenchmarkRun.tags, BenchmarkRun.statistics)
        .where(BenchmarkRun.id == run_id)
    ).first()
    if r is None:
        return None
    spec = _spec(r.benchmark_id)
    score = r.score if isinstance(r.score, dict) else {}
    evaluations = session.execute(
        sa.select(Evaluation.id, Evaluation.env_id, Evaluation.benchmark_score)
        .where(Evaluation.benchmark_run_seq == r.seq)
        .order_by(Evaluation.seq)
    ).all()
    by_env: dict[str, list[RunEvaluation]] = {}
    for e in evaluations:
        bscore = e.benchmark_score if isinstance(e.benchmark_score, dict) else {}
        values = [float(s) for s in bscore.get("scores") or [] if isinstance(s, int | float)]
        by_env.setdefault(e.env_id or "?", []).append(
            RunEvaluation(id=e.id, score=sum(values) / len(values) if values else None)
        )
    task_scores = _task_scores(score)
    env_order: list[str] = list(spec.env_id_order) if spec is not None else []
    for task in score.get("tasks") or []:
        if isinstance(task, dict) and task.get("env_id") and task["env_id"] not in env_order:
            env_order.append(task["env_id"])
    for env_id in by_env:
        if env_id not in env_order:
            env_order.append(env_id)
    tasks: list[RunTask] = []
    for env_id in env_order:
        keys = [k for k in task_scores if k == env_id or k.startswith(f"{env_id}[")]
        env_score = sum(task_scores[k] for k in keys) / len(keys) if keys else None
        tasks.append(RunTask(env_id=env_id, score=env_score, evaluations=by_env.get(env_id, [])))
    stored, computing = statistics_of(r.id, score, r.statistics)
    iqm, mean = _run_intervals(score, stored)
    extra: list[tuple[str, float]] = []
    for key, label in (
        ("start_to_finish_seconds", "Start to finish (s)"),
        ("summed_training_seconds", "Summed training time (s)"),
        ("summed_task_wall_time", "Summed task wall time (s)"),
    ):
        if isinstance(score.get(key), int | float):
            extra.append((label, float(score[key])))
    return RunDetail(
        id=r.id,
        benchmark_id=r.benchmark_id,
        benchmark_name=r.benchmark_id,
        status=r.status,
        algorithm_id=r.algorithm_id,
        algorithm_name=r.algorithm_name,
        user=r.user,
        created=r.created,
        tags=dict(r.tags or {}),
        score=r.score_value,
        num_envs_solved=score.get("num_envs_solved"),
        iqm=iqm,
        mean=mean,
        extra_stats=extra,
        tasks=tasks,
        computing=computing,
    )
