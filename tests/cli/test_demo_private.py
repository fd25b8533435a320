"""`palaestra demo` keeps its data private: whatever the user's umask, every folder it creates is 0700
and every file 0600 (or stricter), so other users of the machine cannot read the database, the
upload secret, the recorded runs or their videos."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.cli.cli_helpers import palaestra
from tests.server_process import free_port


def test_demo_data_is_private_under_a_permissive_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)  # the common default: files readable by everyone
    try:
        result = palaestra(
            "demo", "--data-dir", "d", "--port", str(free_port()), "--episodes", "20", "--no-serve", cwd=tmp_path
        )
    finally:
        os.umask(previous)
    assert result.returncode == 0, result.stderr
    data_dir = tmp_path / "d"
    seen = {"folders": 0, "files": 0}
    for path in [data_dir, *data_dir.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        assert mode & 0o077 == 0, f"{path} is readable by others (mode {stat.S_IMODE(mode):o})"
        seen["folders" if stat.S_ISDIR(mode) else "files"] += 1
    assert seen["folders"] >= 3 and seen["files"] >= 5, seen  # data dir, runs, blobs; db, secret, videos
    assert list(data_dir.glob("runs/*/openaigym.video.*.mp4")), "the demo recorded videos to check"
