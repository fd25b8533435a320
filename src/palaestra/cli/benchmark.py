"""``palaestra benchmark run|score|list``: run a benchmark, score a run, list what is registered."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from palaestra.cli import add_progress_arguments
from palaestra.cli.run import AGENTS_HELP


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "benchmark",
        help="run, score and list benchmarks",
        description="Run a benchmark (every task x trial under the Monitor), score a benchmark run, or list "
        "the registered benchmarks.",
    )
    sub = parser.add_subparsers(dest="benchmark_command", metavar="{run,score,list}")
    parser.set_defaults(handler=lambda args: _no_subcommand(parser))

    run = sub.add_parser(
        "run",
        help="run every task x trial of a benchmark",
        description="Run every task x trial of benchmark ID into OUT/{env_id}-{trial}. Finished "
        "trials are skipped, so rerunning the same command resumes.",
        epilog=AGENTS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("benchmark_id", metavar="ID")
    run.add_argument("--agent", required=True, help="random, cem or module:factory (see below)")
    run.add_argument("--out", required=True, metavar="DIR", help="directory for the training directories")
    run.add_argument("--workers", type=int, default=1, metavar="N", help="trials run at a time (default 1)")
    run.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run the trials as Ray tasks: 'local' starts a local Ray instance, 'auto' or an "
        "address joins a cluster (needs the ray extra)",
    )
    run.add_argument("--seed", type=int, default=0, help="base seed of the trials (default 0)")
    run.add_argument(
        "--env",
        action="append",
        dest="env_ids",
        metavar="ENV_ID",
        help="run only this env of the benchmark (repeatable)",
    )
    run.add_argument("--force", action="store_true", help="run every trial again, even finished ones")
    run.add_argument("--no-score", action="store_true", help="do not print the score at the end")
    add_progress_arguments(run)
    run.set_defaults(handler=_run)

    score = sub.add_parser(
        "score",
        help="score a benchmark run directory",
        description="Print the per-task table, the aggregate and IQM/mean with 95% bootstrap "
        "confidence intervals for the benchmark run stored under DIR.",
    )
    score.add_argument("directory", metavar="DIR")
    score.add_argument("--benchmark", required=True, metavar="ID", dest="benchmark_id")
    score.add_argument(
        "--legacy", action="store_true", help="reproduce the 2017 numbers (with its two defects)"
    )
    score.add_argument("--json", action="store_true", help="print the result as JSON")
    score.add_argument("--reps", type=int, default=None, help="bootstrap replicates (default 50000)")
    score.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    score.set_defaults(handler=_score)

    listing = sub.add_parser("list", help="list the registered benchmarks")
    listing.add_argument("--json", action="store_true", help="print the benchmarks as JSON")
    listing.add_argument("--tasks", action="store_true", help="also list every task")
    listing.set_defaults(handler=_list)


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    from palaestra.benchmarks import benchmark_score_from_local, benchmark_spec
    from palaestra.benchmarks.runner import run_benchmark

    bench = benchmark_spec(args.benchmark_id)
    report = run_benchmark(
        bench,
        args.agent,
        args.out,
        workers=args.workers,
        ray_address=args.ray,
        seed=args.seed,
        force=args.force,
        progress=args.progress,
        env_ids=args.env_ids,
    )
    print(
        f"{bench.id}: {report.count('finished')} trial(s) run, {report.count('skipped')} already finished, "
        f"{report.count('failed')} failed, {report.count('unavailable')} unavailable ({report.seconds:.1f} s)"
    )
    for env_id, why in report.unavailable.items():
        print(f"  skipped {env_id}: {why}")
    for outcome in report.failed:
        print(f"  FAILED {outcome.env_id}-{outcome.trial}: {outcome.error}")
    if not args.no_score and (report.count("finished") or report.count("skipped")):
        print()
        _print_score(benchmark_score_from_local(bench, report.out_dir))
        print(f"\nUpload with: palaestra upload {report.out_dir} --benchmark {bench.id}")
    return 1 if report.failed else 0


def _score(args: argparse.Namespace) -> int:
    from palaestra.benchmarks import benchmark_score_from_local

    result = benchmark_score_from_local(
        args.benchmark_id, args.directory, legacy=args.legacy, reps=args.reps, seed=args.seed
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print_score(result)
    return 0


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _print_score(result: dict[str, Any]) -> None:
    normalised = result["statistics"].get("normalisation")
    floor, ceiling = ("random", "human") if normalised else ("floor", "ceiling")
    rows = [["task", "trials", floor, ceiling, "budget", "trial scores", "mean", "solved"]]
    for task in result["tasks"]:
        budget = []
        if task["max_timesteps"]:
            budget.append(f"{task['max_timesteps']} steps")
        if task["max_seconds"]:
            budget.append(f"{task['max_seconds']} s")
        trials = f"{task['trials_submitted']}/{task['trials']}"
        if not task["available"]:
            trials += " (unavailable)"
        rows.append(
            [
                task["key"],
                trials,
                f"{task['reward_floor']:g}",
                f"{task['reward_ceiling']:g}",
                ", ".join(budget),
                " ".join(_fmt(s) for s in task["trial_scores"]),
                _fmt(task["mean_score"]),
                "yes" if task["env_solved"] else "no",
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    mode = " (legacy 2017 rules)" if result["legacy"] else ""
    print()
    print(f"Benchmark {result['benchmark_id']}{mode}")
    print(f"  score                    {_fmt(result['score'], 4)}")
    print(f"  envs solved              {result['num_envs_solved']}")
    print(f"  start to finish          {result['start_to_finish_seconds']:.1f} s")
    print(f"  summed task wall time    {result['summed_task_wall_time']:.1f} s")
    print(f"  summed training time     {result['summed_training_seconds']:.1f} s")
    from palaestra.benchmarks.statistics import Interval, has_spread

    stats = result["statistics"]
    # one trial per task: the bootstrap's bounds equal the value, and there is no interval (as the pages say)
    table = {str(i): t["trial_scores"] for i, t in enumerate(result["tasks"]) if t.get("trial_scores")}
    spread = bool(table) and has_spread(table)
    most = max((len(v) for v in table.values()), default=0)
    names = [("iqm", "IQM"), ("mean", "mean"), ("median", "median"), ("optimality_gap", "optimality gap")]
    if any(name in stats for name, _ in names):
        print(f"  over {stats['num_runs']} runs, 95% stratified bootstrap CIs ({stats['reps']} replicates):")
        for name, label in names:
            if name in stats:
                s = stats[name]
                low, high = (s["low"], s["high"]) if spread else (None, None)
                print(f"  {label:<24} {Interval(s['value'], low, high, n=most).shown()}")
    if normalised:
        print(
            f"  scores are human-normalised (0 = random play, 1 = human) with the {normalised['table']} "
            f"v{normalised['version']} table: {normalised['citation']}"
        )
    _print_profile(stats.get("profile"), spread, most)
    for skipped in result.get("skipped", []):
        print(f"  (not scored: {os.path.relpath(skipped)}, an env outside the benchmark)")


#: The thresholds at which ``benchmark score`` prints the performance profile (the JSON has all).
PROFILE_PRINTED_TAUS = (0.0, 0.25, 0.5, 0.75, 1.0, 2.0, 4.0, 8.0)


def _print_profile(profile: dict[str, Any] | None, spread: bool, n: int) -> None:
    """A few points of the performance profile: the fraction of runs scoring above tau, with its band."""
    from palaestra.benchmarks.statistics import Interval

    if not profile:
        return
    taus = profile["taus"]
    print("  performance profile      fraction of runs scoring above tau [95% CI]:")
    for tau in PROFILE_PRINTED_TAUS:
        i = min(range(len(taus)), key=lambda j: abs(taus[j] - tau))
        if abs(taus[i] - tau) > 1e-9:
            continue  # not a threshold of this profile
        low, high = (profile["low"][i], profile["high"][i]) if spread else (None, None)
        print(f"    tau = {taus[i]:<5g}              {Interval(profile['fraction'][i], low, high, n=n).shown()}")


def _list(args: argparse.Namespace) -> int:
    from palaestra.benchmarks import CURRENT_EQUIVALENTS, registry

    benchmarks = registry.all()
    if args.json:
        out = []
        for bench in benchmarks:
            doc = bench.to_dict()
            doc["unavailable"] = bench.unavailable_reasons()
            doc["current_equivalent"] = CURRENT_EQUIVALENTS.get(bench.id, bench.id)
            out.append(doc)
        print(json.dumps(out, indent=2))
        return 0
    for group, views in registry.benchmark_view_groups.items():
        print(f"{group}:")
        for view in views:
            for bench_id in view.benchmarks:
                bench = registry.benchmark_spec(bench_id)
                unavailable = bench.unavailable_env_ids()
                status = "available" if not unavailable else f"unavailable: {', '.join(unavailable)}"
                note = ""
                if bench.equivalent_of:
                    note = f"; today's {bench.equivalent_of}"
                elif unavailable and CURRENT_EQUIVALENTS.get(bench.id) not in (bench.id, None):
                    note = f"; run {CURRENT_EQUIVALENTS[bench.id]} today"
                print(
                    f"  {bench.id:<24} {type(bench.scorer).__name__:<20} {len(bench.tasks)} tasks  "
                    f"({status}{note})"
                )
                if args.tasks:
                    for task in bench.tasks:
                        budget = (
                            f"{task.max_timesteps} steps" if task.max_timesteps else f"{task.max_seconds} s"
                        )
                        print(
                            f"      {task.env_id:<32} trials={task.trials}  {budget}  "
                            f"floor={task.reward_floor:g}  ceiling={task.reward_ceiling:g}"
                        )
    return 0
