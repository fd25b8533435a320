"""`palaestra server` that cannot start says why in one line and exits 3 (palaestra.cli.exits); one that
can prints its banner once, after the checks."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

from palaestra.cli import exits
from tests.cli.cli_helpers import PALAESTRA, cli_env, palaestra
from tests.server_process import ServerProcess, free_port


def _could_not_start(*args: str, cwd: Path) -> str:
    result = palaestra("server", *args, cwd=cwd, timeout=120)
    assert result.returncode == exits.COULD_NOT_START, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no traceback, no banner before it
    assert lines[0].startswith("palaestra server: error: ")
    return lines[0]


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = _could_not_start("--data-dir", "board", "--port", str(port), cwd=tmp_path)
    assert f"cannot listen on 127.0.0.1:{port} (Address already in use)" in line and "--port" in line


def test_a_data_folder_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    line = _could_not_start("--data-dir", "/proc/nope", "--port", str(free_port()), cwd=tmp_path)
    assert "cannot use its data folder /proc/nope" in line and "--data-dir" in line


def test_an_unreachable_database_is_one_line_without_its_password(tmp_path: Path) -> None:
    # port 1 on loopback: nothing listens there, the connection is refused at once
    url = "postgresql://someone:s3cret@127.0.0.1:1/scoreboard"
    line = _could_not_start("--database-url", url, "--data-dir", "board", "--port", str(free_port()), cwd=tmp_path)
    assert "postgresql+psycopg://someone:***@127.0.0.1:1/scoreboard" in line and "s3cret" not in line
    assert "Connection refused" in line
    line = _could_not_start("migrate", "--database-url", url, cwd=tmp_path)
    assert "someone:***@127.0.0.1:1" in line


def test_no_migrate_on_an_empty_database_is_one_line_with_the_fix(tmp_path: Path) -> None:
    line = _could_not_start("--data-dir", "board", "--no-migrate", "--port", str(free_port()), cwd=tmp_path)
    assert "is at schema revision (empty)" in line and "palaestra server migrate" in line


def test_a_server_that_starts_prints_its_banner_once(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = ServerProcess(["--data-dir", "board"], command=[PALAESTRA], cwd=tmp_path, env=cli_env(), log_path=log)
    try:
        server.start()
    finally:
        server.stop(signal.SIGINT)
    output = log.read_text()
    assert output.count(f"palaestra scoreboard on {server.url}") == 1, output


def test_a_database_migrated_by_a_newer_palaestra_is_one_line(tmp_path: Path) -> None:
    import sqlite3

    assert palaestra("server", "migrate", "--data-dir", "board", cwd=tmp_path).returncode == 0
    with sqlite3.connect(tmp_path / "board" / "scoreboard.sqlite3") as db:
        db.execute("UPDATE alembic_version SET version_num = '0042'")
    for args in (("--port", str(free_port())), ("--no-migrate", "--port", str(free_port()))):
        line = _could_not_start("--data-dir", "board", *args, cwd=tmp_path)
        assert "is at schema revision 0042, which this palaestra does not know" in line
        assert "restore a backup" in line
    result = palaestra("server", "migrate", "--data-dir", "board", cwd=tmp_path, timeout=120)
    assert result.returncode == exits.COULD_NOT_START and len(result.stderr.strip().splitlines()) == 1
    assert "schema revision 0042" in result.stderr
