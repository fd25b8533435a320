"""What following runs live costs: the follower on the training machine, and the server per update.

1. **Follower CPU.** A Monitor process journals 1,000 CartPole episodes a minute into a directory (it
   paces itself with sleeps), ``palaestra upload --follow DIR`` follows it at the default 5-second
   interval, and the follower's CPU time (``/proc/PID/stat``, after its start-up) over the run is
   printed as a share of one core, against the issue's target of 1 %.
2. **The server under many followed runs.** R runs (default 200) are followed at once: R threads
   each send what a follower sends for a run of 1,000 episodes a minute (a chunk of 83 episodes every
   5 s) to one SQLite ``palaestra server``, while a reader fetches the live page's JSON and the env
   page. Printed: the server's CPU per update (``/proc`` of the server), chunk latency p50/p95, and the
   page latencies p95 against the page target (100 ms, bench/web_pages.py). The peer of an update is
   the upload of the whole run so far (what a board that re-reads everything would pay each time):
   its ``POST /v1/evaluations`` for a run of the same length is timed once and the ratio printed.

    .venv/bin/python bench/live_follow.py                  # 60 s follower run, 200 runs for 60 s
    .venv/bin/python bench/live_follow.py --quick          # 50 runs for 20 s, for a loaded machine
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from server_load import running_server  # bench/ is the script's folder

TARGET_FOLLOWER_CORE_SHARE = 0.01
TARGET_PAGE_P95_MS = 100.0
EPISODES_PER_MINUTE = 1000
INTERVAL_S = 5.0
CHUNK = round(EPISODES_PER_MINUTE / 60 * INTERVAL_S)  # 83 episodes per update

TRAIN = r"""
import sys, time
import gymnasium as gym
import palaestra
directory, seconds, per_minute = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
env = palaestra.Monitor(gym.make("CartPole-v1"), directory, video_callable=False)
start, n = time.monotonic(), 0
while time.monotonic() - start < seconds:
    env.reset(seed=n)
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        done = term or trunc
    n += 1
    wait = start + n * 60.0 / per_minute - time.monotonic()
    if wait > 0:
        time.sleep(wait)
