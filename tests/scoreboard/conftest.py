"""Fixtures that run the real scoreboard service: a ``palaestra server`` subprocess on a free port.

- ``scoreboard_server`` (session): one shared SQLite + file-store server with one user. Don't kill it.
- ``fresh_scoreboard_server`` (function): a server of your own; ``.kill()``/``.restart()`` freely.
- ``scoreboard_factory`` (function): ``start(database_url=None, storage=None, env=None, args=())``
  for PostgreSQL / S3 set-ups; every server it starts is stopped at the end of the test.
- ``postgres_url`` (function): a fresh database on 127.0.0.1:5432, dropped afterwards (skips if none).
- ``s3_storage`` (function): ``(storage_url, env)`` of a bucket on a moto server on loopback.

Each server object has ``.url``, ``.api_key``, ``.data_dir``, ``.env`` (the environment its commands
run with), ``.kill()`` (SIGKILL), ``.stop()``, ``.restart()``, ``.create_user(name) -> key`` (in-process; ``.create_user_cli`` runs the command) and
``.palaestra(*args) -> CompletedProcess`` (a CLI command against the same database).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.scoreboard.server_helpers import ScoreboardServer
from tests.server_process import free_port

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture(scope="session")
def scoreboard_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoreboardServer]:
    """A shared SQLite + file-store server for the whole session (do not kill or restart it)."""
    # no agent worker of its own: an agent a test queues here stays queued, changing no other test's board
    server = ScoreboardServer(tmp_path_factory.mktemp("scoreboard-shared"), env={"PALAESTRA_EMBEDDED_WORKERS": "0"}).start()
    yield server
    server.stop()


@pytest.fixture
def scoreboard_factory(tmp_path: Path) -> Iterator[Any]:
    """``start(database_url=None, storage=None, env=None, args=(), data_dir=None)`` -> a started server."""
    servers: list[ScoreboardServer] = []

    def start(
        database_url: str | None = None,
        storage: str | None = None,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        data_dir: Path | None = None,
    ) -> ScoreboardServer:
        server = ScoreboardServer(
            data_dir or tmp_path / f"scoreboard-{len(servers)}", database_url, storage, env, args
        )
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def fresh_scoreboard_server(scoreboard_factory: Any) -> ScoreboardServer:
    """A SQLite + file-store server of this test's own (kill/restart it as you like)."""
    server: ScoreboardServer = scoreboard_factory()
    return server


def postgres_available() -> str | None:
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'palaestra[postgres]')"
    try:
        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3):
            return None
    except Exception as e:
        return f"no PostgreSQL at {PG_ADMIN_URL}: {e}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database (``postgresql+psycopg://...``), dropped after the test."""
    reason = postgres_available()
    if reason:
        pytest.skip(reason)
    import psycopg

    name = f"palaestra_test_{secrets.token_hex(6)}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """An S3-compatible server (moto) on a loopback port, for the session."""
    pytest.importorskip("boto3")
    server_mod = pytest.importorskip("moto.server")
    port = free_port()
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_storage(moto_endpoint: str) -> tuple[str, dict[str, str]]:
    """``(storage_url, env)``: a fresh bucket on the moto server and the env vars to reach it."""
    import boto3

    env = {
        "PALAESTRA_S3_ENDPOINT_URL": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    bucket = f"palaestra-{secrets.token_hex(4)}"
    s3 = boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    s3.create_bucket(Bucket=bucket)
    return f"s3://{bucket}/scoreboard", env
