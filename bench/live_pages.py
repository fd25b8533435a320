"""What reading a long live run costs: its page and its JSON at 10^6 episodes, today against a peer.

A live run of E episodes (default 1,000,000: two sources of a CartPole-like run, their chunks of
1,000 interleaved as two followers send them) is loaded into a fresh SQLite ``palaestra server``
through ``POST /v1/live_evaluations/{id}/chunks``; then ``/live/{id}`` and ``/live/{id}.json`` are
read N times each, one after another, and their p50/p95 printed against the target (p95 < 100 ms),
with the load's time per chunk; then six pollers read the JSON as six open pages do (live.js: every
2 s) for twenty seconds while ``/v1/health`` is timed, its p95 printed. ``--peer-src DIR`` runs the same against the palaestra whose ``src``
is DIR (e.g. ``/work/main/src``, the code that merged every chunk per read) side by side and prints
the ratio of the p95s.

    .venv/bin/python bench/live_pages.py                               # this code, 10^6 episodes
    .venv/bin/python bench/live_pages.py --peer-src ../main/src        # and the peer, side by side
    .venv/bin/python bench/live_pages.py --episodes 100000 --reads 20  # quicker
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator

import numpy as np

from server_load import Http, running_server  # bench/ is the script's folder

TARGET_P95_MS = 100.0
CHUNK = 1000
#: how often an open live page reads its JSON (static/live.js)
POLL_S = 2.0


@contextlib.contextmanager
def _server(src: str | None) -> Iterator[tuple[str, str, int]]:
    """A fresh server of this palaestra, or of the one in ``src``; chunks not rate-limited."""
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "PALAESTRA_RATE_LIMIT_LIVE_CHUNKS_PER_MINUTE")}
    os.environ["PALAESTRA_RATE_LIMIT_LIVE_CHUNKS_PER_MINUTE"] = "0"
    if src:
        os.environ["PYTHONPATH"] = os.path.abspath(src)
    try:
        with running_server(None, 1) as found:
            yield found
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _load(http: Http, episodes: int) -> tuple[str, float]:
    """A live run of ``episodes`` episodes from two sources; its id and the mean seconds per chunk."""
    status, body = http.request("POST", "/v1/live_evaluations", json.dumps({"env": "CartPole-v1"}).encode(),
                                {"Content-Type": "application/json"})  # fmt: skip
    assert status == 201, body
    live_id = json.loads(body)["id"]
    rng = np.random.default_rng(0)
    per_source = episodes // 2
    times = {s: 1.7e9 + np.sort(rng.uniform(0, per_source * 0.5, per_source)) for s in ("a", "b")}
    started, chunks = time.perf_counter(), 0
    for start in range(0, per_source, CHUNK):
        for source in ("a", "b"):
            n = min(CHUNK, per_source - start)
            lengths = rng.integers(10, 500, n)
            chunk = {
                "source": f"openaigym.manifest.{source}.manifest.json",
                "start": start,
                "initial_reset_timestamp": 1.7e9,
                "timestamps": np.round(times[source][start : start + n], 6).tolist(),
                "episode_lengths": lengths.tolist(),
                "episode_rewards": np.round(lengths * rng.uniform(0.5, 1.0, n), 3).tolist(),
            }
            status, body = http.request("POST", f"/v1/live_evaluations/{live_id}/chunks",
                                        json.dumps(chunk).encode(), {"Content-Type": "application/json"})  # fmt: skip
            assert status == 200, body
            chunks += 1
    return live_id, (time.perf_counter() - started) / chunks


def _reads(url: str, path: str, reads: int) -> np.ndarray:
    http = Http(url)  # anonymous, as the pollers of a page are
    http.request("GET", path)  # warm: the first read of a process loads its templates
    out = []
    for _ in range(reads):
        t0 = time.perf_counter()
        status, body = http.request("GET", path)
        out.append((time.perf_counter() - t0) * 1000)
        assert status == 200, body[:300]
    return np.array(out)


def _health_under_pollers(url: str, path: str, pollers: int, seconds: float) -> float:
    """p95 of ``/v1/health`` (ms) while ``pollers`` threads read ``path`` as open pages do."""
    stop = threading.Event()

    def poll() -> None:
        http = Http(url)
        while not stop.is_set():
            http.request("GET", path)
            stop.wait(POLL_S)

    threads = [threading.Thread(target=poll, daemon=True) for _ in range(pollers)]
    for t in threads:
        t.start()
    http, ms = Http(url), []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        http.request("GET", "/v1/health")
        ms.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(60)
    return float(np.percentile(ms, 95))


def measure(src: str | None, episodes: int, reads: int) -> dict[str, float]:
    with _server(src) as (url, key, _pid):
        http = Http(url, {"Authorization": f"Bearer {key}"})
        live_id, per_chunk = _load(http, episodes)
        out = {"chunk_ms": per_chunk * 1000}
        for name, path in (("page", f"/live/{live_id}"), ("json", f"/live/{live_id}.json")):
            ms = _reads(url, path, reads)
            out[f"{name}_p50"], out[f"{name}_p95"] = float(np.percentile(ms, 50)), float(np.percentile(ms, 95))
        out["health_p95"] = _health_under_pollers(url, f"/live/{live_id}.json", 6, 20.0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--peer-src", help="the src folder of the palaestra to compare with")
    args = parser.parse_args()
    rows = {"this": measure(None, args.episodes, args.reads)}
    if args.peer_src:
        rows["peer"] = measure(args.peer_src, args.episodes, max(5, args.reads // 5))
    print(f"live run of {args.episodes:,} episodes, {args.reads} reads each (peer: a fifth as many)")
    for name, row in rows.items():
        print(
            f"  {name:5s} chunk {row['chunk_ms']:7.1f} ms | /live/ID p50 {row['page_p50']:8.1f} p95 "
            f"{row['page_p95']:8.1f} ms | .json p50 {row['json_p50']:8.1f} p95 {row['json_p95']:8.1f} ms | "
            f"health p95 under 6 pollers {row['health_p95']:7.1f} ms"
        )
    this = rows["this"]
    verdict = "meets" if max(this["page_p95"], this["json_p95"]) < TARGET_P95_MS else "misses"
    print(f"  target p95 < {TARGET_P95_MS:.0f} ms: {verdict}")
    if "peer" in rows:
        peer = rows["peer"]
        print(
            f"  peer / this p95: page {peer['page_p95'] / this['page_p95']:.0f}x, "
            f".json {peer['json_p95'] / this['json_p95']:.0f}x"
        )


if __name__ == "__main__":
    main()
