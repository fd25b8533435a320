"""Response times of the scoreboard's environment and compare pages with 10,000 evaluations stored.

Starts a real ``palaestra server`` process (SQLite + file store, the embedded defaults) on a free
loopback port, stores ``--evaluations`` evaluations of one env straight through the server's
database layer (with the per-env aggregates the ingest keeps; the first ``--with-episodes`` of them
with a stored episode batch of 1,000 to 3,000 episodes, as an upload leaves it), then GETs pages
with httpx, sequentially, and prints p50/p95 per page variant: every leaderboard order, first and
deep pages; the compare page of 2 and of 10 evaluations (the same ones: their curves are cached
after the first view) and of 5 evaluations drawn at random from the stored ones for every request
(mostly not cached: each curve is read from the blob store and computed); plus the home, an
evaluation and an algorithm page (its curve across runs), the users and algorithms indexes and a
search for reference.
Targets (issues 5 and 17): env and compare pages answer in under 100 ms at p95 with 10,000
evaluations stored.

    .venv/bin/python bench/web_pages.py [--evaluations 10000] [--requests 200] [--database-url URL]
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
    deadline = time.monotonic() + 60
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
    raise SystemExit("palaestra server did not start within 60 s")


def store_batches(data_dir: Path, ids: list[str], seed: int = 0) -> list[tuple[str, dict[str, Any]]]:
    """An episode batch (1,000 to 3,000 episodes) for each of ``ids`` in the server's blob store;
    returns their blob keys and the curves ingest derives from them."""
    import json

    import numpy as np

    from palaestra.scoreboard.server.config import resolve_config
    from palaestra.scoreboard.server.evaluation_scoring import curves_of
    from palaestra.scoreboard.server.storage import open_store

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


def fill(database_url: str, data_dir: Path, n: int, with_episodes: int, seed: int = 0) -> tuple[str, list[str], str]:
    """Store ``n`` evaluations of ENV_ID (20 users, 200 algorithms), the first ``with_episodes`` with
    an episode batch; returns one evaluation id, the ids with batches and the busiest algorithm's id."""
    import sqlalchemy as sa

    from palaestra.scoreboard.server import db as m
    from palaestra.scoreboard.server.account_tables import User
    from palaestra.scoreboard.server.database import Database
    from palaestra.scoreboard.server.ids import new_id

    rng = random.Random(seed)
    database = Database(database_url)
    now = datetime.now(timezone.utc)
    try:
        with database.write() as session:
            users = [User(name=f"bench-user-{i}") for i in range(20)]
            session.add_all(users)
            session.flush()
            algorithms = [
                m.Algorithm(id=new_id("algorithm"), user_seq=users[i % 20].seq, name=f"algorithm {i}")
                for i in range(200)
            ]
            session.add_all(algorithms)
            session.flush()
            rows: list[dict[str, Any]] = []
            ids = [new_id("evaluation") for _ in range(n)]
            keys = store_batches(data_dir, ids[:with_episodes], seed)
            for i in range(n):
                solved = rng.random() < 0.4
                mean = rng.uniform(480, 500) if solved else rng.uniform(10, 474)
                # the evaluations with episodes belong to algorithm 0 (its page pools them across runs)
                algorithm = algorithms[0 if i < with_episodes else rng.randrange(1, 200)]
                # one in ten unsolved runs is shorter than the window: no mean, the mean of its episodes
                short = not solved and rng.random() < 0.1
                rows.append(dict(
                    id=ids[i], user_seq=users[i % 20].seq, env_id=ENV_ID, env_listed=True,
                    algorithm_seq=algorithm.seq, trials=100, reward_threshold=475.0,
                    episode_batch_key=keys[i][0] if i < with_episodes else None,
                    curves=keys[i][1] if i < with_episodes else None,
                    solved=solved, episode_t_value=rng.randrange(0, 2000) if solved else None,
                    timestep_t_value=rng.randrange(0, 10**6) if solved else None, mean=None if short else mean,
                    episodes_mean=mean if short else None, ranking_mean=mean,
                    error=None if short else rng.uniform(0, 5),
                    number_episodes=rng.randrange(5, 100) if short else rng.randrange(100, 3000),
                    number_timesteps=rng.randrange(10**4, 10**6), seconds_in_total=rng.uniform(10, 1000),
                    videos=[], writeup="https://example.org/writeup" if i % 7 == 0 else None,
                    created=now - timedelta(seconds=n - i),
                ))
            session.execute(sa.insert(m.Evaluation), rows)
            best = max((r for r in rows if r["mean"] is not None), key=lambda r: r["mean"])
            session.merge(m.EnvStats(
                env_id=ENV_ID, group_id="classic_control", listed=True, evaluation_count=n,
                solved_count=sum(1 for r in rows if r["solved"]), best_mean=best["mean"],
                best_evaluation_id=best["id"], last_evaluation=now,
            ))
        return str(rows[n // 2]["id"]), ids[:with_episodes], algorithms[0].id
    finally:
        database.dispose()


def measure(client: httpx.Client, path: str | Callable[[], str], requests: int) -> list[float]:
    """Response times in ms of ``requests`` GETs of ``path`` (or of a new path from it each time)."""
    next_path = path if callable(path) else (lambda: path)
    for _ in range(5):  # warm up (templates compiled, caches filled)
        client.get(next_path()).raise_for_status()
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--with-episodes", type=int, default=200, help="evaluations with an episode batch")
    parser.add_argument("--database-url", default=None, help="default: SQLite in a temporary data directory")
    parser.add_argument(
        "--anonymous-read-limit",
        type=int,
        default=0,
        help="count the reads against this limit a minute (high enough never to refuse; default 0: off)",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="palaestra-bench-web-") as tmp:
        data_dir = Path(tmp)
        proc, url, _ = start_server(data_dir, args.database_url, args.anonymous_read_limit)
        try:
            database_url = args.database_url or f"sqlite:///{data_dir / 'scoreboard.sqlite3'}"
            from palaestra.scoreboard.server.config import normalise_database_url

            t0 = time.perf_counter()
            evaluation_id, with_batches, algorithm_id = fill(
                normalise_database_url(database_url), data_dir, args.evaluations, args.with_episodes
            )
            print(f"stored {args.evaluations} evaluations of {ENV_ID} in {time.perf_counter() - t0:.1f} s")
            last_page = -(-args.evaluations // 25)
            pages = {
                "env page (default order)": f"/envs/{ENV_ID}",
                "env page, by mean": f"/envs/{ENV_ID}?sort=mean",
                "env page, newest first": f"/envs/{ENV_ID}?sort=submitted",
                "env page, by algorithm": f"/envs/{ENV_ID}?sort=algorithm",
                f"env page, page {last_page // 2}": f"/envs/{ENV_ID}?page={last_page // 2}",
                f"env page, last page ({last_page})": f"/envs/{ENV_ID}?page={last_page}",
            }
            picker = random.Random(1)
            compare: dict[str, str | Callable[[], str]] = {
                "compare, 2 evaluations": "/compare?" + urlencode([("e", i) for i in with_batches[:2]]),
                "compare, 10 evaluations": "/compare?" + urlencode([("e", i) for i in with_batches[:10]]),
                "compare, 5 drawn at random": lambda: "/compare?" + urlencode(
                    [("e", i) for i in picker.sample(with_batches, 5)]
                ),
            }
            others = {
                "home page": "/",
                "evaluation page": f"/evaluations/{evaluation_id}",
                f"algorithm page ({len(with_batches)} runs pooled)": f"/algorithms/{algorithm_id}",
                "users index": "/users",
                "algorithms index": "/algorithms",
                "algorithms index, latest upload": "/algorithms?sort=recent",
                "search": "/search?q=algorithm+1",
            }
            print(f"{'page':36s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s}  p95/target")
            targeted: dict[str, list[float]] = {"env page": [], "compare page": []}
            with httpx.Client(base_url=url, timeout=60) as client:
                for group, variants in (("env page", pages), ("compare page", compare), ("", others)):
                    for label, path in variants.items():
                        times = measure(client, path, args.requests)
                        p50, p95 = statistics.median(times), percentile(times, 95)
                        if group:
                            targeted[group].append(p95)
                        print(f"{label:36s} {p50:8.1f} {p95:8.1f} {max(times):8.1f}  {p95 / TARGET_P95_MS:.2f}")
            ok = True
            for group, p95s in targeted.items():
                worst = max(p95s)
                verdict = "meets" if worst < TARGET_P95_MS else "MISSES"
                ok = ok and worst < TARGET_P95_MS
                print(f"worst {group} p95: {worst:.1f} ms; {verdict} the {TARGET_P95_MS:.0f} ms target")
            return 0 if ok else 1
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    raise SystemExit(main())