env.close()
print(n)
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its reaped children."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(f) for f in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def follower_cpu(url: str, key: str, seconds: float) -> None:
    with tempfile.TemporaryDirectory(prefix="palaestra-live-") as tmp:
        run = Path(tmp) / "run"
        training = subprocess.Popen(
            [sys.executable, "-c", TRAIN, str(run), str(seconds), str(EPISODES_PER_MINUTE)],
            stdout=subprocess.PIPE,
            text=True,
        )
        env = {**os.environ, "PALAESTRA_SERVER": url, "PALAESTRA_API_KEY": key}
        follower = subprocess.Popen(
            [sys.executable, "-m", "palaestra", "-q", "upload", "--follow", str(run), "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        while not (run / ".palaestra-live.json").exists():
            time.sleep(0.05)
        time.sleep(INTERVAL_S + 0.5)  # past its start-up (imports, first poll)
        cpu0, t0 = cpu_seconds(follower.pid), time.monotonic()
        while training.poll() is None:
            cpu1, t1 = cpu_seconds(follower.pid), time.monotonic()
            time.sleep(0.5)
        episodes = int(training.stdout.read().strip() or 0) if training.stdout else 0
        follower.communicate(timeout=120)
    share = (cpu1 - cpu0) / (t1 - t0)
    print(
        f"follower: {episodes} episodes in {seconds:.0f} s ({EPISODES_PER_MINUTE}/min), interval {INTERVAL_S:.0f} s"
    )
    print(
        f"  CPU {100 * share:.3f} % of one core over {t1 - t0:.0f} s "
        f"= {share / TARGET_FOLLOWER_CORE_SHARE:.2f}x the 1 % target"
    )


def _chunk(source: str, start: int, n: int) -> dict[str, Any]:
    now = time.time()
    return {
        "source": source,
        "start": start,
        "initial_reset_timestamp": now - 3600,
        "timestamps": [now + i * 1e-3 for i in range(n)],
        "episode_lengths": [20] * n,
        "episode_rewards": [20.0] * n,
        "episode_types": ["t"] * n,
        "episode_truncated": [False] * n,
    }


def many_runs(url: str, key: str, runs: int, seconds: float, server_pid: int) -> float:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        ids = [
            http.post("/v1/live_evaluations", json={"env": "CartPole-v1"}).json()["id"] for _ in range(runs)
        ]
    chunk_ms: list[float] = []
    page_ms: dict[str, list[float]] = {"live json": [], "env page": []}
    lock, stop = threading.Lock(), threading.Event()

    def follow(live_id: str, offset: float) -> None:
        time.sleep(offset)
        position = 0
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            while not stop.is_set():
                t = time.perf_counter()
                r = http.post(
                    f"/v1/live_evaluations/{live_id}/chunks", json=_chunk("m.manifest.json", position, CHUNK)
                )
                with lock:
                    chunk_ms.append(1000 * (time.perf_counter() - t))
                position = r.json()["position"]
                stop.wait(INTERVAL_S)

    def read() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            while not stop.is_set():
                for name, path in (("live json", f"/live/{ids[0]}.json"), ("env page", "/envs/CartPole-v1")):
                    t = time.perf_counter()
                    http.get(path)
                    page_ms[name].append(1000 * (time.perf_counter() - t))
                stop.wait(0.5)

    followers = [threading.Thread(target=follow, args=(i, INTERVAL_S * k / runs)) for k, i in enumerate(ids)]
    reader = threading.Thread(target=read)
    # first half: the followers alone (the server's CPU per update); second half: a reader too (pages)
    for th in followers:
        th.start()
    time.sleep(INTERVAL_S)  # every follower has started
    with lock:
        updates0 = len(chunk_ms)
    cpu0 = cpu_seconds(server_pid)
    time.sleep(seconds / 2)
    server_cpu = cpu_seconds(server_pid) - cpu0
    with lock:
        updates = len(chunk_ms) - updates0
    reader.start()
    time.sleep(seconds / 2)
    stop.set()
    for th in [*followers, reader]:
        th.join()
    per_update_ms = 1000 * server_cpu / max(1, updates)
    print(
        f"server: {runs} runs followed at once on SQLite for {seconds:.0f} s, {len(chunk_ms)} updates of {CHUNK} episodes"
    )
    print(
        f"  server CPU per update {per_update_ms:.2f} ms; chunk latency p50 {np.percentile(chunk_ms, 50):.1f} ms, "
        f"p95 {np.percentile(chunk_ms, 95):.1f} ms"
    )
    for name, values in page_ms.items():
        p95 = float(np.percentile(values, 95))
        print(
            f"  {name} p95 {p95:.1f} ms under that load = {p95 / TARGET_PAGE_P95_MS:.2f}x the 100 ms page target"
        )
    return per_update_ms


def upload_peer(url: str, key: str, episodes: int, per_update_ms: float) -> None:
    """One upload of a run of ``episodes`` episodes: what re-deriving everything per update would cost."""
    from palaestra.scoreboard.client import ScoreboardClient
    from palaestra.scoreboard.client.preparation import PreparedDirectory

    doc = _chunk("x", 0, episodes)
    batch = {
        "data_sources": [0] * episodes,
        "episode_lengths": doc["episode_lengths"],
        "episode_rewards": doc["episode_rewards"],
        "episode_types": doc["episode_types"],
        "initial_reset_timestamps": [doc["initial_reset_timestamp"]],
        "timestamps": doc["timestamps"],
    }
    import json

    prepared = PreparedDirectory(
        "bench",
        {"env_id": "CartPole-v1", "gym_version": "palaestra"},
        json.dumps(batch).encode(),
        [],
        episodes,
    )
    with ScoreboardClient(url, key) as client:
        t = time.perf_counter()
        client.upload_prepared(prepared)
        ms = 1000 * (time.perf_counter() - t)
    print(
        f"peer: uploading a whole {episodes}-episode run takes {ms:.1f} ms "
        f"= {ms / max(per_update_ms, 1e-9):.0f}x one incremental update's server CPU"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="50 runs for 20 s (the follower still 60 s)")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.runs = 20.0, 50
    print(
        f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (numbers are noisy under load)"
    )
    with running_server(None, workers=1) as (url, key, pid):
        follower_cpu(url, key, max(60.0, args.seconds))  # /proc counts 10 ms ticks: a minute at least
        per_update_ms = many_runs(url, key, args.runs, args.seconds, pid)
        upload_peer(url, key, EPISODES_PER_MINUTE * 60, per_update_ms)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
