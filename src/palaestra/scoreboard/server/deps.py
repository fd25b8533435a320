"""FastAPI dependencies shared by the API routes and the web pages.

``state_of(request)`` is the :class:`~palaestra.scoreboard.server.state.ServerState` of the app and
``get_state`` the same as a dependency; ``get_session()`` yields a read-only SQLAlchemy session
(closed after the request).
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from palaestra.scoreboard.server.state import ServerState


def state_of(request: Request) -> ServerState:
    """The app's :class:`ServerState`."""
    state: ServerState = request.app.state.scoreboard
    return state


async def get_state(request: Request) -> ServerState:
    """:func:`state_of` as a dependency. ``async`` because FastAPI runs a plain ``def`` dependency in
    a worker thread: a thread hop per request for an attribute lookup (bench/server_load.py)."""
    return state_of(request)


def get_session(state: ServerState = Depends(get_state)) -> Iterator[Session]:
    with state.db.read() as session:
        yield session
