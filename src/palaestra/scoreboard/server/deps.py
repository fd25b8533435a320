"""FastAPI dependencies shared by the API routes and the web pages.

``get_state(request)`` is the :class:`~palaestra.scoreboard.server.state.ServerState` of the app;
``get_session()`` yields a read-only SQLAlchemy session (closed after the request).
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from palaestra.scoreboard.server.state import ServerState


def get_state(request: Request) -> ServerState:
    state: ServerState = request.app.state.scoreboard
    return state


def get_session(state: ServerState = Depends(get_state)) -> Iterator[Session]:
    with state.db.read() as session:
        yield session
