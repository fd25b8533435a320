"""Load test of the scoreboard service: N uploads from K concurrent clients, SQLite and PostgreSQL.

Each upload is what ``gym.upload`` does: ``POST /v1/files`` + the signed form upload of a
1,000-episode batch, the same for one video archive, then ``POST /v1/evaluations``. The script starts
a real ``palaestra server`` per backend (fresh data dir; a throw-away PostgreSQL database), drives it
from K threads, and prints evaluations/s and p50/p99 latency per endpoint against the targets
(at least 50 evaluations/s on SQLite; p99 under 200 ms at 32 clients). There is no peer to compare
with: the 2017 service is gone, so the numbers are printed against the issue's targets.

    .venv/bin/python bench/server_load.py --uploads 500 --clients 32 --backend sqlite postgres
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import numpy as np

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
TARGET_EVALS_PER_S = 50.0
TARGET_P99_MS = 200.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def episode_batch(n: int = 1000, run: int = 0) -> bytes:
    """The episodes of training run number ``run``: each run starts at its own time, so that no upload
    repeats another (a repeat is answered with the first evaluation, not stored again)."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(10, 200, n)
    t0 = 1_700_000_000.0 + 100_000.0 * run
    return json.dumps(
        {
            "data_sources": [0] * n,
            "episode_lengths": lengths.tolist(),
            "episode_rewards": rng.normal(100, 30, n).round(3).tolist(),
            "episode_types": ["t"] * n,
            "initial_reset_timestamps": [t0],
            "timestamps": (t0 + np.cumsum(lengths) * 0.01).tolist(),
        }
    ).encode()


def video_archive(kind: str) -> bytes:
    """One video (+ metadata + manifest) in the 2017 archive format."""
    base = "openaigym.video.0.1.video000000"
    if kind == "mp4":
        from palaestra.monitoring.video import ffmpeg_binary

        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "v.mp4"
            subprocess.run(
                [
                    ffmpeg_binary(),
                    "-v",
                    "error",
                    "-f",
                    "lavfi",
                    "-i",
                    "testsrc=size=64x64:rate=30",
                    "-frames:v",
                    "30",
                    "-pix_fmt",
                    "yuv420p",
                    "-c:v",
                    "libx264",
                    str(out),
                ],
                check=True,
            )
            name, data, ct = base + ".mp4", out.read_bytes(), "video/mp4"
    else:
        frames = [[0.05, f"\u001b[2J\u001b[1;1H SFFF\nFHFH\nFFFH\nHFFG step {i}\n"] for i in range(50)]
        name = base + ".json"
        data = json.dumps(
            {
                "version": 1,
                "width": 4,
                "height": 5,
                "duration": 2.5,
                "command": "-",
                "title": "",
                "env": {},
                "stdout": frames,
            }
        ).encode()
        ct = "video/vnd.openai.ansivid"
    meta = base + ".meta.json"
    members = [
        (name, data),
        (meta, json.dumps({"episode_id": 0, "content_type": ct}).encode()),
        ("manifest.json", json.dumps({"version": 0, "videos": [[name, meta]]}).encode()),
    ]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for n, d in members:
            info = tarfile.TarInfo(n)
            info.size = len(d)
            tar.addfile(info, io.BytesIO(d))
    return buf.getvalue()


