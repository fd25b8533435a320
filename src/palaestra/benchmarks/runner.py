"""Run a benchmark: every env x trial under the Monitor, in worker processes or as Ray tasks.

Layout (the 2017 ``benchmark_runner``'s, :func:`palaestra.benchmarks.runs.trial_directory`): trial ``t``
of env ``E`` is recorded into ``{out}/{E}-{t}`` by ``palaestra.Monitor(video_callable=False)``; the
run's walker (:func:`~palaestra.benchmarks.runs.training_directories`) reads them back in trial order. One directory serves every task of
its env (each task scores it against its own budget), so a trial runs until *every* task's budget is
used: a task's budget is used when the trial's cumulative steps reach its ``max_timesteps`` or the
wall time since the first reset reaches its ``max_seconds``. Steps are counted by
``Monitor.get_total_steps()`` (steps of abandoned episodes included; the runner itself only resets
finished episodes).

When a trial has finished and its Monitor is closed, the runner writes ``palaestra.trial.json``
(atomically) into its directory. A later run with the same ``--out`` skips every trial that has this
marker for the same agent and budget (resume); an unfinished trial is started again from scratch
(the Monitor clears its files). A marker of a different agent or budget is an error unless
``force=True``, which reruns everything.

Trials run in a ``concurrent.futures.ProcessPoolExecutor`` (spawned processes, ``workers`` at a time)
or, with ``ray_address``, as Ray tasks (``"local"`` starts a local Ray instance; ``"auto"`` or an
address joins a cluster, whose nodes need palaestra installed). A Ray task records into a temporary
folder on its node and returns the files, which the driver writes under ``out``, so no shared file
system is needed. Envs that cannot be made here are skipped with a message naming why; their trials
score 0 (2017's rule for missing trials).
"""

from __future__ import annotations

import ast
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeGuard

from palaestra import catalogue
from palaestra._version import __version__
from palaestra.benchmarks.registry import Benchmark, benchmark_spec
from palaestra.benchmarks.runs import trial_directory
from palaestra.errors import DependencyNotInstalled, Error

logger = logging.getLogger("palaestra.benchmarks")

DONE_MARKER = "palaestra.trial.json"

__all__ = [
    "DONE_MARKER",
    "BenchmarkRunError",
    "RunReport",
    "TrialOutcome",
    "TrialSpec",
    "plan_trials",
    "run_benchmark",
    "run_trial",
]

Budget = tuple[int | None, float | None]


