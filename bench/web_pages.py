"""Response times of every scoreboard page at field scale (issue 23).

Starts a real ``palaestra server`` process (SQLite + file store, the embedded defaults, or
``--database-url`` PostgreSQL) on a free loopback port, stores ``--evaluations`` evaluations straight
through the server's database layer in bulk (COPY on PostgreSQL, one executemany on SQLite), with the
aggregates ingest keeps computed over every row (the per-env ``envs`` rows; the per-user and
per-algorithm rows as migration 0010 backfills them), then GETs every page with httpx, sequentially,
``--passes`` times, and prints per page row the median over the passes of p50 and p95, against the
100 ms target.

Scales: ``one-env`` (every evaluation of CartPole-v1, 20 users, 200 algorithms) and ``field`` (100
envs with weights 1/sqrt(rank), one user per 500 evaluations, one algorithm per 200, 2 % of the
evaluations in committed, scored ClassicControl-v1 runs that name their algorithm on the run only).
The first ``--with-episodes`` evaluations (of CartPole-v1 and one algorithm, whose page pools them)
have a stored episode batch of 1,000 to 3,000 episodes, as an upload leaves it.

Rows: the env page (the busiest env) in every order, first, middle and last page, and ranked as
entries; compare of 2 and 10 evaluations (their curves cached after the first view) and of 5 drawn
at random for every request; home, an evaluation, the algorithm page and its curve, a user page and
its last page, the users and algorithms indexes in every order and their last pages, search, the
benchmarks index, a benchmark and a benchmark run.

    .venv/bin/python bench/web_pages.py --scale one-env --evaluations 100000
    .venv/bin/python bench/web_pages.py --scale field --evaluations 1000000 --database-url URL
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

ENV_ID = "CartPole-v1"
TARGET_P95_MS = 100.0

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    data_dir: Path, database_url: str | None, read_limit: int = 0
) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, PALAESTRA_DATA_DIR=str(data_dir), PALAESTRA_PUBLIC_URL=url)
    # thousands of anonymous page reads a minute from one address: no limit unless one is asked for
    # (--anonymous-read-limit measures what counting them costs: one counter write per read)
    env["PALAESTRA_RATE_LIMIT_ANONYMOUS_READS"] = str(read_limit)
    if database_url:
        env["PALAESTRA_DATABASE_URL"] = database_url
    log = open(data_dir / "server.log", "wb")  # noqa: SIM115  (kept open by the child)
    proc = subprocess.Popen(
        [sys.executable, "-m", "palaestra", "server", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 180  # a loaded machine starts it slowly
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"palaestra server exited with {proc.returncode}; see {data_dir / 'server.log'}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                return proc, url, env
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("palaestra server did not start within 180 s")


def store_batches(data_dir: Path, ids: list[str], seed: int = 0) -> list[tuple[str, dict[str, Any]]]:
    """An episode batch (1,000 to 3,000 episodes) for each of ``ids`` in the server's blob store;
    returns their blob keys and the curves ingest derives from them."""
    import json

    import numpy as np

    from palaestra.scoreboard.server.core.config import resolve_config
    from palaestra.scoreboard.server.core.storage import open_store
    from palaestra.scoreboard.server.evaluations.derive import curves_of

    store = open_store(resolve_config(data_dir=data_dir).storage_url)
    rng = np.random.default_rng(seed)
    keys = []
    t0 = 1.7e9
    for evaluation_id in ids:
        n = int(rng.integers(1000, 3001))
        rewards = np.clip(np.linspace(10, 500, n) + rng.normal(0, 40, n), 8, 500).round()
        doc = {"episode_lengths": rewards.astype(int).tolist(), "episode_rewards": rewards.tolist(),
               "episode_types": ["t"] * n, "timestamps": (t0 + np.cumsum(rewards / 50)).tolist(),
               "initial_reset_timestamp": t0, "env_id": ENV_ID}
        key = f"bench/{evaluation_id}.episode_batch.json"
        store.put_bytes(key, json.dumps(doc).encode())
        keys.append((key, curves_of(doc, 100, 475.0)))
    return keys


@dataclass(frozen=True)
class Scale:
    """How many evaluations, over how many envs, users and algorithms; ``run_share`` of the
    evaluations are a benchmark run's (they name no algorithm: they belong to the run's)."""

    evaluations: int
    envs: int
    users: int
    algorithms: int
    run_share: float


#: (a) one env's field (issue 23: 100,000 of one env); (b) a whole board (1,000,000 in all)
SCALES = {
    "one-env": lambda n: Scale(n, 1, 20, 200, 0.0),
    "field": lambda n: Scale(n, 100, max(20, n // 500), max(200, n // 200), 0.02),
}
BENCHMARK_ID = "ClassicControl-v1"


@dataclass
class Filled:
    """What the pages are measured on: the busiest env, an evaluation, the evaluations with batches,
    the busiest algorithm and user, a benchmark run."""

    env_id: str
    env_count: int
    evaluation_id: str
    with_batches: list[str]
    algorithm_id: str
    user_name: str
    run_id: str | None


def _env_ids(count: int) -> list[str]:
    """ENV_ID first, then other catalogue envs (the busiest first: weights 1/sqrt(rank))."""
    from palaestra import catalogue

    others = [e.env_id for e in catalogue.entries() if e.env_id != ENV_ID]
    return [ENV_ID, *others[: count - 1]]


def _evaluation_row(rng: random.Random, i: int, n: int, now: datetime) -> dict[str, Any]:
    solved = rng.random() < 0.4
    mean = rng.uniform(480, 500) if solved else rng.uniform(10, 474)
    # one in ten unsolved runs is shorter than the window: no mean, the mean of its episodes
    short = not solved and rng.random() < 0.1
    return dict(
        env_listed=True, benchmark_run_seq=None, trials=100, reward_threshold=475.0,
        episode_batch_key=None, curves=None, solved=solved,
        episode_t_value=rng.randrange(0, 2000) if solved else None,
        timestep_t_value=rng.randrange(0, 10**6) if solved else None, mean=None if short else mean,
        episodes_mean=mean if short else None, ranking_mean=mean, error=None if short else rng.uniform(0, 5),
        number_episodes=rng.randrange(5, 100) if short else rng.randrange(100, 3000),
        number_timesteps=rng.randrange(10**4, 10**6), seconds_in_total=rng.uniform(10, 1000),
        videos=[], writeup="https://example.org/writeup" if i % 7 == 0 else None,
        created=now - timedelta(seconds=n - i), evaluation_episodes=0,
    )


class _EnvTally:
    """The per-env aggregates ingest keeps (``envs``), over every stored row."""

    def __init__(self) -> None:
        self.count = self.solved = 0
        self.best: tuple[float, str] | None = None
        self.last: datetime | None = None

    def add(self, row: dict[str, Any]) -> None:
        self.count += 1
        self.solved += bool(row["solved"])
        if row["mean"] is not None and (self.best is None or row["mean"] > self.best[0]):
            self.best = (row["mean"], row["id"])
        self.last = row["created"]


#: the JSON columns of the rows the bench stores (COPY takes their text)
JSON_COLUMNS = ("videos", "curves")


def _bulk_insert(session: Any, rows: list[dict[str, Any]]) -> None:
    """Rows into ``evaluations``: COPY on PostgreSQL, one executemany on SQLite."""
    import sqlalchemy as sa

    from palaestra.scoreboard.server.tables import scores as m

    conn = session.connection()
    if conn.dialect.name != "postgresql":
        conn.execute(sa.insert(m.Evaluation.__table__), rows)  # Core executemany: no ORM per row
        return
    import json

    columns = list(rows[0])
    raw = conn.connection.driver_connection
    with raw.cursor() as cursor, cursor.copy(f"COPY evaluations ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row([json.dumps(row[c]) if c in JSON_COLUMNS and row[c] is not None else row[c] for c in columns])


def _drop_indexes(session: Any) -> list[Any]:
    """Drop the secondary indexes of ``evaluations`` for the bulk load; returns them, to create again."""
    from palaestra.scoreboard.server.tables import scores as m

    indexes = list(m.Evaluation.__table__.indexes)
    for index in indexes:
        index.drop(session.connection())
    return indexes


def _benchmark_runs(session: Any, users: list[Any], algorithms: list[Any], count: int, now: datetime) -> list[Any]:
    """``count`` committed, scored runs of BENCHMARK_ID, each of one algorithm."""
    from palaestra.benchmarks import registry
    from palaestra.scoreboard.server.core.ids import new_id
    from palaestra.scoreboard.server.tables import scores as m

    tasks = registry.benchmarks[BENCHMARK_ID].tasks
    rng = random.Random(7)
    runs = []
    for i in range(count):
        algorithm = algorithms[i % len(algorithms)]
        trial_scores = {t.env_id: [rng.random() for _ in range(t.trials)] for t in tasks}
        value = sum(sum(v) / len(v) for v in trial_scores.values()) / len(trial_scores)
        score = {"tasks": [{"key": k, "trial_scores": v} for k, v in trial_scores.items()], "num_envs_solved": 1}
        runs.append(m.BenchmarkRun(
            id=new_id("benchmark_run"), user_seq=algorithm.user_seq, benchmark_id=BENCHMARK_ID,
            algorithm_seq=algorithm.seq, status="committed", score=score, score_value=value,
            score_evaluations=sum(t.trials for t in tasks), created=now, committed=now,
        ))
    session.add_all(runs)
    session.flush()
    return runs


def fill(database_url: str, data_dir: Path, scale: Scale, with_episodes: int, seed: int = 0) -> Filled:
    """Store ``scale.evaluations`` evaluations (the first ``with_episodes`` with an episode batch, of
    ENV_ID and the first algorithm, whose page pools them across runs) in chunks, with the aggregates
    ingest keeps computed over every row."""
    import sqlalchemy as sa

    from palaestra.scoreboard.server.core.database import Database
    from palaestra.scoreboard.server.core.ids import new_id
    from palaestra.scoreboard.server.tables import scores as m
    from palaestra.scoreboard.server.tables.accounts import User

    rng = random.Random(seed)
    database = Database(database_url)
    now = datetime.now(timezone.utc)
    n = scale.evaluations
    env_ids = _env_ids(scale.envs)
    weights = [1 / (k + 1) ** 0.5 for k in range(len(env_ids))]
    tallies = {env_id: _EnvTally() for env_id in env_ids}
    try:
        with database.write() as session:
            users = [User(name=f"bench-user-{i}") for i in range(scale.users)]
            session.add_all(users)
            session.flush()
            algorithms = [
                m.Algorithm(id=new_id("algorithm"), user_seq=users[i % scale.users].seq, name=f"algorithm {i}")
                for i in range(scale.algorithms)
            ]
            session.add_all(algorithms)
            session.flush()
            runs = _benchmark_runs(session, users, algorithms, int(n * scale.run_share) // 12, now)
            run_tasks = [(r, t.env_id) for r in runs for t in _run_tasks()]
            ids = [new_id("evaluation") for _ in range(n)]
            keys = store_batches(data_dir, ids[:with_episodes], seed)
            chunk: list[dict[str, Any]] = []
            indexes = _drop_indexes(session)
            for i in range(n):
                row = _evaluation_row(rng, i, n, now)
                row["id"] = ids[i]
                if i < with_episodes:
                    algorithm, env_id = algorithms[0], ENV_ID
                    row["episode_batch_key"], row["curves"] = keys[i]
                else:
                    algorithm = algorithms[rng.randrange(1, scale.algorithms)]
                    env_id = rng.choices(env_ids, weights)[0] if scale.envs > 1 else ENV_ID
                if i >= with_episodes and i - with_episodes < len(run_tasks):
                    run, env_id = run_tasks[i - with_episodes]
                    row.update(algorithm_seq=None, benchmark_run_seq=run.seq, user_seq=run.user_seq)
                else:
                    row.update(algorithm_seq=algorithm.seq, user_seq=algorithm.user_seq)
                row["env_id"] = env_id
                tallies[env_id].add(row)
                chunk.append(row)
                if len(chunk) >= 20_000:
                    _bulk_insert(session, chunk)
                    chunk = []
            if chunk:
                _bulk_insert(session, chunk)
            for index in indexes:  # built once over every row: far quicker than row by row
                index.create(session.connection())
            for env_id, t in tallies.items():
                if t.count:
                    session.merge(m.EnvStats(
                        env_id=env_id, group_id="classic_control", listed=True, evaluation_count=t.count,
                        solved_count=t.solved, best_mean=t.best[0] if t.best else None,
                        best_evaluation_id=t.best[1] if t.best else None, last_evaluation=t.last,
                    ))
            _rebuild_index_aggregates(session)
            user_name = session.scalar(sa.select(User.name).where(User.seq == algorithms[0].user_seq))
        if database.engine.dialect.name == "postgresql":
            # what autovacuum does after a bulk load (statistics; the visibility map index-only scans use)
            with database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(sa.text("VACUUM ANALYZE"))
        return Filled(
            ENV_ID, tallies[ENV_ID].count, ids[n // 2], ids[:with_episodes], algorithms[0].id,
            str(user_name), runs[0].id if runs else None,
        )
    finally:
        database.dispose()


def _run_tasks() -> list[Any]:
    from palaestra.benchmarks import registry

    return [t for t in registry.benchmarks[BENCHMARK_ID].tasks for _ in range(t.trials)]


def _rebuild_index_aggregates(session: Any) -> None:
    """The per-user and per-algorithm aggregates, as the migration that adds them backfills them
    (a server without them, as before issue 23, has nothing to rebuild)."""
    try:
        from palaestra.scoreboard.server.evaluations import index_stats
    except ImportError:
        return
    index_stats.rebuild(session.connection())


SLOW_MS = 1000.0


def measure(client: httpx.Client, path: str | Callable[[], str], requests: int) -> list[float]:
    """Response times in ms of ``requests`` GETs of ``path`` (or of a new path from it each time);
    10 of a page whose warm-up still takes over a second a request once warm (it fails the target
    anyway). The first warm-up request may compute what the page keeps (a benchmark's statistics: 14 s
    at 1,666 algorithms) and is not counted, or the row would be measured with 10 requests, whose
    p95 is their slowest."""
    next_path = path if callable(path) else (lambda: path)
    client.get(next_path()).raise_for_status()
    start = time.perf_counter()
    for _ in range(4):  # warm up (templates compiled, caches filled)
        client.get(next_path()).raise_for_status()
    if (time.perf_counter() - start) * 1000 / 4 > SLOW_MS:
        requests = min(requests, 10)
    times = []
    for _ in range(requests):
        target = next_path()
        start = time.perf_counter()
        response = client.get(target)
        times.append((time.perf_counter() - start) * 1000)
        response.raise_for_status()
    return times


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def page_rows(filled: Filled, users: int, algorithms: int) -> dict[str, str | Callable[[], str]]:
    """Every page row measured: ``{label: path (or a new path each time)}``."""
    env = f"/envs/{filled.env_id}"
    last_page = -(-filled.env_count // 25)
    rows: dict[str, str | Callable[[], str]] = {}
    for sort in ("episodes", "mean", "submitted", "algorithm"):
        rows[f"env page, by {sort}"] = f"{env}?sort={sort}"
        rows[f"env page, by {sort}, page {last_page // 2}"] = f"{env}?sort={sort}&page={last_page // 2}"
        rows[f"env page, by {sort}, last page"] = f"{env}?sort={sort}&page={last_page}"
    rows["env page, ranked as entries"] = f"{env}?rank=entries"
    picker = random.Random(1)
    batches = filled.with_batches
    rows["compare, 2 evaluations"] = "/compare?" + urlencode([("e", i) for i in batches[:2]])
    rows["compare, 10 evaluations"] = "/compare?" + urlencode([("e", i) for i in batches[:10]])
    rows["compare, 5 drawn at random"] = lambda: "/compare?" + urlencode([("e", i) for i in picker.sample(batches, 5)])
    rows["home page"] = "/"
    rows["evaluation page"] = f"/evaluations/{filled.evaluation_id}"
    rows[f"algorithm page ({len(batches)} runs pooled)"] = f"/algorithms/{filled.algorithm_id}"
    rows["algorithm page, its curve"] = f"/algorithms/{filled.algorithm_id}?env={filled.env_id}"
    rows["user page"] = f"/users/{filled.user_name}"
    rows["user page, last page"] = f"/users/{filled.user_name}?page=100000"
    for sort in ("evaluations", "recent", "name"):
        rows[f"users index, by {sort}"] = f"/users?sort={sort}"
        rows[f"algorithms index, by {sort}"] = f"/algorithms?sort={sort}"
    rows["users index, last page"] = f"/users?page={-(-users // 25)}"
    rows["algorithms index, last page"] = f"/algorithms?page={-(-algorithms // 25)}"
    rows["search"] = "/search?q=algorithm+1"
    rows["search, users"] = "/search?q=bench-user&kind=user"
    rows["benchmarks index"] = "/benchmarks"
    if filled.run_id:
        rows["benchmark page"] = f"/benchmarks/{BENCHMARK_ID}"
        rows["benchmark run page"] = f"/benchmark_runs/{filled.run_id}"
    return rows


def report(times: dict[str, list[list[float]]]) -> bool:
    """Print p50 and p95 per row (the median over the passes) against the target; True if all pass."""
    passes = len(next(iter(times.values())))
    print(f"{'page':40s} {'p50 ms':>8s} {'p95 ms':>8s} {'p95 each pass':>22s}  target {TARGET_P95_MS:.0f} ms")
    ok = True
    for label, runs in times.items():
        p50 = statistics.median(statistics.median(t) for t in runs)
        p95s = [percentile(t, 95) for t in runs]
        p95 = statistics.median(p95s)
        verdict = "PASS" if p95 < TARGET_P95_MS else "FAIL"
        ok = ok and p95 < TARGET_P95_MS
        each = " ".join(f"{v:.0f}" for v in p95s)
        print(f"{label:40s} {p50:8.1f} {p95:8.1f} {each:>22s}  {verdict}")
    print(f"{passes} pass(es); {'every row meets' if ok else 'some rows MISS'} the {TARGET_P95_MS:.0f} ms p95 target")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="one-env",
                        help="one-env: every evaluation of CartPole-v1; field: 100 envs, many users and algorithms")
    parser.add_argument("--evaluations", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=100, help="requests per page row and pass")
    parser.add_argument("--passes", type=int, default=3, help="measurement passes over every row (medians reported)")
    parser.add_argument("--with-episodes", type=int, default=200, help="evaluations with an episode batch")
    parser.add_argument("--database-url", default=None, help="default: SQLite in a temporary data directory")
    parser.add_argument(
        "--anonymous-read-limit",
        type=int,
        default=0,
        help="count the reads against this limit a minute (high enough never to refuse; default 0: off)",
    )
    args = parser.parse_args()
    scale = SCALES[args.scale](args.evaluations)

    with tempfile.TemporaryDirectory(prefix="palaestra-bench-web-") as tmp:
        data_dir = Path(tmp)
        proc, url, _ = start_server(data_dir, args.database_url, args.anonymous_read_limit)
        try:
            database_url = args.database_url or f"sqlite:///{data_dir / 'scoreboard.sqlite3'}"
            from palaestra.scoreboard.server.core.config import normalise_database_url

            t0 = time.perf_counter()
            filled = fill(normalise_database_url(database_url), data_dir, scale, args.with_episodes)
            print(
                f"stored {scale.evaluations} evaluations ({scale.envs} envs, {scale.users} users, "
                f"{scale.algorithms} algorithms; {filled.env_count} of {filled.env_id}) "
                f"in {time.perf_counter() - t0:.1f} s"
            )
            rows = page_rows(filled, scale.users, scale.algorithms)
            times: dict[str, list[list[float]]] = {label: [] for label in rows}
            with httpx.Client(base_url=url, timeout=120) as client:
                for _ in range(args.passes):
                    for label, path in rows.items():
                        times[label].append(measure(client, path, args.requests))
            return 0 if report(times) else 1
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    raise SystemExit(main())