@contextmanager
def postgres_database() -> Iterator[str]:
    import psycopg

    name = f"palaestra_bench_{secrets.token_hex(4)}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def group_cpu_seconds(pgid: int) -> float:
    """CPU seconds (user + system) used so far by every process in process group ``pgid`` (Linux)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


@contextmanager
def running_server(
    database_url: str | None, workers: int, rate_limits: bool = False
) -> Iterator[tuple[str, str, int]]:
    """``(url, api_key, process group)`` of a fresh ``palaestra server``."""
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-") as data_dir:
        port = free_port()
        env = {**os.environ, "PALAESTRA_DATA_DIR": data_dir}
        if not rate_limits:
            # One user sends the whole load: the per-user rate limits would stop a long run (0: off).
            env.update(
                {"PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR": "0", "PALAESTRA_RATE_LIMIT_PENDING_FILES": "0"}
            )
        env.pop("PALAESTRA_STORAGE", None)
        env.pop("PALAESTRA_DATABASE_URL", None)
        if database_url:
            env["PALAESTRA_DATABASE_URL"] = database_url
        log = open(Path(data_dir) / "server.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "palaestra",
                "-q",
                "server",
                "--port",
                str(port),
                "--workers",
                str(workers),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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
            from palaestra.scoreboard.server.accounts import auth
            from palaestra.scoreboard.server.core.config import resolve_config
            from palaestra.scoreboard.server.core.database import Database

            db = Database(resolve_config(environ=env).database_url)
            key = auth.create_user(db, "bench")[1]
            db.dispose()
            yield url, key, proc.pid
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()


class Http:
    """A minimal keep-alive HTTP/1.1 client (http.client), so that the load generator costs little CPU."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        parsed = urlparse(url)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.headers = headers or {}
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)

    def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        all_headers = {**self.headers, **(headers or {})}
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=body, headers=all_headers)
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def post_json(self, path: str, doc: Any) -> tuple[int, Any]:
        status, body = self.request(
            "POST", path, json.dumps(doc).encode(), {"Content-Type": "application/json"}
        )
        return status, json.loads(body)

    def post_form(self, url: str, fields: dict[str, str], data: bytes) -> tuple[int, bytes]:
        boundary = secrets.token_hex(16)
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
            for k, v in fields.items()
        ]
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="file"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
        parts.append(f"--{boundary}--\r\n".encode())
        path = urlparse(url).path
        return self.request(
            "POST", path, b"".join(parts), {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        )

    def close(self) -> None:
        self.conn.close()


def drive(url: str, key: str, clients: int, batches: list[bytes], video: bytes) -> dict[str, Any]:
    """Upload each of ``batches`` (with ``video``) from ``clients`` threads; latencies per endpoint and
    throughput."""
    uploads = len(batches)
    latencies: dict[str, list[float]] = defaultdict(list)
    lock = threading.Lock()
    counter = iter(range(uploads))
    failures: list[str] = []

    def timed(name: str, fn: Any) -> Any:
        t = time.perf_counter()
        r = fn()
        dt = time.perf_counter() - t
        with lock:
            latencies[name].append(dt)
        return r

    def upload_file(c: Http, purpose: str, data: bytes) -> str:
        body: dict[str, Any] = {"purpose": purpose}
        if purpose == "video":
            body["content_type"] = "application/vnd.openai.video+x-compressed"
        status, f = timed("POST /v1/files", lambda: c.post_json("/v1/files", body))
        if status != 201:
            raise RuntimeError(f"file creation failed: {status} {f}")
        status, text = timed(
            f"POST post_url ({purpose})", lambda: c.post_form(f["post_url"], f["post_fields"], data)
        )
        if status != 204:
            raise RuntimeError(f"upload failed: {status} {text[:200]!r}")
        return str(f["id"])

    def one(c: Http, batch: bytes) -> None:
        batch_id = upload_file(c, "episode_batch", batch)
        video_id = upload_file(c, "video", video)
        doc = {
            "training_episode_batch": batch_id,
            "training_video": video_id,
            "env": "CartPole-v1",
            "algorithm": {"id": "bench"},
            "gym_version": "0.9.4",
        }
        status, ev = timed("POST /v1/evaluations", lambda: c.post_json("/v1/evaluations", doc))
        if status != 201:
            raise RuntimeError(f"evaluation failed: {status} {ev}")

    def worker() -> None:
        c = Http(url, {"Authorization": f"Bearer {key}"})
        try:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                try:
                    one(c, batches[i])
                except Exception as e:
                    with lock:
                        failures.append(str(e))
        finally:
            c.close()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.perf_counter()
    cpu0 = time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return {
        "wall": wall,
        "evals_per_s": (uploads - len(failures)) / wall,
        "latencies": latencies,
        "failures": failures,
        "client_cpu_ms": (time.process_time() - cpu0) / max(1, uploads) * 1000,
    }


def report(label: str, result: dict[str, Any], clients: int, gate_throughput: bool) -> bool:
    ok = True
    print(
        f"\n== {label}: {result['evals_per_s']:.1f} evaluations/s ({clients} clients, {result['wall']:.1f} s)"
        + (f", {len(result['failures'])} FAILED: {result['failures'][:3]}" if result["failures"] else "")
    )
    cpu = result["server_cpu_ms"] + result["client_cpu_ms"]
    print(
        f"   CPU per evaluation: server {result['server_cpu_ms']:.1f} ms + load generator "
        f"{result['client_cpu_ms']:.1f} ms; {os.cpu_count()} idle cores would cap this at "
        f"{(os.cpu_count() or 1) * 1000 / cpu:.0f} evaluations/s"
    )
    if gate_throughput:
        verdict = "meets" if result["evals_per_s"] >= TARGET_EVALS_PER_S else "MISSES"
        ok &= result["evals_per_s"] >= TARGET_EVALS_PER_S
        print(
            f"   throughput {verdict} the target of {TARGET_EVALS_PER_S:.0f}/s "
            f"(ratio {result['evals_per_s'] / TARGET_EVALS_PER_S:.2f})"
        )
    print(f"   {'endpoint':32} {'n':>6} {'p50 ms':>8} {'p99 ms':>8}")
    for name, values in sorted(result["latencies"].items()):
        ms = np.asarray(values) * 1000
        p99 = float(np.percentile(ms, 99))
        flag = ""
        if clients >= 32:
            flag = "  ok" if p99 < TARGET_P99_MS else f"  > {TARGET_P99_MS:.0f} ms target"
            ok &= p99 < TARGET_P99_MS
        print(f"   {name:32} {len(ms):6d} {np.percentile(ms, 50):8.1f} {p99:8.1f}{flag}")
    return ok and not result["failures"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--uploads", type=int, default=500, help="evaluations to upload per run (default 500)"
    )
    parser.add_argument(
        "--clients", type=int, nargs="+", default=[32], help="concurrent clients (default 32)"
    )
    parser.add_argument(
        "--backend", nargs="+", choices=["sqlite", "postgres"], default=["sqlite", "postgres"]
    )
    parser.add_argument(
        "--video",
        choices=["ansi", "mp4"],
        default="ansi",
        help="kind of the one video per upload (mp4 is probed with ffprobe on every upload)",
    )
    parser.add_argument("--workers", type=int, default=2, help="server processes (default 2)")
    parser.add_argument("--episodes", type=int, default=1000, help="episodes per batch (default 1000)")
    parser.add_argument(
        "--rate-limits",
        action="store_true",
        help="keep the server's default per-user rate limits on (their cost; at most 2000 files an hour)",
    )
    args = parser.parse_args()

    batch, video = episode_batch(args.episodes), video_archive(args.video)
    runs = iter(range(10**6))  # every upload its own run, across the backends and client counts
    print(
        f"payload: {args.episodes}-episode batch {len(batch) / 1024:.0f} KiB, one {args.video} video "
        f"{len(video) / 1024:.1f} KiB; {args.uploads} uploads; server workers: {args.workers}; "
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}"
    )
    ok = True
    for backend in args.backend:
        ctx = postgres_database() if backend == "postgres" else None
        database_url = ctx.__enter__() if ctx else None
        try:
            for clients in args.clients:
                with running_server(database_url, args.workers, args.rate_limits) as (url, key, pgid):
                    warm = [episode_batch(args.episodes, next(runs)) for _ in range(min(20, args.uploads))]
                    batches = [episode_batch(args.episodes, next(runs)) for _ in range(args.uploads)]
                    drive(url, key, clients, warm, video)  # warm up
                    cpu0 = group_cpu_seconds(pgid)
                    result = drive(url, key, clients, batches, video)
                    result["server_cpu_ms"] = (group_cpu_seconds(pgid) - cpu0) / args.uploads * 1000
                ok &= report(
                    f"{backend}, {args.video} video", result, clients, gate_throughput=backend == "sqlite"
                )
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
    print("\nall targets met" if ok else "\nsome targets missed (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
