"""Agent evaluations as jobs in the database: queued by ``POST /v1/agents``, run by workers.

- :func:`queue_job` (:func:`store_artifact`, then :func:`add_job`): the checked artifact stored under
  its sha256, the seeds drawn (``secrets``, after the upload: the uploader cannot have tuned the
  policy to them), one ``queued`` row;
- :func:`claim_next`: a worker takes the oldest queued job, atomically on both databases (PostgreSQL:
  ``SELECT ... FOR UPDATE SKIP LOCKED``, so that workers never wait on each other's rows; SQLite: the
  writers' lock and a conditional ``UPDATE ... WHERE status = 'queued'``), with a fresh lease id and
  one more attempt. First it puts back every job whose worker stopped renewing its lease
  (:func:`requeue_expired`): that job runs again from its first episode, and after
  ``agent_max_attempts`` deaths it fails with that reason;
- :func:`heartbeat`: the worker renews its lease and records the returns so far; ``False`` once the
  lease is no longer its own (the job was given to another worker);
- :func:`finish_in`: inside the transaction that inserts the evaluation (``POST /v1/evaluations``'s
  own), the job turns ``done`` only if the lease is still the worker's; the evaluation carries the
  job's id under a unique index. Either both are stored or neither, and a job is stored once;
- :func:`fail`: ``failed`` with the reason and the run's log tail (under the same lease check);
- :func:`job_object`: the wire answer, read by the API and the job's page alike.

Every time (heartbeats, expiry) is read from the server's :class:`~.clock.Clock`.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra.scoreboard.protocol.agents import AgentJobObject, agent_job_web_path
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.core.clock import Clock
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.agents import AgentJob
from palaestra.scoreboard.server.tables.ladders import LadderMatch

__all__ = [
    "ARTIFACT_PREFIX",
    "Claim",
    "LeaseLost",
    "add_job",
    "claim_next",
    "draw_seeds",
    "fail",
    "finish_in",
    "heartbeat",
    "job_matches",
    "job_object",
    "load_job",
    "queue_job",
    "recent_jobs",
    "release",
    "requeue_expired",
    "store_artifact",
    "worker_name",
]

#: Where artifacts are stored: ``agents/<sha256>.onnx`` (the same bytes uploaded twice are one blob).
ARTIFACT_PREFIX = "agents/"
#: Seeds are drawn below this (what ``env.reset(seed=...)`` and NumPy accept everywhere).
SEED_BOUND = 2**31
#: How many characters of a failed run's log the job keeps.
LOG_TAIL_CHARS = 8000

_JOBS: Any = AgentJob.__table__


class LeaseLost(Exception):
    """The job is no longer this worker's: its lease expired and another worker took it (or it ended)."""


@dataclass(frozen=True)
class Claim:
    """A job as the worker that claimed it holds it."""

    seq: int
    id: str
    lease_id: str
    user_seq: int
    env_id: str
    algorithm_ref: str | None
    writeup: str | None
    artifact_key: str
    artifact_sha256: str
    descriptor: dict[str, Any]
    seeds: list[int]
    attempts: int


def draw_seeds(n: int) -> list[int]:
    """``n`` seeds from the operating system's CSPRNG."""
    return [secrets.randbelow(SEED_BOUND) for _ in range(n)]


def worker_name() -> str:
    """``host:pid`` of this process, shown on a running job's page."""
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


# -- queueing ----------------------------------------------------------------------------------------


def store_artifact(state: ServerState, artifact: bytes) -> tuple[str, str]:
    """Store the (checked) artifact's bytes under their sha256; ``(key, sha256)``."""
    digest = hashlib.sha256(artifact).hexdigest()
    key = f"{ARTIFACT_PREFIX}{digest}.onnx"
    if state.store.size(key) != len(artifact):  # the same bytes stored before are kept as they are
        state.store.put_bytes(key, artifact)
    return key, digest


def add_job(
    session: Session,
    state: ServerState,
    principal: Principal,
    *,
    artifact: tuple[str, str, int],
    descriptor: dict[str, Any],
    env_id: str,
    episodes: int,
    algorithm_ref: str | None = None,
    writeup: str | None = None,
) -> AgentJob:
    """A queued job in ``session``'s transaction: ``artifact`` is ``(key, sha256, size)`` of the stored
    file; the seeds are drawn now."""
    key, digest, size = artifact
    job = AgentJob(
        id=new_id("agent_job"),
        user_seq=principal.user_seq,
        env_id=env_id,
        algorithm_ref=algorithm_ref,
        writeup=writeup,
        artifact_sha256=digest,
        artifact_key=key,
        artifact_size=size,
        descriptor=descriptor,
        episodes=episodes,
        seeds=draw_seeds(episodes),
        status="queued",
        attempts=0,
        returns=[],
        created=state.clock.now(),
    )
    session.add(job)
    session.flush()
    return job


