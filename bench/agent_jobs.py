"""What the board adds to an agent's evaluation: a job through the queue, the worker and ingest, against
the same sandboxed run on its own.

The peer is :func:`palaestra.agents.artifact.run_sandboxed` called directly (what ``palaestra agent
check`` does on the user's machine): the same CartPole policy, the same number of episodes, with video.
The board is a fresh SQLite ``palaestra server`` with its embedded worker: the time from
``palaestra upload --agent MODEL.onnx --episodes N --wait`` starting to its verified evaluation being
stored (the upload's checks, the queue, the claim, the same sandboxed run, the directory prepared and
ingested as an upload, the evaluation scored). Printed: both times (median of the repeats), the
board's extra seconds per job and the ratio.

    .venv/bin/python bench/agent_jobs.py                  # 10 episodes, 3 repeats
    .venv/bin/python bench/agent_jobs.py --episodes 3 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from server_load import running_server  # bench/ is the script's folder


def cartpole_agent(folder: Path) -> Path:
    from palaestra.agents.artifact import AgentDescriptor
    from palaestra.agents.artifact.examples import sb3_cartpole_model, write_agent

    descriptor = AgentDescriptor(
        env_id="CartPole-v1", action="index", deterministic=True, output_name="actions"
    )
    return Path(write_agent(sb3_cartpole_model(), descriptor, folder / "cartpole.onnx")[0])


def plain_run(model: Path, episodes: int, folder: Path) -> float:
    from palaestra.agents.artifact import SandboxLimits, run_sandboxed

    started = time.perf_counter()
    result = run_sandboxed(model, model.with_suffix(".json"), list(range(episodes)), folder, SandboxLimits())
    assert result.ok, result.reason
    return time.perf_counter() - started


def board_run(url: str, key: str, model: Path, episodes: int) -> float:
    env = {**os.environ, "PALAESTRA_API_KEY": key}
    command = [sys.executable, "-m", "palaestra", "-q", "upload", "--agent", str(model), "--server", url]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--episodes", str(episodes), "--wait"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-agents-") as tmp:
        folder = Path(tmp)
        model = cartpole_agent(folder)
        plain = [plain_run(model, args.episodes, folder / f"plain-{i}") for i in range(args.repeats)]
        with running_server(None, 1) as (url, key, _group):
            board = [board_run(url, key, model, args.episodes) for _ in range(args.repeats)]
    p, b = statistics.median(plain), statistics.median(board)
    print(f"{args.episodes} CartPole episodes with video, median of {args.repeats}:")
    print(f"  run_sandboxed alone (the peer):            {p:7.2f} s")
    print(f"  the board (upload --agent --wait, stored): {b:7.2f} s")
    print(f"  the board's extra per job: {b - p:.2f} s; ratio board / peer: {b / p:.2f}x")


if __name__ == "__main__":
    main()
