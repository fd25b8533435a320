"""Atomic, durable file writes: readers see the old file or the new one, never half of one, and once
:func:`write_atomically` returns the new file survives a power loss.

The bytes go to a temporary file, which is fsynced, renamed over the target (``os.replace``) and
then the target's folder is fsynced, so that the rename itself is on disk. A write that fails (a
full disk, an error in ``write``) removes its temporary file. Used by the Monitor's JSON files
(:func:`palaestra.monitoring.files.atomic_write_json`) and the scoreboard's file store
(:class:`palaestra.scoreboard.server.core.storage.FileStore`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import BinaryIO

__all__ = ["fsync_directory", "write_atomically"]


def write_atomically(
    path: str | os.PathLike[str],
    write: Callable[[BinaryIO], object],
    tmp: str | os.PathLike[str] | None = None,
    *,
    durable: bool = True,
) -> None:
    """Make ``path`` hold what ``write(file)`` writes, atomically and durably.

    ``tmp`` is the temporary file (default ``<path>~``, as the 2017 Monitor named it); it must be on
    the same file system as ``path``. ``durable=False`` leaves out the two fsyncs: the new file then
    survives the process being killed (it is in the kernel's page cache) but not a power loss, which
    is the episode journal's promise too; for a file rewritten often whose last version is written
    durably at the end.
    """
    target = os.fspath(path)
    temporary = os.fspath(tmp) if tmp is not None else target + "~"
    try:
        with open(temporary, "wb") as f:
            write(f)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if durable:
        fsync_directory(os.path.dirname(target) or ".")


def fsync_directory(path: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a rename into it) to disk; a no-op where folders cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - file systems that refuse fsync on folders
        pass
    finally:
        os.close(fd)
