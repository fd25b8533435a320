"""Work a request leaves to run after its response (a benchmark run's bootstrap): one worker thread
per server process, so that it never competes with more than one request's worth of CPU, and each key
queued at most once at a time (a run viewed ten times while its bootstrap runs is bootstrapped once).

The job's result is kept where it belongs (the database); a server stopped before a job ran loses
nothing but the job, which the next view of the page queues again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["BackgroundJobs"]

logger = logging.getLogger("palaestra.scoreboard")


class BackgroundJobs:
    """A queue of keyed jobs, run one at a time in a thread of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: dict[str, Future[object]] = {}
        self._executor: ThreadPoolExecutor | None = None

    def submit(self, key: str, job: Callable[[], object]) -> Future[object]:
        """Run ``job`` after what is queued, unless a job of ``key`` is queued or running already
        (then that one's future)."""
        with self._lock:
            queued = self._queued.get(key)
            if queued is not None:
                return queued
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="palaestra-background")
            future = self._executor.submit(self._run, key, job)
            self._queued[key] = future
            return future

    def pending(self, key: str) -> bool:
        """Whether a job of ``key`` is queued or running."""
        with self._lock:
            return key in self._queued

    def _run(self, key: str, job: Callable[[], object]) -> object:
        try:
            return job()
        except Exception:
            logger.exception("Background job %s failed", key)
            return None
        finally:
            with self._lock:
                self._queued.pop(key, None)

    def close(self) -> None:
        """Drop the jobs not started; the running one finishes in its thread."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
