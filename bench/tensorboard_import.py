"""``palaestra import tensorboard`` against TensorBoard's own reader, on an event file of 10^6 scalars
(issue 36: target ratio >= 1.0, the import at least as fast as TensorBoard loads the file).

Writes a CleanRL-style event file with tensorboardX's ``SummaryWriter`` (``--scalars`` / 2 episodes,
each a ``charts/episodic_return`` and a ``charts/episodic_length`` scalar, plus the file's version
event), then times, each in a fresh process and ``--repeats`` times (the best kept):

- **palaestra**: ``import_tensorboard`` from the event file to a written training directory (the
  stats document and the manifest on disk: what the user waits for);
- **TensorBoard**: ``EventAccumulator(size_guidance={"scalars": 0})`` (every scalar kept), ``Reload()``,
  and both series read with ``Scalars(tag)``.

Both read the file through TensorBoard's record reader (without TensorFlow, its pure-Python CRC
check is most of either time). Prints both times and the ratio TensorBoard / palaestra.

    .venv/bin/python bench/tensorboard_import.py                  # 10^6 scalars
    .venv/bin/python bench/tensorboard_import.py --event-file F   # reuse a file written before
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 1.0

PALAESTRA = """
import sys, time
from palaestra.monitoring.tensorboard_import import import_tensorboard
start = time.perf_counter()
done = import_tensorboard(sys.argv[1], sys.argv[2], env_id="CartPole-v1", force=True)
print(time.perf_counter() - start, done.episodes)
"""

TENSORBOARD = """
import sys, time
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
start = time.perf_counter()
accumulator = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
accumulator.Reload()
returns = accumulator.Scalars("charts/episodic_return")
lengths = accumulator.Scalars("charts/episodic_length")
print(time.perf_counter() - start, len(returns))
"""


def write_event_file(folder: Path, scalars: int) -> Path:
    """A CleanRL-style run of ``scalars // 2`` episodes (CartPole-like returns and lengths)."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(folder), max_queue=10_000, flush_secs=3600)
    step = 0
    for i in range(scalars // 2):
        length = 10 + (i * 7919) % 491
        step += length
        writer.add_scalar("charts/episodic_return", float(length), step)
        writer.add_scalar("charts/episodic_length", length, step)
    writer.close()
    (path,) = folder.glob("events.out.tfevents.*")
    return path


def timed(code: str, *args: str) -> tuple[float, int]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    seconds, count = done.stdout.split()
    return float(seconds), int(count)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scalars", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--event-file", type=Path, default=None, help="an event file written before (kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-tb-") as tmp:
        if args.event_file is None:
            start = time.perf_counter()
            event_file = write_event_file(Path(tmp) / "CartPole-v1__ppo__1__1700000000", args.scalars)
            print(f"wrote {args.scalars} scalars with tensorboardX in {time.perf_counter() - start:.1f} s")
        else:
            event_file = args.event_file
        print(f"event file: {event_file.stat().st_size / 2**20:.1f} MiB")
        ours, theirs = [], []
        for _ in range(args.repeats):  # alternated, so that both see the same machine
            seconds, episodes = timed(PALAESTRA, str(event_file), str(Path(tmp) / "imported"))
            ours.append(seconds)
            seconds, points = timed(TENSORBOARD, str(event_file.parent))
            theirs.append(seconds)
            assert episodes == points, (episodes, points)
        ratio = min(theirs) / min(ours)
        print(f"palaestra import tensorboard: {min(ours):.2f} s ({episodes} episodes, the directory written)")
        print(f"TensorBoard EventAccumulator:  {min(theirs):.2f} s ({points} points per tag)")
        print(f"ratio TensorBoard / palaestra: {ratio:.2f} (target >= {TARGET_RATIO})")
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