def queue_job(
    state: ServerState,
    principal: Principal,
    *,
    artifact: bytes,
    descriptor: dict[str, Any],
    env_id: str,
    episodes: int,
    algorithm_ref: str | None = None,
    writeup: str | None = None,
) -> AgentJob:
    """Store the (checked) artifact and queue its evaluation; the new row."""
    key, digest = store_artifact(state, artifact)
    with state.db.write() as session:
        return add_job(
            session, state, principal, artifact=(key, digest, len(artifact)), descriptor=descriptor,
            env_id=env_id, episodes=episodes, algorithm_ref=algorithm_ref, writeup=writeup,
        )  # fmt: skip


def recent_jobs(state: ServerState, user_seq: int, seconds: float) -> int:
    """How many agents the user uploaded in the last ``seconds`` (the rate limit counts these)."""
    since = state.clock.now() - timedelta(seconds=seconds)
    with state.db.connect() as conn:
        query = sa.select(sa.func.count()).where(_JOBS.c.user_seq == user_seq, _JOBS.c.created > since)
        return int(conn.execute(query).scalar_one())


# -- claiming and leases -------------------------------------------------------------------------------


def requeue_expired(db: Database, clock: Clock, lease_s: float, max_attempts: int) -> int:
    """Put back the running jobs whose lease was not renewed for ``lease_s`` (their worker died): queued
    again with no progress, or failed once ``max_attempts`` workers died on them. How many there were."""
    cutoff = clock.now() - timedelta(seconds=lease_s)
    expired = sa.and_(_JOBS.c.status == "running", _JOBS.c.heartbeat < cutoff)
    with db.write() as session:
        conn = session.connection()
        failed = conn.execute(
            sa.update(_JOBS)
            .where(expired, _JOBS.c.attempts >= max_attempts)
            .values(
                status="failed",
                reason=(
                    f"The worker running it stopped answering {max_attempts} times (its lease of {lease_s:g} s "
                    "ran out without a heartbeat); the board gives up on it. A policy that crashes or stalls "
                    "the evaluator does this: run `palaestra agent check` on it, then upload it again."
                ),
                lease_id=None,
                finished=clock.now(),
            )
        ).rowcount
        requeued = conn.execute(
            sa.update(_JOBS)
            .where(expired, _JOBS.c.attempts < max_attempts)
            .values(status="queued", lease_id=None, worker=None, returns=[])
        ).rowcount
    return int(requeued) + int(failed)


def claim_next(db: Database, clock: Clock, worker: str, lease_s: float, max_attempts: int) -> Claim | None:
    """The oldest queued job, now running under a new lease of this worker's; None when none waits."""
    cutoff = clock.now() - timedelta(seconds=lease_s)
    waiting = sa.select(_JOBS.c.seq).where(
        sa.or_(_JOBS.c.status == "queued", sa.and_(_JOBS.c.status == "running", _JOBS.c.heartbeat < cutoff))
    )
    with db.connect() as conn:  # an idle worker looks with a read: no writer's lock taken every second
        if conn.execute(waiting.limit(1)).first() is None:
            return None
    requeue_expired(db, clock, lease_s, max_attempts)
    lease = uuid.uuid4().hex
    with db.write() as session:
        conn = session.connection()
        # SKIP LOCKED: a job another worker is claiming right now is passed over, not waited for
        # (SQLite has no row locks and renders no FOR UPDATE: its writers are serialised instead)
        pick = (
            sa.select(_JOBS.c.seq)
            .where(_JOBS.c.status == "queued")
            .order_by(_JOBS.c.seq)
            .limit(1)
            .with_for_update(skip_locked=True)
        )
        seq = conn.execute(pick).scalar()
        if seq is None:
            return None
        now = clock.now()
        taken = conn.execute(
            sa.update(_JOBS)
            .where(_JOBS.c.seq == seq, _JOBS.c.status == "queued")
            .values(
                status="running",
                lease_id=lease,
                heartbeat=now,
                worker=worker[:200],
                attempts=_JOBS.c.attempts + 1,
                returns=[],
                started=now,
            )
        ).rowcount
        if taken != 1:
            return None
        row = conn.execute(sa.select(_JOBS).where(_JOBS.c.seq == seq)).one()
    return Claim(
        seq=row.seq,
        id=row.id,
        lease_id=lease,
        user_seq=row.user_seq,
        env_id=row.env_id,
        algorithm_ref=row.algorithm_ref,
        writeup=row.writeup,
        artifact_key=row.artifact_key,
        artifact_sha256=row.artifact_sha256,
        descriptor=dict(row.descriptor),
        seeds=[int(s) for s in row.seeds],
        attempts=row.attempts,
    )


