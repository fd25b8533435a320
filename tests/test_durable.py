"""Atomic durable writes (``palaestra.durable``): the new bytes are fsynced before they are renamed into
place and the folder after, for the Monitor's JSON files and the scoreboard's file store; a failed
write leaves the old file and no temporary file. A power loss cannot be staged in a test, so the
real ``os.fsync`` is watched: which file each call flushed, and what the target held at that moment."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

import gymnasium as gym
import pytest

import palaestra
from palaestra.durable import write_atomically
from palaestra.monitoring import files
from palaestra.scoreboard.server.core.storage import FileStore


@pytest.fixture
def fsynced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``os.fsync`` flushed, in order (the real fsync still runs)."""
    calls: list[str] = []
    real = os.fsync

    def watching(fd: int) -> None:
        calls.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", watching)
    return calls


def test_the_file_is_fsynced_before_the_rename_and_its_folder_after(
    tmp_path: Path, fsynced: list[str]
) -> None:
    target = tmp_path / "doc.json"
    target.write_text("old")
    seen_at_file_fsync: list[str] = []

    def write(f: BinaryIO) -> None:
        f.write(b"new")
        seen_at_file_fsync.append(target.read_text())

    write_atomically(target, write)
    assert fsynced == [str(tmp_path / "doc.json~"), str(tmp_path)]
    assert seen_at_file_fsync == ["old"] and target.read_text() == "new"
    assert os.listdir(tmp_path) == ["doc.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    target.write_text("old")

    def disk_full(f: BinaryIO) -> None:
        f.write(b"half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, disk_full)
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["doc.json"]


def test_the_monitors_final_files_are_fsynced(tmp_path: Path, fsynced: list[str]) -> None:
    env = palaestra.Monitor(gym.make("CartPole-v1"), tmp_path / "run", video_callable=False)
    for seed in range(3):
        env.reset(seed=seed)
        done = False
        while not done:
            done = any(env.step(env.action_space.sample())[2:4])
    fsynced.clear()
    env.close()
    run = tmp_path / "run"
    written = {Path(p).name for p in fsynced}
    assert any(name.endswith(files.MANIFEST_SUFFIX + "~") for name in written), written
    assert any(name.endswith(files.STATS_SUFFIX + "~") for name in written), written
    assert str(run) in fsynced  # the folder, after each rename
    assert len(palaestra.load_results(run)["episode_lengths"]) == 3


def test_the_file_stores_blobs_are_fsynced(tmp_path: Path, fsynced: list[str]) -> None:
    store = FileStore(tmp_path / "blobs")
    store.check()
    store.put_bytes("files/a", b"bytes")
    (tmp_file, folder) = fsynced
    assert Path(tmp_file).parent == tmp_path / "blobs" / ".tmp" and folder == str(
        tmp_path / "blobs" / "files"
    )
    assert store.get_bytes("files/a") == b"bytes" and list((tmp_path / "blobs" / ".tmp").iterdir()) == []
