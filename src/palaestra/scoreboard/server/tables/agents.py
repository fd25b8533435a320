"""The table of agent evaluations the board runs itself (migration ``0015_agent_jobs``), beside
:mod:`.scores`' tables.

- ``agent_jobs``: one uploaded agent artifact to evaluate: its bytes (sha256 and blob key), its
  descriptor, env, owner and algorithm; the N episodes and the seeds the server drew for them after the
  upload; its status (``queued`` -> ``running`` -> ``done`` | ``failed``, with the failure's reason and
  log tail), the attempts made, the lease of the worker running it (an id and the heartbeat time, read
  from the server's :class:`~palaestra.scoreboard.server.core.clock.Clock`), its progress (each finished
  episode's return) and, once done, the evaluation it became.

The evaluation a job becomes is an ordinary row of ``evaluations``, marked ``verified`` with its
``verification`` (seeds, artifact sha256, evaluator) and its job's id in ``agent_job_id``, which is
unique: a job is stored once, whichever worker finishes it (:mod:`..agents.jobs`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from palaestra.scoreboard.server.tables.base import Base, utcnow

__all__ = ["JOB_STATUSES", "AgentJob"]

#: Every status a job can have, in the order it goes through them.
JOB_STATUSES = ("queued", "running", "done", "failed")


class AgentJob(Base):
    __tablename__ = "agent_jobs"
    __table_args__ = (
        # claiming walks the queued (and expired running) jobs oldest first along this
        sa.Index("ix_agent_jobs_status_seq", "status", "seq"),
        sa.Index("ix_agent_jobs_user_seq", "user_seq", "seq"),
    )

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # job_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"))
    env_id: Mapped[str] = mapped_column(sa.String(200))
    #: the algorithm's id or name, as the uploader gave it (resolved when the evaluation is made)
    algorithm_ref: Mapped[str | None] = mapped_column(sa.String(200), default=None)
    writeup: Mapped[str | None] = mapped_column(sa.Text, default=None)
    #: the ONNX file: sha256 hex of its bytes, its blob key in the server's store, its size
    artifact_sha256: Mapped[str] = mapped_column(sa.String(64))
    artifact_key: Mapped[str] = mapped_column(sa.String(300))
    artifact_size: Mapped[int] = mapped_column(sa.BigInteger)
    #: the descriptor JSON as checked at upload
    descriptor: Mapped[dict[str, Any]] = mapped_column()
    episodes: Mapped[int] = mapped_column(default=100)
    #: one seed per episode, drawn by the server (``secrets``) after the upload
    seeds: Mapped[list[Any]] = mapped_column()
    status: Mapped[str] = mapped_column(sa.String(20), default="queued")
    reason: Mapped[str | None] = mapped_column(sa.Text, default=None)
    #: the last lines of the failed run's log
    log_tail: Mapped[str | None] = mapped_column(sa.Text, default=None)
    attempts: Mapped[int] = mapped_column(default=0)
    #: the lease of the worker running it: a fresh id per claim, renewed by heartbeats
    lease_id: Mapped[str | None] = mapped_column(sa.String(40), default=None)
    heartbeat: Mapped[datetime | None] = mapped_column(default=None)
    #: who runs it (host and process id), for the page
    worker: Mapped[str | None] = mapped_column(sa.String(200), default=None)
    #: the return of each episode finished in the current attempt, in order
    returns: Mapped[list[Any]] = mapped_column(default=list)
    evaluation_id: Mapped[str | None] = mapped_column(sa.String(40), default=None)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    started: Mapped[datetime | None] = mapped_column(default=None)
    finished: Mapped[datetime | None] = mapped_column(default=None)
