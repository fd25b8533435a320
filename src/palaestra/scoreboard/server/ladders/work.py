"""The ladder's heavy work, off the event loop and out of the server's process: checking an upload and
rating a ladder again, in worker processes.

- :class:`LadderWork` (one per server state, ``state.ladder_work``): :meth:`~LadderWork.run` (from
  a request) and :meth:`~LadderWork.call` (from a thread) run a function in a process of a small
  pool, started on the first upload (``spawn``: no fork of a threaded server; ``nice`` 10, so that
  requests come first). An upload's check replays its games there
  (:func:`.checks.check_in_worker`): a replay is pure Python, and on the event loop a 4 MB
  19x19 upload held every request for seconds. :meth:`~LadderWork.rerate` has a ladder's ratings
  derived again by the state's background worker (:mod:`..core.background`), which hands the work to the
  pool (:func:`.service.rerate_in_worker`: reading 100,000 games in the server's process held the
  GIL from the requests), and answers when a derivation that began after the call has finished:
  uploads that arrive while one runs share the next one.

``bench/ladder_upload_stall.py`` measures what an upload costs a concurrent ``GET /``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from palaestra.scoreboard.server.core.background import BackgroundJobs

__all__ = ["CHECK_WORKERS", "RERATE_WAIT_S", "WORKER_NICENESS", "LadderWork"]

logger = logging.getLogger("palaestra.scoreboard")
_T = TypeVar("_T")

#: Worker processes that replay uploads: two uploads are checked at once, a third waits.
CHECK_WORKERS = 2
#: How long an upload's answer waits for its ladder's ratings; past it, they follow in the background.
RERATE_WAIT_S = 60.0


#: How much the workers yield to the server's own process (``nice``): a replay is batch work, a
#: request is someone waiting.
WORKER_NICENESS = 10


def _lower_priority() -> None:
    """A worker's start: below the server's process in the CPU scheduler's order."""
    try:
        os.nice(WORKER_NICENESS)
    except OSError:  # not allowed here: the worker runs at the server's priority
        logger.debug("could not lower the ladder worker's priority")


class LadderWork:
    """The check pool and the re-rating queue of one server state (see the module docstring)."""

    def __init__(self, jobs: BackgroundJobs, workers: int = CHECK_WORKERS) -> None:
        self._jobs = jobs
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        #: ladder -> the futures of the callers waiting for its next derivation
        self._waiting: dict[str, list[Future[None]]] = {}
        self._scheduled: set[str] = set()
        self._numbers = itertools.count()

    def _submit(self, function: Callable[..., _T], *args: Any) -> Future[_T]:
        with self._lock:
            if self._pool is None:
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(self._workers, mp_context=context, initializer=_lower_priority)
            pool = self._pool
        return pool.submit(function, *args)

    def _broken(self) -> None:
        """A worker died (killed, or crashed on what it ran): the next call starts a new pool."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    async def run(self, function: Callable[..., _T], *args: Any) -> _T:
        """``function(*args)`` in a worker process (both picklable: a module's function and plain data);
        :class:`~concurrent.futures.process.BrokenProcessPool` if its worker died."""
        try:
            return await asyncio.wrap_future(self._submit(function, *args))
        except BrokenProcessPool:
            self._broken()
            raise

    def call(self, function: Callable[..., _T], *args: Any) -> _T:
        """:meth:`run` for a thread that may wait (the background worker's)."""
        try:
            return self._submit(function, *args).result()
        except BrokenProcessPool:
            self._broken()
            raise

    async def rerate(self, ladder: str, derive: Callable[[str], Any], wait_s: float = RERATE_WAIT_S) -> bool:
        """Have ``derive(ladder)`` run in the background after this call; whether it finished within
        ``wait_s`` (else the answer goes without it, and the ratings follow)."""
        done: Future[None] = Future()
        with self._lock:
            self._waiting.setdefault(ladder, []).append(done)
            start = ladder not in self._scheduled
            self._scheduled.add(ladder)
        if start:  # a key of its own: a derivation already running must not stand for this one
            self._jobs.submit(f"ladder-rerate:{ladder}:{next(self._numbers)}", lambda: self._derive(ladder, derive))
        try:
            await asyncio.wait_for(asyncio.wrap_future(done), wait_s)
        except asyncio.TimeoutError:
            return False
        return True

    def _derive(self, ladder: str, derive: Callable[[str], Any]) -> None:
        """Derive ``ladder`` again while callers wait for it: each round serves those who asked before it."""
        while True:
            with self._lock:
                waiters = self._waiting.pop(ladder, [])
                if not waiters:
                    self._scheduled.discard(ladder)
                    return
            try:
                derive(ladder)
            except Exception:  # the ratings stay as they were; the next upload derives them again
                logger.exception("Rating the ladder %s failed", ladder)
            for waiter in waiters:
                waiter.set_result(None)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
