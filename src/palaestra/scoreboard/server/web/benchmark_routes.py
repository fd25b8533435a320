"""The benchmark pages: the index, a benchmark (its ranked runs, rliable's statistics per algorithm,
P(run x > run y)) and a benchmark run; each names the tasks whose pooled evaluations ran under
different conditions (:func:`.entries.pooled_conditions_notice`)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from palaestra.scoreboard.server.core.deps import state_of
from palaestra.scoreboard.server.evaluations import benchmarking
from palaestra.scoreboard.server.tables.scores import BenchmarkRun, Evaluation
from palaestra.scoreboard.server.web import benchmarks as benchmark_pages
from palaestra.scoreboard.server.web import entries
from palaestra.scoreboard.server.web.render import render
from palaestra.scoreboard.server.web.services import database, not_found, page_number

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/benchmarks", response_class=HTMLResponse)
def benchmarks_page(request: Request) -> HTMLResponse:
    with database(request).read() as session:
        items = benchmark_pages.summaries(session)
    return render(request, "benchmarks.html", nav="benchmarks", benchmarks=items)


#: Algorithms whose statistics the benchmark page shows, the best by IQM first
ALGORITHMS_SHOWN = 20


@router.get("/benchmarks/{benchmark_id}", response_class=HTMLResponse)
def benchmark_page(
    request: Request,
    benchmark_id: str,
    page: str = Query("1", max_length=12),
    x: str = Query("", max_length=64),
    y: str = Query("", max_length=64),
    algorithms: str = Query("", max_length=4),
) -> HTMLResponse:
    """The benchmark, its ranked runs, rliable's statistics per algorithm (the best
    :data:`ALGORITHMS_SHOWN` by IQM; ``algorithms=all``: every one), and P(run x > run y)."""
    with database(request).read() as session:
        found = benchmark_pages.detail(session, benchmark_id, page_number(page), request.url.path)
        if found is None:
            return not_found(request, f"No benchmark {benchmark_id!r}.")
        choices = benchmark_pages.run_choices(session, benchmark_id)
        compared = benchmark_pages.improvement(session, benchmark_id, x, y) if x or y else None
        runs_of = sa.select(BenchmarkRun.seq).where(BenchmarkRun.benchmark_id == benchmark_id)
        pooled = entries.pooled_conditions_notice(session, Evaluation.benchmark_run_seq.in_(runs_of))
    bench, runs, pager, task_ids, every_aggregate = found
    # every algorithm is in the statistics; the tables and charts show the best few unless asked (at
    # a thousand algorithms they were 6 MB of page)
    aggregates = every_aggregate if algorithms == "all" else every_aggregate[:ALGORITHMS_SHOWN]
    return render(
        request,
        "benchmark.html",
        nav="benchmarks",
        bench=bench,
        runs=runs,
        page=pager,
        task_ids=task_ids,
        aggregates=aggregates,
        algorithms_total=len(every_aggregate),
        all_algorithms_url=f"{request.url.path}?algorithms=all#statistics",
        chart=benchmark_pages.chart_data(aggregates),
        choices=choices,
        chosen=(x or (choices[0].id if choices else ""), y or (choices[1].id if len(choices) > 1 else "")),
        improvement=compared if not isinstance(compared, str) else None,
        improvement_problem=compared if isinstance(compared, str) else None,
        conditions_notice=pooled,
    )


@router.get("/benchmark_runs/{run_id}", response_class=HTMLResponse)
def benchmark_run_page(request: Request, run_id: str) -> HTMLResponse:
    state = state_of(request)

    def statistics_of(run: str, score: dict[str, Any], kept: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
        return benchmarking.run_statistics_of(state, run, score, kept)

    with database(request).read() as session:
        run = benchmark_pages.run_detail(session, run_id, statistics_of)
        of_run = sa.select(BenchmarkRun.seq).where(BenchmarkRun.id == run_id).scalar_subquery()
        pooled = entries.pooled_conditions_notice(session, Evaluation.benchmark_run_seq == of_run)
    if run is None:
        return not_found(request, f"No benchmark run {run_id!r}.")
    return render(request, "benchmark_run.html", nav="benchmarks", run=run, conditions_notice=pooled)
