"""``/v1/health`` answers 503 naming the part whose disk has less free space than the largest upload
the server accepts (or ``PALAESTRA_MIN_FREE_BYTES``): a probe of a few bytes still passes on a disk
too full for one more upload. Real small disks (tmpfs mounts; skipped where mounting is not allowed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tests.scoreboard.server.test_storage_faults import health, postgres_on_small_disk, small_disk
from tests.scoreboard.server_helpers import ScoreboardServer, error_of

__all__ = ["postgres_on_small_disk"]  # the fixture, used below

MiB = 1 << 20


def leave_free(disk: Path, free: int) -> Path:
    """Fill ``disk`` until about ``free`` bytes are left on it; the filler file (remove it for room)."""
    filler = disk / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, shutil.disk_usage(disk).free - free))
        f.flush()
        os.fsync(f.fileno())
    return filler


def test_a_blob_disk_without_room_for_the_largest_upload_fails_health(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    # The threshold by default is the largest upload accepted: here made 4 MiB by the upload limits.
    limits = {"PALAESTRA_MAX_EPISODE_BATCH_BYTES": str(4 * MiB), "PALAESTRA_MAX_VIDEO_ARCHIVE_BYTES": str(3 * MiB)}
    with small_disk(tmp_path / "blobs", size="8m") as disk:
        server: ScoreboardServer = scoreboard_factory(storage=str(disk), env=limits)
        assert health(server).json()["checks"] == {"database": "ok", "blob_store": "ok"}
        filler = leave_free(disk, 2 * MiB)
        body = error_of(health(server), 503)
        assert body["checks"]["database"] == "ok"
        assert "less than the 4 MiB of the largest upload" in body["checks"]["blob_store"]
        assert body["detail"].startswith("Unhealthy: the blob store has ")
        assert "free, less than the 4 MiB of the largest upload" in body["detail"]
        log = server.log_path.read_text()
        assert "Health check failed: the blob store has " in log and "Traceback" not in log
        filler.unlink()
        assert health(server).status_code == 200


def test_the_threshold_is_configurable_and_names_the_database_disk(scoreboard_factory: Any, tmp_path: Path) -> None:
    with small_disk(tmp_path / "data", size="8m") as disk:
        server: ScoreboardServer = scoreboard_factory(
            data_dir=disk, storage=str(tmp_path / "blobs"), env={"PALAESTRA_MIN_FREE_BYTES": str(3 * MiB)}
        )
        filler = leave_free(disk, 1 * MiB)
        body = error_of(health(server), 503)
        assert body["checks"]["blob_store"] == "ok"
        assert "the database has " in body["detail"] and "less than the 3 MiB" in body["detail"]
        filler.unlink()
        assert health(server).status_code == 200


def test_no_threshold_when_set_to_zero(scoreboard_factory: Any, tmp_path: Path) -> None:
    with small_disk(tmp_path / "blobs", size="2m") as disk:  # far less than the default 256 MiB
        server: ScoreboardServer = scoreboard_factory(storage=str(disk), env={"PALAESTRA_MIN_FREE_BYTES": "0"})
        assert health(server).status_code == 200


def test_a_postgresql_tablespace_without_room_fails_health(
    scoreboard_factory: Any, postgres_on_small_disk: tuple[str, Path]
) -> None:
    database_url, disk = postgres_on_small_disk
    server: ScoreboardServer = scoreboard_factory(
        database_url=database_url, env={"PALAESTRA_MIN_FREE_BYTES": str(4 * MiB)}
    )
    assert health(server).status_code == 200
    filler = leave_free(disk, 1 * MiB)
    body = error_of(health(server), 503)
    assert body["checks"]["blob_store"] == "ok"
    assert "the database has " in body["detail"] and "less than the 4 MiB" in body["detail"]
    filler.unlink()
    assert health(server).status_code == 200


def test_the_embedded_scoreboard_on_a_disk_without_room_says_why_it_cannot_start(tmp_path: Path) -> None:
    import pytest

    from palaestra.scoreboard.server.core.config import resolve_config
    from palaestra.scoreboard.server.embedded import EmbeddedScoreboard, ScoreboardStartError
    from tests.server_process import free_port

    with small_disk(tmp_path / "blobs", size="2m") as disk:  # `palaestra demo` on a nearly full disk
        config = resolve_config(data_dir=tmp_path / "data", storage=str(disk), port=free_port(), environ={})
        with pytest.raises(ScoreboardStartError, match="cannot serve: Unhealthy: the blob store has .* free"):
            EmbeddedScoreboard(config).start()
