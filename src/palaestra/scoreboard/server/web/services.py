"""What every page module needs: the server's database and blob store (the app's ``ServerState``), an
evaluation's record by id, the ``?page=`` number and the 404 page."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse

from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.core.deps import state_of
from palaestra.scoreboard.server.core.storage import BlobStore
from palaestra.scoreboard.server.evaluations.records import (
    EvaluationRecord,
    evaluation_record,
    evaluation_select,
)
from palaestra.scoreboard.server.web.render import render


def database(request: Request) -> Database:
    return state_of(request).db


def blob_store(request: Request) -> BlobStore:
    return state_of(request).store


def evaluation_of(request: Request, evaluation_id: str) -> EvaluationRecord | None:
    """The evaluation's record (the one the API answers with), or None."""
    from palaestra.scoreboard.server.tables.scores import Evaluation

    with database(request).read() as session:
        row = session.execute(evaluation_select().where(Evaluation.id == evaluation_id)).first()
    return evaluation_record(row) if row is not None else None


def page_number(value: str) -> int:
    """A ``?page=`` value as a page number; anything that is not a positive number is page 1."""
    try:
        return max(1, int(value))
    except ValueError:
        return 1


def not_found(request: Request, what: str) -> HTMLResponse:
    return render(request, "error.html", status_code=404, title="Not found", message=what)
