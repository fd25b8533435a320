"""Storage faults are named: a full disk (blobs) or database is a 507 whose detail says the server's
storage is full, a failed write leaves no temporary file, and ``/v1/health`` probes the database and
the blob store (a write read back) and answers 503 naming the part that failed.

The full disk is a real one: a 2 MiB tmpfs (mounting needs root; the tests skip, saying so, where the
machine does not allow it)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.problems import storage_full
from tests.scoreboard.conftest import PG_ADMIN_URL, postgres_available
from tests.scoreboard.server_helpers import ScoreboardServer, create_file, error_of, make_batch, post_upload


@contextlib.contextmanager
def small_disk(path: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` for the duration."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(
            f"cannot mount a small tmpfs to fill (needs root and mount rights): {mounted.stderr.strip()}"
        )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte with one file (removed to make room again)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 16, 4096, 1):  # big blocks, then the last bytes
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


def batch_bytes(episodes: int) -> bytes:
    return json.dumps(make_batch(episodes)).encode()


def assert_storage_full(r: httpx.Response) -> None:
    body = error_of(r, 507)
    assert "storage is full" in body["detail"] and body["title"] == "Insufficient Storage"


#: These tests fill disks far smaller than the largest upload: health's free-space check
#: (test_free_space.py) is off, so that the probes' own failures are what is seen.
NO_SPACE_CHECK = {"PALAESTRA_MIN_FREE_BYTES": "0"}


def health(server: ScoreboardServer) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/health", timeout=30)


def test_a_full_blob_disk_is_507_leaves_no_temporary_file_and_fails_health(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "blobs") as disk:
        server: ScoreboardServer = scoreboard_factory(storage=str(disk), env=NO_SPACE_CHECK)
        assert health(server).json()["checks"] == {"database": "ok", "blob_store": "ok"}
        filler = fill(disk)
        with server.client() as c:
            for _ in range(3):
                assert_storage_full(post_upload(create_file(c, "episode_batch"), batch_bytes(2000)))
        assert list((disk / ".tmp").iterdir()) == []  # every failed write removed its temporary file
        r = health(server)
        body = error_of(r, 503)
        assert "the blob store failed its probe" in body["detail"] and "storage is full" in body["detail"]
        assert body["checks"]["database"] == "ok" and body["checks"]["blob_store"] != "ok"
        assert "Traceback" not in server.log()  # one line per failed probe or request, no tracebacks
        filler.unlink()  # room again: healthy, and uploads work
        assert health(server).status_code == 200
        with server.client() as c:
            assert post_upload(create_file(c, "episode_batch"), batch_bytes(2000)).status_code == 204


def test_a_full_database_disk_is_507_and_fails_health(scoreboard_factory: Any, tmp_path: Path) -> None:
    with small_disk(tmp_path / "data", size="4m") as disk:
        server: ScoreboardServer = scoreboard_factory(data_dir=disk, storage=str(tmp_path / "blobs"), env=NO_SPACE_CHECK)
        filler = fill(disk)
        answers = []
        with server.client() as c:
            for _ in range(500):  # SQLite reuses its WAL while it can: write until it cannot
                r = c.post("/v1/files", json={"purpose": "episode_batch"})
                answers.append(r.status_code)
                if r.status_code != 201:
                    break
        assert answers[-1] == 507, answers
        assert_storage_full(r)
        assert "database" in r.json()["detail"]
        body = error_of(health(server), 503)
        assert "the database failed its probe" in body["detail"] and body["checks"]["blob_store"] == "ok"
        filler.unlink()
        with server.client() as c:
            assert c.post("/v1/files", json={"purpose": "episode_batch"}).status_code == 201
        assert health(server).status_code == 200


def test_health_is_503_naming_an_unreachable_database(scoreboard_factory: Any, postgres_url: str) -> None:
    server: ScoreboardServer = scoreboard_factory(database_url=postgres_url)
    assert health(server).status_code == 200
    name = sa.make_url(postgres_url).database
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        conn.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
    try:
        body = error_of(health(server), 503)
        assert "the database failed its probe" in body["detail"] and body["checks"]["blob_store"] == "ok"
        assert "Traceback" not in server.log()
    finally:
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
    assert health(server).status_code == 200


def test_storage_full_is_recognised_through_the_layers_that_wrap_it() -> None:
    import psycopg.errors

    disk = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    sqlite_full = sa.exc.OperationalError("INSERT", {}, Exception("database or disk is full"))
    pg_full = sa.exc.OperationalError("INSERT", {}, psycopg.errors.DiskFull("could not extend file"))
    try:
        raise RuntimeError("while storing") from disk
    except RuntimeError as wrapped:
        assert storage_full(wrapped) == "disk"
    assert storage_full(sqlite_full) == "database" and storage_full(pg_full) == "database"
    assert storage_full(OSError(errno.EACCES, "denied")) is None
    assert storage_full(sa.exc.OperationalError("SELECT", {}, Exception("connection refused"))) is None


@pytest.fixture
def postgres_on_small_disk(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``(database URL, disk)``: a fresh PostgreSQL database whose tables live on a 24 MiB tmpfs (a
    tablespace there; PostgreSQL on this machine, as the suite's is). Skips where that cannot be made."""
    reason = postgres_available()
    if reason:
        pytest.skip(reason)
    import psycopg

    # the server's user must reach the folder: not under pytest's private temporary folder
    disk = Path(f"/tmp/palaestra-tablespace-{secrets.token_hex(4)}")
    name = f"palaestra_test_{secrets.token_hex(6)}"
    with small_disk(disk, size="24m"):
        shutil.chown(disk, "postgres", "postgres")
        disk.chmod(0o700)
        try:
            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f"CREATE TABLESPACE {name} LOCATION '{disk}'")
                conn.execute(f'CREATE DATABASE "{name}" TABLESPACE {name}')
        except psycopg.Error as e:
            pytest.skip(f"cannot put a PostgreSQL tablespace on a small disk here: {e}")
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", disk
        finally:
            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                conn.execute(f"DROP TABLESPACE IF EXISTS {name}")


def test_postgresql_out_of_disk_is_507_and_fails_health(
    scoreboard_factory: Any, postgres_on_small_disk: tuple[str, Path]
) -> None:
    database_url, disk = postgres_on_small_disk
    server: ScoreboardServer = scoreboard_factory(database_url=database_url, env=NO_SPACE_CHECK)
    filler = fill(disk)
    answers = []
    with server.client() as c:
        for _ in range(2000):  # each new page of the files table needs room on the disk
            r = c.post("/v1/files", json={"purpose": "episode_batch"})
            answers.append(r.status_code)
            if r.status_code != 201:
                break
    assert answers[-1] == 507, answers[-5:]
    assert_storage_full(r)
    assert "database" in r.json()["detail"]
    filler.unlink()
    with server.client() as c:
        assert c.post("/v1/files", json={"purpose": "episode_batch"}).status_code == 201
    assert health(server).status_code == 200
