"""Test-only fault injection: make the server pause at a named point so that a test can kill it there.

Inert unless ``PALAESTRA_TEST_PAUSE_AT`` is set (``POINT:SECONDS``, e.g. ``after_blob_write:60``), which
no operator sets: the variable's name says what it is for. The points:

- ``after_blob_write``: an upload's bytes are in the blob store, its row is not committed yet
  (``evaluations.uploads``); a server killed there leaves the orphan that ``palaestra server gc`` removes.
"""

from __future__ import annotations

import logging
import os
import time

__all__ = ["PAUSE_ENV", "pause_at"]

PAUSE_ENV = "PALAESTRA_TEST_PAUSE_AT"

logger = logging.getLogger("palaestra.scoreboard")


def pause_at(point: str) -> None:
    """Sleep here if ``PALAESTRA_TEST_PAUSE_AT`` names ``point`` (logged first, for the test to see)."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    name, _, seconds = spec.partition(":")
    if name == point:
        logger.warning("%s: pausing at %s for %s s", PAUSE_ENV, point, seconds)
        time.sleep(float(seconds or 60))
