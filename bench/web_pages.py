"""Response times of the scoreboard's environment page with 10,000 evaluations stored.

Starts a real ``palaestra server`` process (SQLite + file store, the embedded defaults) on a free
loopback port, stores ``--evaluations`` evaluations of one env straight through the server's
database layer (with the per-env aggregates the ingest keeps), then GETs the env page with httpx,
sequentially, and prints p50/p95 per page variant (every leaderboard order, first and deep pages),
plus the home and an evaluation page, the users and algorithms indexes and a search for reference.
Target (issue 5): the env page answers in under 100 ms at p95 with 10,000 evaluations stored.

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
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx

ENV_ID = "CartPole-v1"
TARGET_P95_MS = 100.0

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    data_dir: Path, database_url: str | None
) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, PALAESTRA_DATA_DIR=str(data_dir), PALAESTRA_PUBLIC_URL=url)
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


def fill(database_url: str, n: int, seed: int = 0) -> str:
    """Store ``n`` evaluations of ENV_ID (20 users, 200 algorithms); returns one evaluation id."""
    import sqlalchemy as sa

    from palaestra.scoreboard.server import db as m
    from palaestra.scoreboard.server.ids import new_id

    rng = random.Random(seed)
    database = m.Database(database_url)
    now = datetime.now(timezone.utc)
    try:
        with database.write() as session:
            users = [m.User(name=f"bench-user-{i}") for i in range(20)]
            session.add_all(users)
            session.flush()
            algorithms = [
                m.Algorithm(id=new_id("algorithm"), user_seq=users[i % 20].seq, name=f"algorithm {i}")
                for i in range(200)
            ]
            session.add_all(algorithms)
            session.flush()
            rows: list[dict[str, Any]] = []
            for i in range(n):
                solved = rng.random() < 0.4
                mean = rng.uniform(480, 500) if solved else rng.uniform(10, 474)
                # one in ten unsolved runs is shorter than the window: no mean, the mean of its episodes
                short = not solved and rng.random() < 0.1
                rows.append(dict(
                    id=new_id("evaluation"), user_seq=users[i % 20].seq, env_id=ENV_ID, env_listed=True,
                    algorithm_seq=algorithms[rng.randrange(200)].seq, trials=100, reward_threshold=475.0,
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
        return str(rows[n // 2]["id"])
    finally:
        database.dispose()


def measure(client: httpx.Client, path: str, requests: int) -> list[float]:
    for _ in range(5):  # warm up (templates compiled, caches filled)
        client.get(path).raise_for_status()
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        response = client.get(path)
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
    parser.add_argument("--database-url", default=None, help="default: SQLite in a temporary data directory")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="palaestra-bench-web-") as tmp:
        data_dir = Path(tmp)
        proc, url, _ = start_server(data_dir, args.database_url)
        try:
            database_url = args.database_url or f"sqlite:///{data_dir / 'scoreboard.sqlite3'}"
            from palaestra.scoreboard.server.config import normalise_database_url

            t0 = time.perf_counter()
            evaluation_id = fill(normalise_database_url(database_url), args.evaluations)
            print(f"stored {args.evaluations} evaluations of {ENV_ID} in {time.perf_counter() - t0:.1f} s")
            last_page = -(-args.evaluations // 25)
            pages = {
                "env page (default order)": f"/envs/{ENV_ID}",
                "env page, by mean": f"/envs/{ENV_ID}?sort=mean",
                "env page, newest first": f"/envs/{ENV_ID}?sort=submitted",
                "env page, by algorithm": f"/envs/{ENV_ID}?sort=algorithm",
                f"env page, page {last_page // 2}": f"/envs/{ENV_ID}?page={last_page // 2}",
                f"env page, last page ({last_page})": f"/envs/{ENV_ID}?page={last_page}",
                "home page": "/",
                "evaluation page": f"/evaluations/{evaluation_id}",
                "users index": "/users",
                "algorithms index": "/algorithms",
                "algorithms index, latest upload": "/algorithms?sort=recent",
                "search": "/search?q=algorithm+1",
            }
            print(f"{'page':36s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s}  p95/target")
            env_p95: list[float] = []
            with httpx.Client(base_url=url, timeout=30) as client:
                for label, path in pages.items():
                    times = measure(client, path, args.requests)
                    p50, p95 = statistics.median(times), percentile(times, 95)
                    if label.startswith("env page"):
                        env_p95.append(p95)
                    print(f"{label:36s} {p50:8.1f} {p95:8.1f} {max(times):8.1f}  {p95 / TARGET_P95_MS:.2f}")
            worst = max(env_p95)
            verdict = "meets" if worst < TARGET_P95_MS else "MISSES"
            print(f"worst env-page p95: {worst:.1f} ms; {verdict} the {TARGET_P95_MS:.0f} ms target")
            return 0 if worst < TARGET_P95_MS else 1
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    raise SystemExit(main())
