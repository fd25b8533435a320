"""``GET /v1/health``: liveness, for load balancers and ``palaestra demo``."""

from __future__ import annotations

import sqlalchemy as sa
from fastapi import APIRouter, Response

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server import migrate
from palaestra.scoreboard.server.api.common import answer
from palaestra.scoreboard.server.api.deps import State

__all__ = ["router"]

router = APIRouter(tags=["service"])


@router.get("/health", response_model=protocol.HealthObject)
def health(state: State) -> Response:
    """Answers when the database is reachable."""
    with state.db.read() as session:
        session.execute(sa.text("SELECT 1"))
    return answer(protocol.HealthObject(schema_revision=migrate.SCHEMA_HEAD))
