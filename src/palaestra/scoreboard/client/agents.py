"""Submitting an agent for the board to evaluate (``palaestra upload --agent MODEL.onnx``).

- :func:`submit_agent`: ``POST /v1/agents`` with the ``.onnx`` file and the descriptor beside it
  (``MODEL.json``, as ``palaestra agent pack`` writes it); the queued job
  (:class:`~palaestra.scoreboard.protocol.agents.AgentJobObject`, its page in ``web_url``);
- :func:`follow_job`: the job read again until it is done or failed, each new state handed to
  ``on_update`` (``--wait`` prints the episodes as they finish).

What the server refuses (a hostile or broken model, a descriptor it cannot read) comes back as
:class:`~palaestra.errors.InvalidRequestError` naming the problem, before anything is queued.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from palaestra.errors import ConfigurationError
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client.session import ScoreboardClient
from palaestra.scoreboard.protocol.agents import AGENTS_PATH, AgentJobObject

__all__ = ["FINISHED", "descriptor_beside", "follow_job", "get_job", "submit_agent"]

#: The statuses a job ends in.
FINISHED = ("done", "failed")


def descriptor_beside(model: str | os.PathLike[str]) -> Path:
    """The descriptor of ``MODEL.onnx``: ``MODEL.json`` beside it."""
    return Path(model).with_suffix(".json")


def submit_agent(
    client: ScoreboardClient,
    model: str | os.PathLike[str],
    descriptor: str | os.PathLike[str] | None = None,
    *,
    algorithm: str | None = None,
    writeup: str | None = None,
    episodes: int | None = None,
) -> AgentJobObject:
    """Upload ``model`` and its descriptor (default: beside it) to be evaluated by the board."""
    model_path = Path(model)
    descriptor_path = Path(descriptor) if descriptor is not None else descriptor_beside(model_path)
    for path, what, fix in (
        (model_path, "agent model", "export the policy to ONNX (`palaestra agent pack`)"),
        (descriptor_path, "agent descriptor", "`palaestra agent pack` writes MODEL.json beside MODEL.onnx"),
    ):
        if not path.is_file():
            raise ConfigurationError(f"No {what} at {path}: {fix}")
    fields = {
        name: str(value)
        for name, value in (("algorithm", algorithm), ("writeup", writeup), ("episodes", episodes))
        if value is not None
    }
    files = {
        "model": (model_path.name, model_path.read_bytes(), "application/octet-stream"),
        "descriptor": (descriptor_path.name, descriptor_path.read_bytes(), "application/json"),
    }
    # one key per submission: a retry after a lost answer gets the job queued first, never a second one
    key = f"agent-{uuid.uuid4().hex}"
    answer = client.http.post_multipart(f"{protocol.API_PREFIX}{AGENTS_PATH}", fields, files, key)
    return AgentJobObject.model_validate(answer)


def get_job(client: ScoreboardClient, job_id: str) -> AgentJobObject:
    return client.http.call(AgentJobObject, "GET", f"{protocol.API_PREFIX}{AGENTS_PATH}/{job_id}")


def follow_job(
    client: ScoreboardClient,
    job_id: str,
    *,
    interval: float = 2.0,
    on_update: Callable[[AgentJobObject], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> AgentJobObject:
    """Read the job until it is done or failed (every ``interval`` seconds); its last state."""
    seen: tuple[str, int, int] | None = None
    while True:
        job = get_job(client, job_id)
        state = (job.status, job.attempts, job.episodes_done)
        if state != seen and on_update is not None:
            on_update(job)
        seen = state
        if job.status in FINISHED:
            return job
        sleep(interval)