class BenchmarkRunError(Error):
    """A benchmark run that cannot start (an output directory from another run, a bad option, a script
    without its ``__main__`` guard) or in which every trial failed (``report`` then says how)."""

    def __init__(self, message: str, report: RunReport | None = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class TrialSpec:
    """Everything a worker needs to run one trial (picklable, no benchmark lookup needed)."""

    benchmark_id: str
    env_id: str
    trial: int
    directory: str
    #: (max_timesteps, max_seconds) of each task of the env
    budgets: tuple[Budget, ...]
    agent: str
    seed: int | None

    def marker_identity(self) -> dict[str, Any]:
        """What a done-marker must match for this trial to count as finished."""
        return {
            "env_id": self.env_id,
            "trial": self.trial,
            "agent": self.agent,
            "seed": self.seed,
            "budgets": [list(b) for b in self.budgets],
        }

    def budget_used(self, steps: int, seconds: float) -> bool:
        """Has every task's budget been used?"""
        return all(
            (max_steps is not None and steps >= max_steps) or (max_secs is not None and seconds >= max_secs)
            for max_steps, max_secs in self.budgets
        )


@dataclass
class TrialOutcome:
    """What happened to one trial: ``finished``, ``skipped`` (already done), ``failed`` or ``unavailable``."""

    env_id: str
    trial: int
    directory: str
    status: str
    steps: int = 0
    episodes: int = 0
    seconds: float = 0.0
    error: str | None = None


@dataclass
class RunReport:
    """The outcome of :func:`run_benchmark`."""

    benchmark_id: str
    out_dir: str
    outcomes: list[TrialOutcome] = field(default_factory=list)
    #: env id -> why it was skipped
    unavailable: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> list[TrialOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark_id": self.benchmark_id,
            "out_dir": self.out_dir,
            "seconds": self.seconds,
            "unavailable": self.unavailable,
            "outcomes": [asdict(o) for o in self.outcomes],
        }


# -- planning --------------------------------------------------------------------------------------


def trial_seed(seed: int | None, env_id: str, trial: int) -> int | None:
    """The seed of one trial, derived from the run's seed (None: unseeded)."""
    if seed is None:
        return None
    return (seed * 1_000_003 + zlib.crc32(env_id.encode()) * 101 + trial) % (2**31 - 1)


def plan_trials(benchmark: Benchmark, out_dir: str, agent: str, seed: int | None = 0) -> list[TrialSpec]:
    """One :class:`TrialSpec` per env x trial, in benchmark order."""
    out_dir = os.path.abspath(out_dir)
    specs = []
    for env_id in benchmark.env_id_order:
        tasks = benchmark.task_specs(env_id)
        budgets = tuple((t.max_timesteps, t.max_seconds) for t in tasks)
        for trial in range(tasks[0].trials):
            specs.append(
                TrialSpec(
                    benchmark_id=benchmark.id,
                    env_id=env_id,
                    trial=trial,
                    directory=trial_directory(out_dir, env_id, trial),
                    budgets=budgets,
                    agent=agent,
                    seed=trial_seed(seed, env_id, trial),
                )
            )
    return specs


def read_marker(directory: str) -> dict[str, Any] | None:
    """The done-marker of a trial directory, or None when the trial has not finished."""
    path = os.path.join(directory, DONE_MARKER)
    try:
        with open(path, encoding="utf-8") as f:
            marker = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.warning("Ignoring the unreadable done-marker %s (%s); the trial will run again", path, exc)
        return None
    return marker if isinstance(marker, dict) else None


def is_finished(spec: TrialSpec, force: bool = False) -> bool:
    """Whether ``spec``'s directory holds this very trial, finished; raises for another run's trial."""
    marker = read_marker(spec.directory)
    if marker is None or force:
        return False
    identity = spec.marker_identity()
    theirs = {key: marker.get(key) for key in identity}
    if theirs != identity:
        raise BenchmarkRunError(
            f"{spec.directory} holds a finished trial of another run ({theirs}, this run: {identity}). "
            "Use another output directory, or --force to run every trial again."
        )
    return True


# -- one trial (runs in a worker process) ----------------------------------------------------------


def _record(spec: TrialSpec, directory: str) -> TrialOutcome:
    """Run one trial into ``directory`` and write its done-marker; exceptions propagate."""
    import gymnasium

    from palaestra.agents.base import end_episode, observe
    from palaestra.monitoring import Monitor, files
    from palaestra.training import make_agent

    marker_path = os.path.join(directory, DONE_MARKER)
    if os.path.exists(marker_path):
        os.unlink(marker_path)
    with warnings.catch_warnings():
        # A benchmark names its version on purpose (ClassicControl2-v1 is CartPole-v0's): Gymnasium's
        # "CartPole-v0 is out of date" would only be noise in every trial.
        warnings.filterwarnings("ignore", message=r".*The environment \S+ is out of date", category=DeprecationWarning)
        env = gymnasium.make(spec.env_id)
    if spec.seed is not None:
        env.action_space.seed(spec.seed)
        env.observation_space.seed(spec.seed)
    monitor = Monitor(env, directory, video_callable=False, force=True)
    start = time.monotonic()
    try:
        agent = make_agent(spec.agent, monitor, seed=spec.seed)
        observation, _ = monitor.reset(seed=spec.seed)
        start = time.monotonic()
        while not spec.budget_used(monitor.get_total_steps(), time.monotonic() - start):
            action = agent.act(observation)
            observation, reward, terminated, truncated, _ = monitor.step(action)
            observe(agent, observation, float(reward), terminated, truncated)
            if terminated or truncated:
                end_episode(agent)
                observation, _ = monitor.reset()
        steps = monitor.get_total_steps()
        episodes = len(monitor.get_episode_lengths())
    finally:
        monitor.close()
    seconds = time.monotonic() - start
    marker = {
        **spec.marker_identity(),
        "benchmark_id": spec.benchmark_id,
        "steps": steps,
        "episodes": episodes,
        "seconds": seconds,
        "finished_at": time.time(),
        "palaestra_version": __version__,
    }
    files.atomic_write_json(marker_path, marker)
    return TrialOutcome(spec.env_id, spec.trial, spec.directory, "finished", steps, episodes, seconds)


def _failure(spec: TrialSpec, exc: BaseException) -> TrialOutcome:
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    logger.debug("Trial %s-%d failed:\n%s", spec.env_id, spec.trial, "".join(traceback.format_exception(exc)))
    return TrialOutcome(spec.env_id, spec.trial, spec.directory, "failed", error=detail)


def run_trial(spec: TrialSpec) -> TrialOutcome:
    """Run one trial into ``spec.directory`` (the process-pool task); failures become an outcome."""
    try:
        return _record(spec, spec.directory)
    except Exception as exc:
        return _failure(spec, exc)


def run_trial_collect(spec: TrialSpec) -> tuple[TrialOutcome, dict[str, bytes]]:
    """Run one trial into a temporary folder and return its files (the Ray task)."""
    tmp = tempfile.mkdtemp(prefix="palaestra-trial-")
    try:
        outcome = _record(spec, tmp)
        contents = {}
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name), "rb") as f:
                contents[name] = f.read()
        return outcome, contents
    except Exception as exc:
        return _failure(spec, exc), {}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _install_files(directory: str, contents: dict[str, bytes]) -> None:
    """Write a trial's files (from a Ray task) into ``directory``, the done-marker last."""
    from palaestra.monitoring import files

    os.makedirs(directory, exist_ok=True)
    marker = os.path.join(directory, DONE_MARKER)
    if os.path.exists(marker):
        os.unlink(marker)
    files.clear_monitor_files(directory)
    for name in sorted(contents, key=lambda n: n == DONE_MARKER):
        if os.path.basename(name) != name:
            raise BenchmarkRunError(f"A Ray task returned an unexpected file name {name!r}")
        tmp = os.path.join(directory, name + "~")
        with open(tmp, "wb") as f:
            f.write(contents[name])
        os.replace(tmp, os.path.join(directory, name))