def _held(claim: Claim) -> Any:
    return sa.and_(_JOBS.c.seq == claim.seq, _JOBS.c.lease_id == claim.lease_id, _JOBS.c.status == "running")


def heartbeat(db: Database, clock: Clock, claim: Claim, returns: list[float] | None = None) -> bool:
    """Renew the lease (and record the returns so far); False if the job is no longer this worker's."""
    values: dict[str, Any] = {"heartbeat": clock.now()}
    if returns is not None:
        values["returns"] = list(returns)
    return db.write_one(sa.update(_JOBS).where(_held(claim)).values(**values), {}) == 1


def fail(db: Database, clock: Clock, claim: Claim, reason: str, log: str | None = None) -> bool:
    """Mark the job failed with ``reason`` and the end of ``log``; False if it was no longer this worker's."""
    tail = log[-LOG_TAIL_CHARS:] if log else None
    statement = (
        sa.update(_JOBS)
        .where(_held(claim))
        .values(status="failed", reason=reason, log_tail=tail, lease_id=None, finished=clock.now())
    )
    return db.write_one(statement, {}) == 1


def release(db: Database, claim: Claim) -> bool:
    """Give the job back to the queue untried, its attempt not counted (this worker cannot run it)."""
    statement = (
        sa.update(_JOBS)
        .where(_held(claim))
        .values(status="queued", lease_id=None, worker=None, returns=[], attempts=_JOBS.c.attempts - 1)
    )
    return db.write_one(statement, {}) == 1


def finish_in(session: Session, claim: Claim, evaluation_id: str | None, returns: list[float], now: Any) -> None:
    """In the transaction inserting its evaluation: the job is done, as ``evaluation_id`` (None for a
    board-game agent's job, whose result is its verified ladder matches, :mod:`.matches`); raises
    :class:`LeaseLost` (rolling the evaluation back) if the job is no longer this worker's."""
    done = session.connection().execute(
        sa.update(_JOBS)
        .where(_held(claim))
        .values(
            status="done", evaluation_id=evaluation_id, returns=list(returns), lease_id=None, finished=now
        )
    )
    if done.rowcount != 1:
        raise LeaseLost(f"Job {claim.id} is no longer this worker's; its result is not stored.")


# -- reading -----------------------------------------------------------------------------------------------


def job_matches(session: Session, job_id: str) -> list[tuple[str, str]]:
    """The verified ladder matches a Go or Hex agent's job played: (match id, ladder), in order."""
    rows = session.execute(
        sa.select(LadderMatch.id, LadderMatch.ladder).where(LadderMatch.agent_job_id == job_id).order_by(LadderMatch.seq)
    ).all()
    return [(match_id, ladder) for match_id, ladder in rows]


def load_job(session: Session, job_id: str) -> tuple[AgentJob, str | None]:
    """Job ``job_id`` and its owner's name (404 if there is none)."""
    job = session.scalar(sa.select(AgentJob).where(AgentJob.id == job_id))
    if job is None:
        raise Problem(
            404,
            f"No such agent job: {job_id!r}. `palaestra upload --agent MODEL.onnx` prints the id of the job "
            "it queued.",
        )
    owner = session.scalar(sa.select(User.name).where(User.seq == job.user_seq))
    return job, owner


def job_object(
    job: AgentJob, owner: str | None, base: str = "", matches: list[tuple[str, str]] | None = None
) -> AgentJobObject:
    """The wire answer of ``job``; ``matches``: :func:`job_matches` (a board-game agent's result)."""
    returns = [float(r) for r in job.returns or []]
    return AgentJobObject(
        id=job.id,
        status=job.status,  # type: ignore[arg-type]
        env=job.env_id,
        owner=owner,
        algorithm=job.algorithm_ref,
        artifact_sha256=job.artifact_sha256,
        artifact_size=job.artifact_size,
        descriptor=dict(job.descriptor or {}),
        episodes=job.episodes,
        seeds=[int(s) for s in job.seeds or []],
        returns=returns,
        episodes_done=len(returns),
        attempts=job.attempts,
        reason=job.reason,
        log_tail=job.log_tail,
        evaluation_id=job.evaluation_id,
        ladder_matches=[match_id for match_id, _ in matches or []],
        ladder=matches[0][1] if matches else None,
        created=job.created,
        started=job.started,
        finished=job.finished,
        web_url=base + agent_job_web_path(job.id),
    )
