"""Agents evaluated by the board, end to end with real processes: ``palaestra upload --agent`` to a
``palaestra server``, the job run by a ``palaestra worker`` process in the sandbox, stored as a verified
evaluation with its video; a worker SIGKILLed mid-job (the job runs again, once, and one evaluation is
stored); hostile or broken uploads refused with their reason while the board keeps serving."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from palaestra.scoreboard.server.core.config import resolve_config
from palaestra.scoreboard.server.core.storage import open_store
from tests.scoreboard import server_helpers
from tests.scoreboard.server.agents.agent_helpers import (
    RUN_TIMEOUT_S,
    count_rows,
    get_job,
    start_worker,
    wait_for,
    write_cartpole_agent,
)
from tests.scoreboard.server.test_immutable_storage import stored_batch
from tests.scoreboard.server_helpers import ScoreboardServer
from tests.server_process import PALAESTRA_COMMAND

pytest.importorskip("onnxruntime")

#: the server runs no worker of its own here: the worker processes of each test do the work
NO_EMBEDDED_WORKER = {"PALAESTRA_EMBEDDED_WORKERS": "0"}


def upload(server: ScoreboardServer, *args: str) -> subprocess.CompletedProcess[str]:
    """``palaestra upload ARGS`` to ``server`` as its first user."""
    env = {**server.env, "PALAESTRA_API_KEY": server.api_key}
    return subprocess.run(
        [*PALAESTRA_COMMAND, "upload", "--server", server.url, *args],
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S + 60,
    )  # fmt: skip


def upload_agent(server: ScoreboardServer, model: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return upload(server, "--agent", str(model), *args)


@pytest.mark.usefixtures("sandbox")
def test_a_cartpole_policy_uploaded_is_evaluated_by_a_worker_process_and_shown_verified_with_video(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    server: ScoreboardServer = scoreboard_factory(env=NO_EMBEDDED_WORKER)
    model = write_cartpole_agent(tmp_path / "agent")
    worker_log = tmp_path / "worker.log"
    worker = start_worker(server, worker_log)
    try:
        result = upload_agent(server, model, "--episodes", "3", "--algorithm", "sb3-ppo", "--wait")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr + worker_log.read_text()
    lines = result.stdout.strip().splitlines()
    job_url, job_id = lines[0], lines[1]
    assert job_url == f"{server.url}/agents/{job_id}" and job_id.startswith("job_")
    assert "done: 3/3 episodes" in result.stdout and lines[-2].startswith("verified evaluation: ")
    assert worker.returncode == 0  # SIGTERM: stopped between jobs

    job = get_job(server, job_id)
    assert job["status"] == "done" and job["attempts"] == 1 and job["returns"] == [500.0, 500.0, 500.0]
    assert len(job["seeds"]) == 3 and job["evaluation_id"] == lines[-1]
    evaluation = httpx.get(f"{server.url}/v1/evaluations/{job['evaluation_id']}", timeout=30).json()
    assert evaluation["env"] == "CartPole-v1" and evaluation["algorithm"]["name"] == "sb3-ppo"
    assert evaluation["score"]["number_episodes"] == 3 and evaluation["score"]["episodes_mean"] == 500.0
    assert evaluation["videos"] and evaluation["videos"][0]["content_type"] == "video/mp4"
    assert evaluation["provenance"]["seeds"]  # the evaluator's own record of what ran

    # the same algorithm's own, self-reported run on the env: a random policy's few steps per episode
    own = record_random_cartpole(tmp_path / "self-reported")
    uploaded = upload(server, str(own), "--algorithm", "sb3-ppo", "--json")
    assert uploaded.returncode == 0, uploaded.stderr
    self_reported = json.loads(uploaded.stdout.strip().splitlines()[-1])["id"]

    page = httpx.get(f"{server.url}/evaluations/{job['evaluation_id']}", timeout=30).text
    assert "Verified by this board" in page and job["artifact_sha256"] in page
    assert str(job["seeds"][0]) in page and job_id in page
    assert self_reported in page and "outside the verified interval" in page
    job_page = httpx.get(job_url, timeout=30).text
    assert "done" in job_page and f"/evaluations/{job['evaluation_id']}" in job_page
    board = httpx.get(f"{server.url}/envs/CartPole-v1", timeout=30).text
    verified_only = httpx.get(f"{server.url}/envs/CartPole-v1?verified=1", timeout=30).text
    assert self_reported in board and job["evaluation_id"] in board
    assert self_reported not in verified_only and job["evaluation_id"] in verified_only

    # the board's own episodes copied into a self-reported upload are not a repeat of the verified
    # evaluation (evaluations.repeats: the board's own runs take no part in the rule); the copy sent
    # again is a repeat of the copy
    key, _ = stored_batch(server, job["evaluation_id"])
    episodes = open_store(resolve_config(environ=server.env).storage_url).get_bytes(key)
    with server.client() as c:
        copies = []
        for _ in range(2):
            file_id = server_helpers.upload(c, "episode_batch", episodes)
            body = {"env": "CartPole-v1", "algorithm": {"id": "sb3-ppo"}, "training_episode_batch": file_id}
            copies.append(c.post("/v1/evaluations", json=body))
    assert [r.status_code for r in copies] == [201, 200], copies[0].text
    assert copies[0].json()["id"] == copies[1].json()["id"] != job["evaluation_id"]
    assert not copies[0].json()["verified"] and copies[1].json()["already_uploaded"]


def record_random_cartpole(directory: Path, episodes: int = 3) -> Path:
    import gymnasium as gym

    import palaestra

    with palaestra.Monitor(gym.make("CartPole-v1"), str(directory), video_callable=False) as env:
        for seed in range(episodes):
            env.reset(seed=seed)
            env.action_space.seed(seed)
            done = False
            while not done:
                done = any(env.step(env.action_space.sample())[2:4])
    return directory


@pytest.mark.usefixtures("sandbox")
def test_a_run_killed_at_the_wall_clock_limit_fails_its_job_with_the_reason_and_the_log_on_its_page(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    """The server's own (embedded) worker runs it; a 3-second limit stops 50 episodes of 500 steps."""
    server: ScoreboardServer = scoreboard_factory(env={"PALAESTRA_AGENT_WALL_S": "3"})
    model = write_cartpole_agent(tmp_path / "agent")
    result = upload_agent(server, model, "--episodes", "50", "--wait")
    assert result.returncode == 1, result.stdout + result.stderr
    job_id = result.stdout.strip().splitlines()[1]
    assert "wall-clock limit of 3 s" in result.stdout
    job = get_job(server, job_id)
    assert job["status"] == "failed" and "wall-clock limit" in job["reason"] and job["log_tail"]
    assert job["evaluation_id"] is None and count_rows(server, "evaluations") == 0
    page = httpx.get(job["web_url"], timeout=30).text
    assert "Failed: killed: the wall-clock limit" in page and 'id="failure-log"' in page


