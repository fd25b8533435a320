"""Writing a static mirror of a board: ``palaestra server export --static`` against ``wget --mirror``.

Stores ``--evaluations`` evaluations of one env (bench/web_pages.py's ``fill``: 20 users, 200
algorithms, the first ``--with-episodes`` with an episode batch of 1,000 to 3,000 episodes), then
writes the board as a static website twice and prints the wall time, files and bytes of each, and the
ratio of the times:

- palaestra: ``palaestra server export --static DEST`` (the app's routes called in process, in
  read-only mode; links rewritten to relative files; search answered in the browser);
- the peer: ``wget --mirror --convert-links --adjust-extension --page-requisites`` of the running
  ``palaestra server`` over loopback HTTP, told to skip the dynamic pages (search, compare, sign-in)
  that the palaestra mirror leads to its notice page instead, and the env pictures (a live server
  renders a still of each installed env without one, a process each; the export does not render them
  and writes the placeholder the board answers).

Both start from the home page and follow every link they keep, so both write every env page (the
whole catalogue), leaderboard order and page, evaluation page and download.

    .venv/bin/python bench/static_mirror.py [--evaluations 1000] [--with-episodes 100]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from web_pages import fill, start_server  # bench/ is the script's folder

#: The pages the wget peer skips (the palaestra mirror leads them to its notice page, or searches in the browser).
DYNAMIC = r"(/(search|compare|login|logout|settings|invite)([/?]|$))|/picture$"


def folder_size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    # wget exits 8 when some link answered an error (the board's own 404s); anything else is a failure
    if done.returncode not in (0, 8):
        raise SystemExit(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=1000)
    parser.add_argument("--with-episodes", type=int, default=100, help="evaluations with an episode batch")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="palaestra-bench-mirror-") as tmp:
        data_dir = Path(tmp) / "board"
        data_dir.mkdir()
        proc, url, _ = start_server(data_dir, None)
        try:
            fill(f"sqlite:///{data_dir / 'scoreboard.sqlite3'}", data_dir, args.evaluations, args.with_episodes)
            print(f"stored {args.evaluations} evaluations ({args.with_episodes} with an episode batch)")
            ours = Path(tmp) / "palaestra-mirror"
            palaestra_s = timed(
                [sys.executable, "-m", "palaestra", "server", "export", "--static", str(ours), "--data-dir", str(data_dir)]
            )
            peer = Path(tmp) / "wget-mirror"
            wget_s = timed([
                "wget", "--mirror", "--convert-links", "--adjust-extension", "--page-requisites", "--no-parent",
                "-e", "robots=off", "--quiet", f"--reject-regex={DYNAMIC}", "-P", str(peer), url + "/",
            ])
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        print(f"{'':28s} {'seconds':>8s} {'files':>7s} {'MB':>8s}")
        for label, seconds, folder in (
            ("palaestra export --static", palaestra_s, ours),
            ("wget --mirror (peer)", wget_s, peer),
        ):
            files, size = folder_size(folder)
            print(f"{label:28s} {seconds:8.1f} {files:7d} {size / 1e6:8.1f}")
        print(f"palaestra / wget time: {palaestra_s / wget_s:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
