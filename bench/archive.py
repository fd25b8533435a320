"""Time and size of ``palaestra server export`` and ``import`` for a board of 10,000 evaluations,
side by side with ``palaestra server backup`` (SQLite's online backup and a copy of the blob folder).

Seeds a SQLite + file-store board with ``--evaluations`` evaluations the way bench/web_pages.py does
(its ``fill``: 20 users, 200 algorithms, the first ``--with-episodes`` with a stored episode batch of
1,000 to 3,000 episodes), gives them their log entries (``palaestra server log-backfill``, timed),
then times, each as the user runs it (a ``palaestra`` process, start-up included): the export, the
backup (the peer), a second export into the same folder (nothing new), ``verify`` of the export,
and the import into a new SQLite board and, with ``--import-database-url``, into PostgreSQL.

    .venv/bin/python bench/archive.py [--evaluations 10000] [--with-episodes 1000]
        [--import-database-url postgresql+psycopg://postgres@127.0.0.1:5432/archive_bench]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import web_pages  # bench/web_pages.py: the seeding of 10,000 evaluations


def palaestra(env: dict[str, str], *args: str) -> float:
    """Run ``palaestra ARGS``; its wall-clock seconds."""
    t0 = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "palaestra", *args], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"palaestra {' '.join(args)} failed:\n{result.stderr}")
    return time.perf_counter() - t0


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def board_env(data_dir: Path, database_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_")}
    env["PALAESTRA_DATA_DIR"] = str(data_dir)
    if database_url:
        env["PALAESTRA_DATABASE_URL"] = database_url
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=10_000)
    parser.add_argument("--with-episodes", type=int, default=1000, help="evaluations with an episode batch")
    parser.add_argument("--import-database-url", default=None, help="an empty PostgreSQL database to import into too")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="palaestra-bench-archive-") as tmp:
        root = Path(tmp)
        source = board_env(root / "board")
        palaestra(source, "server", "migrate")
        t0 = time.perf_counter()
        web_pages.fill(f"sqlite:///{root / 'board' / 'scoreboard.sqlite3'}", root / "board", args.evaluations,
                       args.with_episodes)  # fmt: skip
        print(f"seeded {args.evaluations} evaluations ({args.with_episodes} with episodes) in "
              f"{time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        times = {"log-backfill": palaestra(source, "server", "log-backfill")}
        times["export"] = palaestra(source, "server", "export", str(root / "export"), "--no-progress")
        times["backup (peer)"] = palaestra(source, "server", "backup", str(root / "backup"))
        times["export again (nothing new)"] = palaestra(source, "server", "export", str(root / "export"), "--no-progress")
        times["verify the export"] = palaestra(source, "server", "verify", str(root / "export"))
        times["import into SQLite"] = palaestra(board_env(root / "imported"), "server", "import", str(root / "export"),
                                                "--no-progress")  # fmt: skip
        if args.import_database_url:
            target = board_env(root / "pg", args.import_database_url)
            times["import into PostgreSQL"] = palaestra(target, "server", "import", str(root / "export"), "--no-progress")
        export_bytes, backup_bytes = size_of(root / "export"), size_of(root / "backup")

    print(f"{'step':30s} {'seconds':>9s} {'per 1,000 evaluations':>22s}  vs backup")
    for step, seconds in times.items():
        ratio = seconds / times["backup (peer)"]
        print(f"{step:30s} {seconds:9.2f} {seconds * 1000 / args.evaluations:22.2f}  {ratio:8.2f}x")
    print(f"export size {export_bytes / 1e6:.1f} MB, backup size {backup_bytes / 1e6:.1f} MB "
          f"(ratio {export_bytes / backup_bytes:.2f}); load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
