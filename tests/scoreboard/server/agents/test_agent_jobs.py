"""Agent jobs in the database (server/agents/jobs.py) on SQLite and PostgreSQL: one claim per job
however many workers race for it, a job whose worker stops renewing its lease runs again (and fails
after too many deaths), and a worker whose lease was taken cannot store or fail the job."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.accounts import auth
from palaestra.scoreboard.server.agents import jobs as agent_jobs
from palaestra.scoreboard.server.archive.gc import referenced_keys
from palaestra.scoreboard.server.core.config import resolve_config
from palaestra.scoreboard.server.core.state import ServerState, build_state
from palaestra.scoreboard.server.tables.agents import AgentJob
from tests.server_process import FakeClock

LEASE_S = 60


@pytest.fixture(params=["sqlite", "postgresql"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerState]:
    """A scoreboard's state (no server) on each database, with a FakeClock and a user ``owner``."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    built = build_state(
        resolve_config(data_dir=tmp_path / "board", database_url=url, environ={}), FakeClock()
    )
    auth.create_user(built.db, "owner")
    try:
        yield built
    finally:
        built.close()


def owner(state: ServerState) -> auth.Principal:
    with state.db.connect() as conn:
        seq = conn.scalar(sa.text("SELECT seq FROM users WHERE name = 'owner'"))
    return auth.Principal(user_seq=int(seq), user_name="owner", key_id="test")


def queue(state: ServerState, episodes: int = 3, artifact: bytes = b"onnx bytes") -> AgentJob:
    return agent_jobs.queue_job(
        state, owner(state), artifact=artifact, descriptor={"env_id": "CartPole-v1"},
        env_id="CartPole-v1", episodes=episodes,
    )  # fmt: skip


def claim(state: ServerState, worker: str = "w") -> agent_jobs.Claim | None:
    return agent_jobs.claim_next(state.db, state.clock, worker, LEASE_S, max_attempts=2)


def job_row(state: ServerState, job_id: str) -> Any:
    with state.db.connect() as conn:
        return conn.execute(sa.select(AgentJob.__table__).where(AgentJob.id == job_id)).one()


def test_a_queued_job_has_one_server_drawn_seed_per_episode_and_its_artifact_stored(
    state: ServerState,
) -> None:
    job = queue(state, episodes=5)
    row = job_row(state, job.id)
    assert row.status == "queued" and row.attempts == 0 and len(row.seeds) == 5
    assert len(set(row.seeds)) == 5 and all(0 <= s < 2**31 for s in row.seeds)
    assert state.store.get_verified(row.artifact_key, row.artifact_sha256) == b"onnx bytes"
    assert queue(state, episodes=5).seeds != row.seeds  # drawn afresh for every upload
    assert row.artifact_key in referenced_keys(state.db)  # gc keeps it: no orphan


def test_eight_workers_racing_claim_each_job_exactly_once(state: ServerState) -> None:
    jobs = {queue(state).id for _ in range(6)}
    claimed: list[str] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        while (got := claim(state, name)) is not None:
            with lock:
                claimed.append(got.id)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == sorted(jobs)
    assert {job_row(state, j).status for j in jobs} == {"running"}


def test_a_job_whose_worker_stopped_renewing_its_lease_runs_again_then_fails_after_too_many_deaths(
    state: ServerState,
) -> None:
    job = queue(state)
    first = claim(state, "dies")
    assert first is not None and first.id == job.id and first.attempts == 1
    assert agent_jobs.heartbeat(state.db, state.clock, first, [1.0, 2.0])
    assert job_row(state, job.id).returns == [1.0, 2.0]
    state.clock.advance(LEASE_S - 1)  # type: ignore[attr-defined]
    assert claim(state) is None  # its lease still holds
    state.clock.advance(2)  # type: ignore[attr-defined]
    second = claim(state, "also dies")
    assert second is not None and second.id == job.id and second.attempts == 2
    assert second.lease_id != first.lease_id and second.seeds == first.seeds
    assert job_row(state, job.id).returns == []  # the dead worker's progress is what is lost
    assert not agent_jobs.heartbeat(state.db, state.clock, first, [9.0])  # the first lease is void
    state.clock.advance(LEASE_S + 1)  # type: ignore[attr-defined]
    assert claim(state) is None
    row = job_row(state, job.id)
    assert row.status == "failed" and "stopped answering 2 times" in row.reason


def test_a_worker_whose_lease_was_taken_stores_nothing_and_cannot_fail_the_job(state: ServerState) -> None:
    queue(state)
    first = claim(state)
    assert first is not None
    state.clock.advance(LEASE_S + 1)  # type: ignore[attr-defined]
    second = claim(state)
    assert second is not None
    with pytest.raises(agent_jobs.LeaseLost), state.db.write() as session:
        agent_jobs.finish_in(session, first, "eval_x", [1.0], state.clock.now())
    assert not agent_jobs.fail(state.db, state.clock, first, "too late")
    assert job_row(state, first.id).status == "running"
    assert agent_jobs.fail(state.db, state.clock, second, "the policy crashed", "line\n" * 5000)
    row = job_row(state, first.id)
    assert row.status == "failed" and row.reason == "the policy crashed"
    assert len(row.log_tail) == agent_jobs.LOG_TAIL_CHARS
