"""The record of running servers (palaestra.scoreboard.server.core.running): `palaestra users` works on
the data of the server that runs, and says which database it used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from palaestra.scoreboard.server.core.running import running_servers, servers_dir
from tests.cli.cli_helpers import cli_env
from tests.server_process import ServerProcess


def _home(tmp_path: Path) -> dict[str, str]:
    """A user of their own: home, state and data folders in ``tmp_path``, no PALAESTRA_* variables."""
    return cli_env(
        HOME=str(tmp_path / "home"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "share"),
    )


def _users(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "palaestra", "users", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_users_create_without_data_dir_writes_to_the_running_servers_database_and_says_so(tmp_path: Path) -> None:
    env = _home(tmp_path)
    board = tmp_path / "board"
    with ServerProcess(["--data-dir", str(board)], env=env) as server:
        assert server.proc is not None
        [running] = running_servers(env)
        assert running.pid == server.proc.pid and running.url == server.url and running.data_dir == board
        created = _users(env, "create", "alice")
        assert created.returncode == 0, created.stderr
        assert f"database sqlite:///{board / 'scoreboard.sqlite3'}" in created.stderr
        assert f"the scoreboard server running at {server.url}" in created.stderr
        key = created.stdout.strip().splitlines()[-1]
        answer = httpx.post(
            f"{server.url}/v1/files", json={"purpose": "episode_batch"}, headers={"Authorization": f"Bearer {key}"}
        )
        assert answer.status_code == 201, answer.text
    assert running_servers(env) == [] and list(servers_dir(env).glob("*.json")) == []  # removed on exit


def test_without_a_running_server_users_says_it_used_the_default_database(tmp_path: Path) -> None:
    env = _home(tmp_path)
    # a record left by a server that was killed: its pid is a finished process's
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    folder = servers_dir(env)
    folder.mkdir(parents=True)
    stale = folder / f"{dead.stdout.strip()}.json"
    stale.write_text(json.dumps({"pid": int(dead.stdout), "url": "http://127.0.0.1:1", "data_dir": str(tmp_path / "gone"),
                                 "database_url": "sqlite:///x", "default_database": True}))  # fmt: skip
    listed = _users(env, "list")
    assert listed.returncode == 0, listed.stderr
    default = tmp_path / "share" / "palaestra" / "scoreboard" / "scoreboard.sqlite3"
    assert f"database sqlite:///{default} (the default: no scoreboard server runs here" in listed.stderr
    assert not stale.exists()
