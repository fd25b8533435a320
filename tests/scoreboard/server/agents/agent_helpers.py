"""What the agent-evaluation tests share: a CartPole agent on disk, ``palaestra worker`` processes
against a test server's database and store, and waiting for a job to reach a state."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from tests.scoreboard.server_helpers import ScoreboardServer
from tests.server_process import PALAESTRA_COMMAND

__all__ = ["count_rows", "get_job", "start_worker", "wait_for", "write_cartpole_agent", "write_go_agent"]

#: Seconds a test waits for a sandboxed CartPole run (a few episodes of 500 steps with video).
RUN_TIMEOUT_S = 240.0


def write_cartpole_agent(folder: Path, name: str = "cartpole") -> Path:
    """An SB3-style CartPole policy (``palaestra.agents.artifact.examples``) and its descriptor beside it."""
    from palaestra.agents.artifact import AgentDescriptor
    from palaestra.agents.artifact.examples import sb3_cartpole_model, write_agent

    folder.mkdir(parents=True, exist_ok=True)
    descriptor = AgentDescriptor(env_id="CartPole-v1", action="index", deterministic=True, output_name="actions")
    model, _ = write_agent(sb3_cartpole_model(), descriptor, folder / f"{name}.onnx")
    return Path(model)


def write_go_agent(folder: Path, name: str = "go", actions: int | None = None) -> Path:
    """A random-weight Go 9x9 policy (``palaestra.agents.artifact.examples.go_model``; ``actions``: its
    output size, Go's 83 by default) and its descriptor beside it."""
    from palaestra.agents.artifact import AgentDescriptor
    from palaestra.agents.artifact.examples import go_model, write_agent

    folder.mkdir(parents=True, exist_ok=True)
    descriptor = AgentDescriptor(env_id="Go9x9-v0", action="argmax", deterministic=True)
    model, _ = write_agent(go_model(actions=actions), descriptor, folder / f"{name}.onnx")
    return Path(model)


def start_worker(server: ScoreboardServer, log: Path, *args: str) -> subprocess.Popen[bytes]:
    """``palaestra worker ARGS`` on the server's database and store, its output in ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [*PALAESTRA_COMMAND, "worker", "--poll", "0.2", *args],
            env=server.env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def get_job(server: ScoreboardServer, job_id: str) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/v1/agents/{job_id}", timeout=30)
    assert response.status_code == 200, response.text
    doc: dict[str, Any] = response.json()
    return doc


def wait_for(
    check: Callable[[], Any], what: str, timeout: float = RUN_TIMEOUT_S, logs: Sequence[Path] = ()
) -> Any:
    """``check()``'s first truthy value, polled; fails naming ``what`` (and the logs' ends) on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    shown = "\n".join(f"--- {p}:\n{p.read_text(errors='replace')[-3000:]}" for p in logs if p.exists())
    raise AssertionError(f"timed out waiting for {what}\n{shown}")


def count_rows(server: ScoreboardServer, table: str, where: str = "1 = 1") -> int:
    """Rows of ``table`` in the server's database (read in this process)."""
    from palaestra.scoreboard.server.core.config import resolve_config

    engine = sa.create_engine(resolve_config(environ=server.env).database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(f"SELECT count(*) FROM {table} WHERE {where}")).scalar_one())
    finally:
        engine.dispose()