# -- executing many trials -------------------------------------------------------------------------


def _is_main_guard(node: ast.AST) -> TypeGuard[ast.If]:
    """``if __name__ == "__main__":`` (either way round)."""
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1):
        return False
    sides = [node.test.left, node.test.comparators[0]]
    names = {side.id for side in sides if isinstance(side, ast.Name)}
    constants = {side.value for side in sides if isinstance(side, ast.Constant)}
    return isinstance(node.test.ops[0], ast.Eq) and names == {"__name__"} and constants == {"__main__"}


def check_main_guard() -> None:
    """Refuse a call from the top level of the main script when that code is not under
    ``if __name__ == "__main__":``.

    Worker processes are spawned, and a spawned process imports the main script again; unguarded, the
    script would start the benchmark once more in every worker, which Python refuses (a RuntimeError
    in each worker, and every trial fails). Found from the call's line in the script's syntax tree.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path:
        return  # python -c, a REPL or a notebook: workers do not import it again
    if getattr(main.__spec__, "name", "").endswith("__main__"):
        return  # python -m package: multiprocessing does not import a package's __main__ again
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return  # called from a function the script defines and calls under the guard, or from elsewhere
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if _is_main_guard(node) and node.lineno <= line <= (node.end_lineno or node.lineno):
            return
    raise BenchmarkRunError(
        f"{os.path.basename(path)} runs the benchmark at its top level (line {line}), but the worker "
        f"processes import {os.path.basename(path)} again, which would start the benchmark in each of them: "
        'put the call under `if __name__ == "__main__":`'
    )



def _run_local(specs: Sequence[TrialSpec], workers: int, on_done: Callable[[TrialOutcome], None]) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("spawn")  # workers import what they need, like Ray's
    pool = ProcessPoolExecutor(max_workers=max(1, min(workers, len(specs))), mp_context=context)
    futures = {pool.submit(run_trial, spec): spec for spec in specs}
    try:
        for future in as_completed(futures):
            spec = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # a worker that died (BrokenProcessPool) or could not unpickle
                outcome = _failure(spec, exc)
            on_done(outcome)
    except BaseException:
        # interrupted: stop the running trials now (they have no done-marker, so a rerun redoes them)
        for future in futures:
            future.cancel()
        processes = getattr(pool, "_processes", None) or {}
        for process in list(processes.values()):
            process.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_ray(
    specs: Sequence[TrialSpec], address: str, workers: int | None, on_done: Callable[[TrialOutcome], None]
) -> None:
    try:
        import ray
    except ImportError:
        raise DependencyNotInstalled(
            "Running a benchmark on Ray needs the ray package: pip install 'palaestra[ray]'"
        ) from None
    started_here = False
    if not ray.is_initialized():
        if address in ("local", ""):
            ray.init(
                num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING
            )
        else:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        started_here = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(run_trial_collect)
        pending = {remote.remote(spec): spec for spec in specs}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            spec = pending.pop(done[0])
            try:
                outcome, contents = ray.get(done[0])
                if outcome.status == "finished":
                    _install_files(spec.directory, contents)
                    outcome.directory = spec.directory
            except Exception as exc:  # a task that died with its worker or node
                outcome = _failure(spec, exc)
            on_done(outcome)
    finally:
        if started_here:
            ray.shutdown()


def _progress_bar(total: int, initial: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit="trial",
        disable=not enabled,
        file=sys.stderr,
        dynamic_ncols=True,
    )


def run_benchmark(
    benchmark: str | Benchmark,
    agent: str,
    out_dir: str | os.PathLike[str],
    *,
    workers: int = 1,
    ray_address: str | None = None,
    seed: int | None = 0,
    force: bool = False,
    progress: bool | None = None,
    env_ids: Iterable[str] | None = None,
) -> RunReport:
    """Run every trial of ``benchmark`` with ``agent`` (``module:factory`` or a built-in name).

    ``workers`` processes run at a time (with Ray: the CPUs of a local instance). ``progress``
    shows a progress bar on stderr (default: when stderr is a terminal). ``env_ids`` limits the run
    to some of the benchmark's envs. Returns a :class:`RunReport`; failed trials are reported there,
    unless every trial that ran failed: then :class:`BenchmarkRunError` names the first failure (its
    ``report`` has them all). Called from a script, the call must be under
    ``if __name__ == "__main__":`` (the worker processes import the script again).
    """
    from palaestra.agents.base import load_agent_factory

    bench = benchmark_spec(benchmark) if isinstance(benchmark, str) else benchmark
    if workers < 1:
        raise BenchmarkRunError(f"--workers must be at least 1, not {workers}")
    if ray_address is None:
        check_main_guard()
    load_agent_factory(agent)  # fail now, not once per trial
    out = os.path.abspath(os.fspath(out_dir))
    os.makedirs(out, exist_ok=True)
    selected = set(env_ids) if env_ids is not None else None
    if selected is not None and not selected <= bench.env_ids:
        raise BenchmarkRunError(
            f"Env ids {sorted(selected - bench.env_ids)} are not part of benchmark {bench.id}"
        )

    report = RunReport(bench.id, out)
    started = time.monotonic()
    to_run: list[TrialSpec] = []
    for spec in plan_trials(bench, out, agent, seed):
        if selected is not None and spec.env_id not in selected:
            continue
        why = report.unavailable.get(spec.env_id) or catalogue.unavailable_reason(spec.env_id, import_probe=True)
        if why is not None:
            if spec.env_id not in report.unavailable:
                logger.warning(
                    "Skipping %s (%d trials): %s; its trials score 0.",
                    spec.env_id,
                    bench.task_specs(spec.env_id)[0].trials,
                    why,
                )
            report.unavailable[spec.env_id] = why
            report.outcomes.append(
                TrialOutcome(spec.env_id, spec.trial, spec.directory, "unavailable", error=why)
            )
        elif is_finished(spec, force=force):
            logger.debug("Skipping finished trial %s", spec.directory)
            report.outcomes.append(TrialOutcome(spec.env_id, spec.trial, spec.directory, "skipped"))
        else:
            to_run.append(spec)
    skipped = report.count("skipped")
    if skipped:
        logger.info("Resuming: %d finished trial(s) under %s are kept", skipped, out)

    enabled = sys.stderr.isatty() if progress is None else progress
    bar = _progress_bar(len(to_run) + skipped, skipped, bench.id, enabled)

    def on_done(outcome: TrialOutcome) -> None:
        report.outcomes.append(outcome)
        bar.update(1)
        if outcome.status == "failed":
            logger.error("Trial %s-%d failed: %s", outcome.env_id, outcome.trial, outcome.error)
        else:
            logger.info(
                "Trial %s-%d finished: %d steps, %d episodes, %.1f s",
                outcome.env_id,
                outcome.trial,
                outcome.steps,
                outcome.episodes,
                outcome.seconds,
            )

    try:
        if to_run and ray_address is not None:
            _run_ray(to_run, ray_address, workers if workers > 1 else None, on_done)
        elif to_run:
            _run_local(to_run, workers, on_done)
    finally:
        bar.close()
    report.seconds = time.monotonic() - started
    if to_run and len(report.failed) == len(to_run):
        first = min(report.failed, key=lambda o: (o.env_id, o.trial))
        raise BenchmarkRunError(
            f"Every trial of {bench.id} that ran failed ({len(to_run)}); {first.env_id}-{first.trial}: "
            f"{first.error}",
            report,
        )
    return report
