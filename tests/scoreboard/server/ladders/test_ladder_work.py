"""The ladder's worker pool and re-rating queue: a dead worker costs one call, not the server's checks;
every re-rating request is answered by a derivation that began after it."""

from __future__ import annotations

import asyncio
import math
import os
import threading
from concurrent.futures.process import BrokenProcessPool

import pytest

from palaestra.scoreboard.server.core.background import BackgroundJobs
from palaestra.scoreboard.server.ladders.work import LadderWork


def test_a_worker_that_dies_fails_its_call_and_the_next_call_gets_a_new_pool() -> None:
    jobs = BackgroundJobs()
    work = LadderWork(jobs, workers=1)

    async def calls() -> float:
        with pytest.raises(BrokenProcessPool):
            await work.run(os._exit, 3)  # the worker process ends under its call
        return await work.run(math.sqrt, 16.0)

    try:
        assert asyncio.run(calls()) == 4.0
    finally:
        work.close()
        jobs.close()


def test_requests_for_a_ladder_during_a_derivation_are_answered_by_the_next_one() -> None:
    jobs = BackgroundJobs()
    work = LadderWork(jobs)
    started, release = threading.Event(), threading.Event()
    derived: list[str] = []

    def derive(ladder: str) -> None:
        derived.append(ladder)
        if len(derived) == 1:  # hold the first derivation until the others have asked
            started.set()
            release.wait(30)

    async def requests() -> list[bool]:
        first = asyncio.ensure_future(work.rerate("Go9x9", derive))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        later = [asyncio.ensure_future(work.rerate("Go9x9", derive)) for _ in range(3)]
        await asyncio.sleep(0)  # each of them asks (up to its first wait) before the release
        release.set()
        return [await first, *[await f for f in later]]

    try:
        assert asyncio.run(requests()) == [True] * 4
        assert derived == ["Go9x9", "Go9x9"]  # the three that asked during the first share the second
    finally:
        work.close()
        jobs.close()