@pytest.mark.usefixtures("sandbox")
def test_a_worker_on_another_machine_evaluates_against_postgresql_and_s3(
    scoreboard_factory: Any, postgres_url: str, s3_storage: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    storage, s3_env = s3_storage
    server: ScoreboardServer = scoreboard_factory(
        database_url=postgres_url, storage=storage, env={**s3_env, **NO_EMBEDDED_WORKER}
    )
    model = write_cartpole_agent(tmp_path / "agent")
    result = upload_agent(server, model, "--episodes", "2")
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip().splitlines()[-1]
    # the worker's machine knows the board by its flags only (and the S3 credentials)
    env = {k: v for k, v in server.env.items() if k not in ("PALAESTRA_DATABASE_URL", "PALAESTRA_STORAGE")}
    env["PALAESTRA_DATA_DIR"] = str(tmp_path / "worker-machine")
    worker = subprocess.run(
        [*PALAESTRA_COMMAND, "worker", "--once", "--database-url", postgres_url, "--storage", storage],
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stdout + worker.stderr
    job = get_job(server, job_id)
    assert job["status"] == "done", job
    evaluation = httpx.get(f"{server.url}/v1/evaluations/{job['evaluation_id']}", timeout=30).json()
    assert evaluation["verified"] and evaluation["verification"]["seeds"] == job["seeds"]
    video = evaluation["videos"][0]["name"]
    played = httpx.get(
        f"{server.url}/evaluations/{job['evaluation_id']}/videos/{video}", timeout=30, follow_redirects=True
    )
    assert played.status_code == 200 and len(played.content) > 1000


@pytest.mark.usefixtures("sandbox")
def test_a_worker_killed_mid_job_loses_only_that_jobs_progress_and_the_job_is_stored_once(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    server: ScoreboardServer = scoreboard_factory(env={**NO_EMBEDDED_WORKER, "PALAESTRA_AGENT_LEASE_S": "3"})
    model = write_cartpole_agent(tmp_path / "agent")
    result = upload_agent(server, model, "--episodes", "6")
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip().splitlines()[-1]
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    first = start_worker(server, logs[0])
    try:
        wait_for(lambda: get_job(server, job_id)["episodes_done"] >= 1, "the first episode", logs=logs)
        first.send_signal(signal.SIGKILL)  # mid-job: episodes are still being played
        running_page = httpx.get(f"{server.url}/agents/{job_id}", timeout=30).text
        assert (
            "Running: " in running_page and "of 6 episodes played" in running_page and "500" in running_page
        )
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    killed = get_job(server, job_id)
    assert killed["status"] == "running" and 1 <= killed["episodes_done"] < 6
    assert count_rows(server, "evaluations") == 0

    second = start_worker(server, logs[1])  # it takes the job once the dead worker's lease has run out
    try:
        wait_for(lambda: get_job(server, job_id)["status"] == "done", "the job to run again", logs=logs)
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=60) == 0
    job = get_job(server, job_id)
    assert job["attempts"] == 2 and job["episodes_done"] == 6 and job["returns"] == [500.0] * 6
    assert count_rows(server, "evaluations") == 1
    assert count_rows(server, "evaluations", f"agent_job_id = '{job_id}' AND verified") == 1
    evaluation = httpx.get(f"{server.url}/v1/evaluations/{job['evaluation_id']}", timeout=30).json()
    assert evaluation["score"]["number_episodes"] == 6  # the second run's six, none of the first's


def test_an_upload_without_wait_answers_at_once_with_the_queued_job(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    server: ScoreboardServer = scoreboard_factory(env=NO_EMBEDDED_WORKER)
    model = write_cartpole_agent(tmp_path / "agent")
    result = upload_agent(server, model, "--episodes", "2", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout.strip().splitlines()[-1])
    assert doc["status"] == "queued" and doc["evaluation_id"] is None
    assert get_job(server, doc["id"])["status"] == "queued"


def test_every_refused_artifact_of_the_hostile_corpus_gets_one_4xx_naming_its_problem(
    scoreboard_factory: Any,
) -> None:
    from tests.agents.artifact.hostile import REFUSED

    server: ScoreboardServer = scoreboard_factory(env=NO_EMBEDDED_WORKER)
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.api_key}"}, timeout=60
    ) as c:
        before = c.get("/envs/CartPole-v1").status_code
        for hostile in REFUSED:
            files = {
                "model": ("m.onnx", hostile.build()),
                "descriptor": ("m.json", hostile.descriptor.to_json()),
            }
            refused = c.post("/v1/agents", files=files)
            assert refused.status_code == 400, (hostile.name, refused.text)
            assert hostile.reason in refused.json()["detail"], hostile.name
        assert c.get("/v1/health").status_code == 200 and c.get("/envs/CartPole-v1").status_code == before
    assert count_rows(server, "agent_jobs") == 0 and count_rows(server, "files") == 0


@pytest.mark.usefixtures("sandbox")
def test_an_artifact_that_passes_the_checks_and_misbehaves_when_run_fails_its_job_with_the_reason(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    from palaestra.agents.artifact.examples import write_agent
    from tests.agents.artifact.hostile import KILLED

    hostile = next(h for h in KILLED if h.name == "nan_output_from_zero_over_zero")
    server: ScoreboardServer = scoreboard_factory(env=NO_EMBEDDED_WORKER)
    model, _ = write_agent(hostile.build(), hostile.descriptor, tmp_path / "nan.onnx")
    queued = upload_agent(server, Path(model), "--episodes", "2")
    assert queued.returncode == 0, queued.stderr
    job_id = queued.stdout.strip().splitlines()[-1]
    worker = subprocess.run(
        [*PALAESTRA_COMMAND, "worker", "--once"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert worker.returncode == 0, worker.stderr
    job = get_job(server, job_id)
    assert job["status"] == "failed" and hostile.reason in job["reason"] and job["log_tail"]
    assert count_rows(server, "evaluations") == 0


def test_hostile_or_broken_agents_are_refused_with_their_reason_and_the_board_keeps_serving(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    server: ScoreboardServer = scoreboard_factory(
        env={
            **NO_EMBEDDED_WORKER,
            "PALAESTRA_MAX_AGENT_BYTES": "100000",
            "PALAESTRA_RATE_LIMIT_AGENTS_PER_HOUR": "1",
        }
    )
    model = write_cartpole_agent(tmp_path / "agent")
    good, descriptor = model.read_bytes(), model.with_suffix(".json").read_bytes()
    headers = {"Authorization": f"Bearer {server.api_key}"}

    def post(files: dict[str, Any], data: dict[str, str] | None = None, **kw: Any) -> httpx.Response:
        return httpx.post(
            f"{server.url}/v1/agents", files=files, data=data, timeout=60, **{"headers": headers, **kw}
        )

    refusals = [
        (post({"model": ("m.onnx", b"\x08\x07not a protobuf at all" * 10), "descriptor": ("d.json", descriptor)}),
         400, "model", "refused"),
        (post({"model": ("m.onnx", good), "descriptor": ("d.json", b'{"env_id": "CartPole-v1", "action": "teleport", '
                                                              b'"deterministic": true}')}),
         400, "descriptor", "teleport"),
        (post({"descriptor": ("d.json", descriptor)}), 400, "model", "no 'model' file"),
        (post({"model": ("m.onnx", good)}), 400, "descriptor", "no 'descriptor'"),
        (post({"model": ("m.onnx", good), "descriptor": ("d.json", descriptor)}, {"episodes": "0"}),
         400, "episodes", "from 1 to"),
        (post({"model": ("m.onnx", os.urandom(200_000)), "descriptor": ("d.json", descriptor)}), 413, None, "larger"),
        (post({"model": ("m.onnx", good), "descriptor": ("d.json", descriptor)}, headers={}), 401, None, ""),
    ]  # fmt: skip
    for response, status, param, words in refusals:
        assert response.status_code == status, response.text
        body = response.json()
        assert words in body["detail"]
        if param:
            assert body["type"] == param, body
    assert count_rows(server, "agent_jobs") == 0
    assert httpx.get(f"{server.url}/v1/health", timeout=30).status_code == 200

    keyed = {**headers, "Idempotency-Key": "agent-once"}
    files = {"model": ("m.onnx", good), "descriptor": ("d.json", descriptor)}
    accepted = post(files, {"episodes": "2"}, headers=keyed)
    assert accepted.status_code == 202, accepted.text
    assert accepted.headers["Location"].endswith(f"/v1/agents/{accepted.json()['id']}")
    retried = post(files, {"episodes": "2"}, headers=keyed)  # a retry after a lost answer: the same job
    assert retried.status_code == 202 and retried.json()["id"] == accepted.json()["id"]
    assert retried.headers["Idempotent-Replayed"] == "true" and count_rows(server, "agent_jobs") == 1
    reused = post(files, {"episodes": "3"}, headers=keyed)
    assert reused.status_code == 409 and "Idempotency-Key" in reused.json()["detail"]
    over = post(files, {"episodes": "3"})  # a second agent within the hour, where the limit is one
    assert over.status_code == 429 and "PALAESTRA_RATE_LIMIT_AGENTS_PER_HOUR" in over.json()["detail"]
    assert int(over.headers["Retry-After"]) >= 1 and count_rows(server, "agent_jobs") == 1
    missing = httpx.get(f"{server.url}/v1/agents/job_nope", timeout=30)
    assert missing.status_code == 404 and "job_nope" in missing.json()["detail"]


@pytest.mark.usefixtures("sandbox")
def test_a_worker_frozen_past_its_lease_wakes_to_find_the_job_taken_and_stores_nothing(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    """SIGSTOP freezes the first worker (its sandbox plays on, its heartbeats stop); a second one takes
    the job and stores it; the first, thawed, drops its run: one evaluation, the second's."""
    server: ScoreboardServer = scoreboard_factory(env={**NO_EMBEDDED_WORKER, "PALAESTRA_AGENT_LEASE_S": "3"})
    model = write_cartpole_agent(tmp_path / "agent")
    result = upload_agent(server, model, "--episodes", "4")
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip().splitlines()[-1]
    logs = [tmp_path / "frozen.log", tmp_path / "second.log"]
    frozen = start_worker(server, logs[0], "--once")
    try:
        wait_for(lambda: get_job(server, job_id)["episodes_done"] >= 1, "the first episode", logs=logs)
        frozen.send_signal(signal.SIGSTOP)
        second = start_worker(server, logs[1])  # it takes the job once the frozen one's lease has run out
        try:
            wait_for(lambda: get_job(server, job_id)["status"] == "done", "the second worker", logs=logs)
        finally:
            second.send_signal(signal.SIGTERM)
            assert second.wait(timeout=60) == 0
        done = get_job(server, job_id)
        assert done["status"] == "done" and done["attempts"] == 2
        frozen.send_signal(signal.SIGCONT)
        assert frozen.wait(timeout=RUN_TIMEOUT_S) == 0, logs[0].read_text()
    finally:
        if frozen.poll() is None:
            frozen.send_signal(signal.SIGCONT)
            frozen.kill()
    assert "was given to another worker" in logs[0].read_text()
    assert get_job(server, job_id) == done  # the thawed worker changed nothing
    assert count_rows(server, "evaluations") == 1
    evaluation = httpx.get(f"{server.url}/v1/evaluations/{done['evaluation_id']}", timeout=30).json()
    assert evaluation["verification"]["evaluator"]["attempt"] == 2


@pytest.mark.usefixtures("sandbox")
def test_a_worker_with_ray_runs_the_jobs_episodes_as_a_ray_task(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    """On a local Ray instance (``--ray local``, started by the worker: about 10 s here)."""
    pytest.importorskip("ray")
    server: ScoreboardServer = scoreboard_factory(env=NO_EMBEDDED_WORKER)
    model = write_cartpole_agent(tmp_path / "agent")
    result = upload_agent(server, model, "--episodes", "2")
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip().splitlines()[-1]
    worker = subprocess.run(
        [*PALAESTRA_COMMAND, "worker", "--ray", "local", "--once"],
        env={**server.env, "RAY_ADDRESS": ""}, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stdout + worker.stderr
    job = get_job(server, job_id)
    assert job["status"] == "done" and job["returns"] == [500.0, 500.0], job
    evaluation = httpx.get(f"{server.url}/v1/evaluations/{job['evaluation_id']}", timeout=30).json()
    assert evaluation["verified"] and evaluation["videos"] and evaluation["score"]["number_episodes"] == 2


def test_a_worker_refuses_to_start_where_it_cannot_make_the_sandbox_unless_the_operator_allows_it(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "PATH": str(tmp_path / "no-bwrap-here"),
        "PALAESTRA_DATA_DIR": str(tmp_path / "board"),
    }
    refused = subprocess.run(
        [*PALAESTRA_COMMAND, "worker", "--once"], env=env, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 3  # could not start
    assert "cannot evaluate agents" in refused.stderr and "PALAESTRA_AGENT_UNCONFINED=1" in refused.stderr
    (tmp_path / "board").mkdir()
    allowed = subprocess.run(
        [*PALAESTRA_COMMAND, "worker", "--once"], env={**env, "PALAESTRA_AGENT_UNCONFINED": "1"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    # past the sandbox check, it stops at the board: a database the server never migrated
    assert allowed.returncode == 3 and "palaestra server migrate" in allowed.stderr, allowed.stderr
