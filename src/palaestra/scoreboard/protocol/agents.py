"""The wire schemas of agents the board evaluates itself (``/v1/agents``), shared by client and server.

- ``POST /v1/agents``: a multipart form of the agent artifact (``model``: the ``.onnx`` file;
  ``descriptor``: its JSON descriptor) and the optional fields of :data:`FORM_FIELDS`. The server
  checks the file as hostile (size, no external data, no custom operators, the model checker), draws
  the episodes' seeds and queues a job: 202 with :class:`AgentJobObject`;
- ``GET /v1/agents/{job_id}`` (:class:`AgentJobObject`): its status (``queued`` -> ``running`` ->
  ``done`` | ``failed``), the episodes finished so far and their returns, the failure's reason and log
  tail, and once done the evaluation it became (an ordinary evaluation, marked verified).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from palaestra.scoreboard.protocol import FiniteFloat, Response, Timestamp

__all__ = [
    "AGENTS_PATH",
    "DEFAULT_EPISODES",
    "FORM_FIELDS",
    "MAX_EPISODES",
    "AgentJobObject",
    "JobStatus",
    "agent_job_web_path",
]

AGENTS_PATH = "/agents"
#: Episodes the board plays when the upload names no number (the 2017 solving window).
DEFAULT_EPISODES = 100
#: The most episodes one upload may ask for.
MAX_EPISODES = 1000
#: The form's fields besides the two files: the algorithm's id or name, a writeup URL, the episodes.
FORM_FIELDS = ("algorithm", "writeup", "episodes")

JobStatus = Literal["queued", "running", "done", "failed"]


def agent_job_web_path(job_id: str) -> str:
    """Path of a job's web page, relative to the public URL."""
    return f"/agents/{job_id}"


class AgentJobObject(Response):
    object: Literal["agent_job"] = "agent_job"
    id: str
    status: JobStatus
    env: str
    owner: str | None = None
    algorithm: str | None = None
    #: sha256 hex of the uploaded ``.onnx`` bytes
    artifact_sha256: str
    artifact_size: int
    descriptor: dict[str, Any] = Field(default_factory=dict)
    episodes: int
    #: the seed of each episode, drawn by the server after the upload
    seeds: list[int] = Field(default_factory=list)
    #: the return of each episode finished so far in the current attempt
    returns: list[FiniteFloat] = Field(default_factory=list)
    episodes_done: int = 0
    attempts: int = 0
    reason: str | None = None
    log_tail: str | None = None
    evaluation_id: str | None = None
    #: a Go or Hex agent's result: the ladder matches the board played with it (verified), and their ladder
    ladder_matches: list[str] = Field(default_factory=list)
    ladder: str | None = None
    created: Timestamp | None = None
    started: Timestamp | None = None
    finished: Timestamp | None = None
    web_url: str | None = None
