"""The ``/v1`` API, wire-compatible with the 2017 gym client (spec §4.3-4.4, §10); the schemas are
:mod:`palaestra.scoreboard.protocol`'s, and every answer is built as its protocol model.

The route table, one router per resource:

=====================================  =========================================================
``GET  /v1/health``                    :mod:`.health`
``POST /v1/files``, ``GET`` one, list  :mod:`.files` (a file and its signed upload form)
``POST /v1/uploads/{file_id}``         :mod:`.uploads` (the form's ``post_url``: the bytes, ingested)
``POST /v1/evaluations``, ``GET``      :mod:`.evaluations` (scored on creation, atomically)
``GET  /v1/evaluations.csv``, ``.parquet``  :mod:`.exports` (the board's results as one table, streamed)
``/v1/live_evaluations`` (+ chunks)    :mod:`.live` (runs followed while they train)
``POST /v1/agents``, ``GET`` one       :mod:`.agents` (agents the board evaluates itself: jobs)
``/v1/benchmark_runs`` (+ ``/commit``)  :mod:`.benchmark_runs`
``/v1/algorithms``                     :mod:`.algorithms`
``/v1/envs``, ``/v1/groups``           :mod:`.envs`
``/v1/ladders``, ``/v1/ladder_matches``, ``/v1/ladder_games``  :mod:`.ladders` (board-game ladders)
``GET  /v1/log`` (+ ``/{seq}/blobs/i``)  :mod:`.log` (the hash chain of scores, oldest first)
=====================================  =========================================================

Shared pieces: :mod:`.deps` (``Annotated`` dependencies: ``State``, ``CurrentUser``, ``ListQuery``),
:mod:`..core.answers` (``Idempotency-Key`` on creating POSTs), :mod:`.common` (answers, list pages).
Errors are :class:`~palaestra.scoreboard.server.problems.Problem` and
:class:`~palaestra.scoreboard.server.evaluations.ingest.IngestError`, answered by the app's handlers.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from palaestra.scoreboard.protocol import API_PREFIX
from palaestra.scoreboard.server.api import (
    agents,
    algorithms,
    benchmark_runs,
    envs,
    evaluations,
    exports,
    files,
    health,
    ladders,
    live,
    log,
    uploads,
)

__all__ = ["ROUTERS", "include"]

#: The resources' routers, in the order of the route table above.
ROUTERS: tuple[APIRouter, ...] = tuple(
    resource.router
    for resource in (
        health, files, uploads, evaluations, exports, live, agents, benchmark_runs, algorithms, envs, ladders, log
    )
)


def include(app: FastAPI) -> None:
    """Serve the ``/v1`` API on ``app``. Each router is included in the app itself: a router nested in
    another is matched level by level on every request (FastAPI 0.16x), a few hundred Python calls
    more per upload (bench/server_load.py)."""
    for router in ROUTERS:
        app.include_router(router, prefix=API_PREFIX)
