"""Server CPU per upload into one benchmark run: the 1st against the 24th, two palaestra trees side by side.

A benchmark run collects one evaluation per trial. Each upload into it re-scores the run; when that
re-read every earlier batch of the run and bootstrapped 50,000 replicates inside the request, the n-th
upload cost n times the first (issue 23: 80 -> 300 ms of server CPU at the 24th of 24 trials of 30,000
episodes). This script starts a real ``palaestra server`` (SQLite, fresh data folder) per source tree
(``--tree NAME=SRC``, default: /work/main/src as ``main`` and this checkout's src as ``branch``), uploads
``--trials`` CartPole-v0 evaluations of ``--episodes`` episodes each into one ClassicControl2-v1 run of
each, alternating between the servers (so that both see the same machine), and prints the server's
CPU (user + system, every process of its group, until it is idle again: work left to after the
response counts) and the client's wall time per upload: the 1st, the last, and their ratio, per tree,
then the trees' ratio at the last upload.

    python bench/benchmark_run_uploads.py --trials 24 --episodes 30000
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from server_load import Http, free_port, group_cpu_seconds

BENCHMARK = "ClassicControl2-v1"
ENV_ID = "CartPole-v0"
HERE = Path(__file__).resolve().parent.parent
#: the server counts as idle once it used less than this much CPU in IDLE_WINDOW_S
IDLE_CPU_S, IDLE_WINDOW_S = 0.005, 0.2


def episode_batch(n: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 200, n)
    t0 = 1_700_000_000.0
    return json.dumps(
        {
            "data_sources": [0] * n,
            "episode_lengths": lengths.tolist(),
            "episode_rewards": lengths.astype(float).tolist(),
            "episode_types": ["t"] * n,
            "initial_reset_timestamps": [t0],
            "timestamps": (t0 + np.cumsum(lengths) * 0.01).tolist(),
        }
    ).encode()


@dataclass
class Server:
    name: str
    url: str
    key: str
    pgid: int
    run_id: str = ""
    cpu_ms: list[float] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)


@contextmanager
def running_server(name: str, src: str) -> Iterator[Server]:
    """A fresh ``palaestra server`` of source tree ``src`` (its own data folder) and a user's key."""
    with tempfile.TemporaryDirectory(prefix=f"palaestra-bench-{name}-") as data_dir:
        env = {**os.environ, "PYTHONPATH": src, "PALAESTRA_DATA_DIR": data_dir,
               "PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR": "0", "PALAESTRA_RATE_LIMIT_PENDING_FILES": "0"}
        for name_ in ("PALAESTRA_STORAGE", "PALAESTRA_DATABASE_URL"):
            env.pop(name_, None)
        port = free_port()
        log = open(Path(data_dir) / "server.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "palaestra", "-q", "server", "--port", str(port), "--workers", "1"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((Path(data_dir) / "server.log").read_text()[-3000:])
                time.sleep(0.1)
            created = subprocess.run(
                [sys.executable, "-m", "palaestra", "users", "create", "bench"],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            yield Server(name, url, created.stdout.strip().splitlines()[-1], proc.pid)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()


def cpu_until_idle(pgid: int) -> float:
    """The server's CPU seconds once it stopped working (what it does after a response counts)."""
    last = group_cpu_seconds(pgid)
    while True:
        time.sleep(IDLE_WINDOW_S)
        now = group_cpu_seconds(pgid)
        if now - last < IDLE_CPU_S:
            return now
        last = now


def upload(server: Server, client: Http, batch: bytes) -> None:
    """One upload into the server's run: the file, its signed form upload, the evaluation."""
    before = cpu_until_idle(server.pgid)
    start = time.perf_counter()
    status, f = client.post_json("/v1/files", {"purpose": "episode_batch"})
    assert status == 201, f
    status, text = client.post_form(f["post_url"], f["post_fields"], batch)
    assert status == 204, text[:300]
    body = {"training_episode_batch": f["id"], "env": ENV_ID, "benchmark_run_id": server.run_id}
    status, ev = client.post_json("/v1/evaluations", body)
    assert status == 201, ev
    server.wall_ms.append((time.perf_counter() - start) * 1000)
    server.cpu_ms.append((cpu_until_idle(server.pgid) - before) * 1000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=24, help="uploads into the run (default 24)")
    parser.add_argument("--episodes", type=int, default=30000, help="episodes per upload (default 30,000)")
    parser.add_argument("--tree", action="append", metavar="NAME=SRC",
                        help="a source tree to serve (default: main=/work/main/src branch=./src)")  # fmt: skip
    args = parser.parse_args()
    trees = [t.split("=", 1) for t in args.tree or ["main=/work/main/src", f"branch={HERE / 'src'}"]]
    batches = [episode_batch(args.episodes, seed) for seed in range(args.trials)]
    with ExitStack() as stack:
        servers = [stack.enter_context(running_server(name, src)) for name, src in trees]
        clients = {s.name: Http(s.url, {"Authorization": f"Bearer {s.key}"}) for s in servers}
        for s in servers:
            status, run = clients[s.name].post_json("/v1/benchmark_runs", {"benchmark_id": BENCHMARK})
            assert status == 201, run
            s.run_id = run["id"]
        for batch in batches:
            for s in servers:  # alternating: both trees see the same machine at each upload
                upload(s, clients[s.name], batch)
    print(f"{args.trials} uploads of {args.episodes:,} episodes into one {BENCHMARK} run, per tree:")
    print(f"{'tree':10} {'CPU 1st ms':>11} {'CPU last ms':>12} {'last/1st':>9} {'wall 1st ms':>12} {'wall last ms':>13}")
    for s in servers:
        print(f"{s.name:10} {s.cpu_ms[0]:11.0f} {s.cpu_ms[-1]:12.0f} {s.cpu_ms[-1] / s.cpu_ms[0]:9.2f} "
              f"{s.wall_ms[0]:12.0f} {s.wall_ms[-1]:13.0f}")  # fmt: skip
    if len(servers) == 2:
        a, b = servers
        print(f"{b.name}/{a.name} at the last upload: CPU {b.cpu_ms[-1] / a.cpu_ms[-1]:.2f}, "
              f"wall {b.wall_ms[-1] / a.wall_ms[-1]:.2f}; at the first: CPU {b.cpu_ms[0] / a.cpu_ms[0]:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
