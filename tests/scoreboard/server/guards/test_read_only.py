"""Read-only archive mode (``palaestra server --read-only``): every read serves, every write is refused
with one problem document, by palaestra's client and gym 0.9.4's alike, and nothing is stored."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from palaestra.scoreboard.server.guards.readonly import READ_ONLY_DETAIL, READ_ONLY_STATUS
from tests.scoreboard.client.client_helpers import record_cartpole
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    error_of,
    form_token,
    upload_evaluation,
    video_archive,
)


def board_state(server: ScoreboardServer) -> dict[str, str]:
    """Every row of the board's tables and every blob, hashed: what "nothing stored" compares."""
    import sqlalchemy as sa

    from palaestra.scoreboard.server.core.config import resolve_config

    engine = sa.create_engine(resolve_config(environ=server.env).database_url)
    state: dict[str, str] = {}
    try:
        with engine.connect() as conn:
            for table in sa.inspect(conn).get_table_names():
                rows = conn.execute(sa.text(f'SELECT * FROM "{table}"')).all()
                state[f"table {table}"] = hashlib.sha256(repr(sorted(map(repr, rows))).encode()).hexdigest()
    finally:
        engine.dispose()
    blobs = server.data_dir / "blobs"
    for path in sorted(blobs.rglob("*")):
        if path.is_file():
            state[f"blob {path.relative_to(blobs)}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


@pytest.fixture(scope="module")
def frozen_board(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A board with an evaluation with videos (an mp4 and a terminal recording), then restarted
    read-only on the same data folder."""
    server = ScoreboardServer(tmp_path_factory.mktemp("frozen")).start()
    with server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", videos=video_archive(1, "mp4"), algorithm={"id": "frozen-alg"})
    server.stop()
    server.args = ["--read-only"]
    server.start()
    yield {"server": server, "evaluation": ev}
    server.stop()


def test_health_says_the_board_is_a_read_only_archive(frozen_board: dict[str, object]) -> None:
    server = frozen_board["server"]
    assert isinstance(server, ScoreboardServer)
    health = httpx.get(f"{server.url}/v1/health").json()
    assert health["mode"] == "read-only" and health["checks"] == {"database": "ok", "blob_store": "ok"}


def test_every_page_read_and_download_still_serves(frozen_board: dict[str, object]) -> None:
    server, ev = frozen_board["server"], frozen_board["evaluation"]
    assert isinstance(server, ScoreboardServer) and isinstance(ev, dict)
    before = board_state(server)
    eid = ev["id"]
    video = ev["videos"][0]
    paths = [
        "/",
        "/envs/CartPole-v1",
        "/envs/CartPole-v1/picture",
        f"/evaluations/{eid}",
        f"/evaluations/{eid}/episode_batch.json",
        f"/evaluations/{eid}/episodes.csv",
        f"/evaluations/{eid}/videos/{video['name']}",
        "/users",
        "/users/tester",
        "/algorithms",
        f"/algorithms/{ev['algorithm']['id']}",
        "/benchmarks",
        "/search?q=Cart",
        f"/compare?e={eid}",
        "/v1/evaluations",
        f"/v1/evaluations/{eid}",
        "/v1/envs/CartPole-v1",
    ]
    with server.client() as c:
        for path in paths:
            r = c.get(path)
            assert r.status_code == 200, (path, r.status_code, r.text[:300])
        page = c.get(f"/evaluations/{eid}").text
        assert eid in page and "read-only archive" in page and "/login?" not in page
        assert c.get("/v1/files").status_code == 200  # an authenticated read
    assert board_state(server) == before  # no env picture cached, no counter, no probe row


def test_every_write_is_refused_with_one_problem_and_nothing_is_stored(frozen_board: dict[str, object]) -> None:
    server, ev = frozen_board["server"], frozen_board["evaluation"]
    assert isinstance(server, ScoreboardServer) and isinstance(ev, dict)
    before = board_state(server)
    writes = [
        ("/v1/files", {"purpose": "episode_batch"}),
        ("/v1/evaluations", {"env": "CartPole-v1", "training_episode_batch": "file_x"}),
        ("/v1/benchmark_runs", {"benchmark_id": "ClassicControl2-v0"}),
        ("/v1/algorithms", {"name": "new"}),
        ("/v1/uploads/file_x", {}),
    ]
    with server.client() as c:
        for path, body in writes:
            problem = error_of(c.post(path, json=body), READ_ONLY_STATUS)
            assert problem["detail"] == READ_ONLY_DETAIL, path
    with httpx.Client(base_url=server.url) as browser:
        signin = browser.get("/login")
        token = form_token(signin.text)
        r = browser.post(
            "/login", data={"name": "tester", "password": "x" * 12, "csrf_token": token}, headers={"accept": "text/html"}
        )
        assert r.status_code == READ_ONLY_STATUS and "read-only archive" in r.text and "set-cookie" not in r.headers
    assert board_state(server) == before


def test_palaestra_upload_is_refused_in_one_line_without_retrying(
    frozen_board: dict[str, object], tmp_path: Path
) -> None:
    server = frozen_board["server"]
    assert isinstance(server, ScoreboardServer)
    directory = record_cartpole(tmp_path / "run", episodes=2)
    before = board_state(server)
    env = {**os.environ, "PALAESTRA_API_KEY": server.api_key, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "upload", str(directory), "--server", server.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if "read-only archive" in line]
    assert len(errors) == 1, done.stderr
    assert "retry" not in done.stderr.lower(), done.stderr
    assert time.monotonic() - started < 50  # far below the client's 60 s retry budget: it did not retry
    assert board_state(server) == before


LEGACY_UPLOAD = textwrap.dedent(
    """
    import sys, gym
    from gym import wrappers
    from gym.scoreboard.client import error
    env = wrappers.Monitor(gym.make("CartPole-v0"), sys.argv[1], force=True, video_callable=False)
    env.seed(0)
    for _ in range(2):
        env.reset(); done = False
        while not done:
            _, _, done, _ = env.step(env.action_space.sample())
    env.close()
    try:
        gym.upload(sys.argv[1])
    except error.Error as e:
        print("REFUSED", type(e).__name__, getattr(e, "http_status", None), str(e))
    """
)


@pytest.mark.legacy_gym
def test_gym_094_upload_is_refused_at_once(
    frozen_board: dict[str, object], legacy_gym_python: str, tmp_path: Path
) -> None:
    server = frozen_board["server"]
    assert isinstance(server, ScoreboardServer)
    before = board_state(server)
    env = {
        **os.environ,
        "GYM_NO_LOGGER_SETUP": "1",
        "OPENAI_GYM_API_BASE": server.url,
        "OPENAI_GYM_API_KEY": server.api_key,
    }
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [legacy_gym_python, "-c", LEGACY_UPLOAD, str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    refused = [line for line in done.stdout.splitlines() if line.startswith("REFUSED")]
    assert len(refused) == 1, done.stdout
    assert refused[0].startswith(f"REFUSED APIError {READ_ONLY_STATUS} Request req_") and READ_ONLY_DETAIL in refused[0]
    assert "Retrying" not in done.stderr
    assert board_state(server) == before


def test_gc_and_user_changes_refuse_to_run_on_a_read_only_board(frozen_board: dict[str, object]) -> None:
    server = frozen_board["server"]
    assert isinstance(server, ScoreboardServer)
    before = board_state(server)
    done = server.palaestra("server", "gc", "--read-only", check=False)
    assert done.returncode != 0 and "read-only archive" in done.stderr
    assert server.palaestra("server", "gc", "--read-only", "--dry-run").returncode == 0
    server.env["PALAESTRA_READ_ONLY"] = "1"
    try:
        for command in (("users", "create", "newcomer"), ("users", "revoke", "tester")):
            done = server.palaestra(*command, check=False)
            assert done.returncode != 0 and "read-only archive" in done.stderr, command
        assert "tester" in server.palaestra("users", "list").stdout
    finally:
        del server.env["PALAESTRA_READ_ONLY"]
    assert board_state(server) == before


def test_the_setting_comes_from_the_environment_and_a_bad_value_is_named() -> None:
    from palaestra.errors import ConfigurationError
    from palaestra.scoreboard.server.core.config import resolve_config

    assert resolve_config(data_dir="/tmp/x", environ={"PALAESTRA_READ_ONLY": "1"}).read_only
    assert not resolve_config(data_dir="/tmp/x", environ={}).read_only
    with pytest.raises(ConfigurationError, match="PALAESTRA_READ_ONLY must be 1 or 0, not 'yes'"):
        resolve_config(data_dir="/tmp/x", environ={"PALAESTRA_READ_ONLY": "yes"})


def test_every_worker_of_a_read_only_server_refuses_writes(frozen_board: dict[str, object]) -> None:
    frozen = frozen_board["server"]
    assert isinstance(frozen, ScoreboardServer)
    before = board_state(frozen)
    server = ScoreboardServer(frozen.data_dir, args=["--read-only", "--workers", "2"])
    server.api_key = frozen.api_key
    server.start()
    try:
        with server.client() as c:
            for _ in range(6):  # spread over both workers
                assert c.get("/v1/health").json()["mode"] == "read-only"
                error_of(c.post("/v1/files", json={"purpose": "episode_batch"}), READ_ONLY_STATUS)
    finally:
        server.stop()
    assert board_state(frozen) == before
