"""FastAPI dependencies shared by the API routes and the web pages.

``state_of(request)`` is the :class:`~palaestra.scoreboard.server.core.state.ServerState` of the app and
``get_state`` the same as a dependency (the API's ``State`` alias, :mod:`..api.deps`);
``run_blocking`` runs blocking work inline or in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request
from fastapi.concurrency import run_in_threadpool

from palaestra.scoreboard.server.core.database import WriterBusy
from palaestra.scoreboard.server.core.state import ServerState


def state_of(request: Request) -> ServerState:
    """The app's :class:`ServerState`."""
    state: ServerState = request.app.state.scoreboard
    return state


async def get_state(request: Request) -> ServerState:
    """:func:`state_of` as a dependency. ``async`` because FastAPI runs a plain ``def`` dependency in
    a worker thread: a thread hop per request for an attribute lookup (bench/server_load.py)."""
    return state_of(request)


_T = TypeVar("_T")


async def run_blocking(state: ServerState, fn: Callable[..., _T], *args: Any, small: bool = True) -> _T:
    """``fn(*args)``: on the event loop when the service is all local and the work ``small``, else
    in a worker thread.

    With the database on this machine (SQLite, or PostgreSQL on loopback) and a blob folder, a
    handler waits on nothing remote: run inline, it costs no thread hop and no fight for the GIL
    with other handler threads. That fight kept the SQLite writers' lock held three times as long
    under load, and left PostgreSQL-backed processes a third idle while requests queued
    (bench/server_load.py). With a database or S3 across the network (round trips of a millisecond
    or more) and for large uploads, worker threads keep the event loop free. Inline work never waits
    for another writer's lock on the loop: its first write raises WriterBusy instead, nothing written,
    and the work runs again in a thread (:meth:`~.database.Database.never_waiting`).
    ``PALAESTRA_INLINE_HANDLERS`` overrides the choice (``ServerConfig.inline_handlers``).
    """
    if state.inline and small:
        try:
            with state.db.never_waiting():
                return fn(*args)
        except WriterBusy:
            pass  # another writer holds SQLite (a large upload's transaction): wait in a thread, not here
    return await run_in_threadpool(fn, *args)
