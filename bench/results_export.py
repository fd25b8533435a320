"""The board's results table at field scale: ``GET /v1/evaluations.csv`` and ``.parquet`` (issue 36).

Starts a real ``palaestra server`` process (SQLite + file store, or ``--database-url`` PostgreSQL),
stores ``--evaluations`` evaluations with bench/web_pages.py's bulk loader (the ``field`` scale: 100
envs, many users and algorithms), gives each a provenance with a git commit and seeds (what the
``commit`` and ``seeds`` columns read), then downloads the whole table in each format, streamed, and
prints the rows, the seconds, the rows/s, and the server's peak memory: the most resident memory
(RSS) of the server process sampled every 20 ms during the download, and its VmHWM before and after.
The export is streamed in keyset batches, so the peak should not grow with the rows.

    .venv/bin/python bench/results_export.py --evaluations 1000000
    .venv/bin/python bench/results_export.py --evaluations 1000000 --database-url postgresql+psycopg://...
"""

from __future__ import annotations

import argparse
import io
import tempfile
import threading
import time
from pathlib import Path

import httpx

from web_pages import SCALES, fill, start_server

PROVENANCE = (
    '{"format": 1, "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": false}, '
    '"env": {"id": "CartPole-v1"}, "seeds": [{"reset": 0, "seed": 1}, {"reset": 1, "seed": 2}]}'
)


def add_provenance(database_url: str) -> None:
    """Every evaluation's provenance, in one UPDATE (the loader stores none)."""
    import sqlalchemy as sa

    from palaestra.scoreboard.server.core.database import Database

    database = Database(database_url)
    try:
        with database.write() as session:
            column = "provenance"
            value = "CAST(:p AS JSONB)" if database.engine.dialect.name == "postgresql" else ":p"
            session.execute(sa.text(f"UPDATE evaluations SET {column} = {value}"), {"p": PROVENANCE})
    finally:
        database.dispose()


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A field of /proc/PID/status in KiB (VmRSS now, VmHWM the peak so far)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


class PeakRSS:
    """The largest VmRSS of ``pid`` seen while the block runs, sampled every ``interval`` seconds."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_kib(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def download(url: str, fmt: str, pid: int) -> tuple[int, float, int, int, int]:
    """``GET /v1/evaluations.FMT`` streamed; (rows, seconds, bytes, peak RSS KiB, RSS before KiB)."""
    before = rss_kib(pid)
    size = 0
    kept = io.BytesIO()
    lines = 0
    with PeakRSS(pid) as peak, httpx.Client(timeout=None) as client:
        start = time.perf_counter()
        with client.stream("GET", f"{url}/v1/evaluations.{fmt}") as response:
            response.raise_for_status()
            for chunk in response.iter_bytes():
                size += len(chunk)
                if fmt == "csv":
                    lines += chunk.count(b"\n")
                else:
                    kept.write(chunk)
        seconds = time.perf_counter() - start
    if fmt == "csv":
        rows = lines - 1  # the header
    else:
        import pyarrow.parquet as pq

        rows = pq.ParquetFile(kept).metadata.num_rows
    return rows, seconds, size, peak.peak, before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=100_000)
    parser.add_argument("--database-url", default=None, help="default: SQLite in a temporary data directory")
    args = parser.parse_args()
    scale = SCALES["field"](args.evaluations)
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-export-") as tmp:
        data_dir = Path(tmp)
        proc, url, _ = start_server(data_dir, args.database_url)
        try:
            from palaestra.scoreboard.server.core.config import normalise_database_url

            database_url = normalise_database_url(args.database_url or f"sqlite:///{data_dir / 'scoreboard.sqlite3'}")
            t0 = time.perf_counter()
            fill(database_url, data_dir, scale, with_episodes=0)
            add_provenance(database_url)
            print(f"stored {args.evaluations} evaluations (field scale) in {time.perf_counter() - t0:.1f} s")
            print(f"server RSS after start-up: {rss_kib(proc.pid) / 1024:.0f} MiB")
            for fmt in ("csv", "parquet"):
                rows, seconds, size, peak, before = download(url, fmt, proc.pid)
                print(
                    f"{fmt:8s} {rows} rows in {seconds:.1f} s = {rows / seconds:,.0f} rows/s; "
                    f"{size / 2**20:.1f} MiB; server RSS {before / 1024:.0f} MiB before, peak "
                    f"{peak / 1024:.0f} MiB during (+{(peak - before) / 1024:.0f} MiB)"
                )
                if rows != args.evaluations:
                    print(f"  expected {args.evaluations} rows")
                    return 1
            print(f"server VmHWM (peak RSS of its life, fill included): {rss_kib(proc.pid, 'VmHWM') / 1024:.0f} MiB")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
