"""Progress bars of large uploads (tqdm on stderr, only when it is a terminal)."""

from __future__ import annotations

import os
import sys
from typing import IO, Any

__all__ = ["PROGRESS_MIN_BYTES", "ProgressReader", "progress_bar"]

#: Smaller uploads get no progress bar.
PROGRESS_MIN_BYTES = 1 << 20


class ProgressReader:
    """A binary file whose reads advance a tqdm bar; a seek to 0 (a retry) starts the bar over."""

    def __init__(self, f: IO[bytes], bar: Any) -> None:
        self._f = f
        self._bar = bar
        self.name = f.name

    def read(self, size: int = -1) -> bytes:
        chunk = self._f.read(size)
        self._bar.update(len(chunk))
        return chunk

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        pos = self._f.seek(offset, whence)
        if pos == 0:
            self._bar.reset()
        return pos

    def tell(self) -> int:
        return self._f.tell()

    def fileno(self) -> int:
        return self._f.fileno()


def progress_bar(total: int, desc: str, stream: IO[str] | None = None) -> Any:
    """A tqdm bar on ``stream`` (stderr), disabled unless it is a terminal and ``total`` is large."""
    from tqdm import tqdm

    out = stream if stream is not None else sys.stderr
    enabled = total >= PROGRESS_MIN_BYTES and bool(getattr(out, "isatty", lambda: False)())
    return tqdm(
        total=total,
        desc=desc,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=out,
        disable=not enabled,
        leave=False,
    )
