"""What every resource of the API uses: answers built from protocol models, the public base URL,
"not found", and Stripe-style list pages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from fastapi import Request, Response
from pydantic import BaseModel
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol import NO_PARAM
from palaestra.scoreboard.server.api.deps import ListRequest
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.problems import Problem

__all__ = ["answer", "base_url", "filtered", "not_found", "page"]

JSON = "application/json"
T = TypeVar("T", bound=BaseModel)


def answer(model: BaseModel, status: int = 200) -> Response:
    """``model`` as the JSON answer: every ``/v1`` answer is its protocol model, serialised once (by
    pydantic-core, without FastAPI validating it a second time against the route's response model)."""
    return Response(model.model_dump_json(), status_code=status, media_type=JSON)


def base_url(state: ServerState, request: Request) -> str:
    """The URL the links in answers start with (``--public-url``, else the request's own)."""
    return state.config.base_url(str(request.base_url))


def not_found(kind: str, object_id: str, param: str = NO_PARAM) -> Problem:
    return Problem(404, f"No such {kind}: {object_id!r}.", param)


def filtered(query: Any, filters: dict[str, Any], columns: dict[str, Any]) -> Any:
    """``query`` narrowed to the list filters (``name -> value``) that ``columns`` knows."""
    for name, column in columns.items():
        if filters.get(name):
            query = query.where(column == str(filters[name]))
    return query


def page(
    session: Session,
    model: Any,
    query: Any,
    asked: ListRequest,
    url: str,
    render: Callable[[Any], T],
    item: type[T],
) -> protocol.ListPage[T]:
    """One page of ``query`` (rows of ``model``, newest first), each row rendered by ``render`` as an
    ``item``."""
    params = asked.params
    if params.starting_after:
        seq = session.scalar(sa.select(model.seq).where(model.id == params.starting_after))
        if seq is None:
            raise not_found("object", params.starting_after, "starting_after")
        query = query.where(model.seq < seq)
    rows = session.execute(query.order_by(model.seq.desc()).limit(params.limit + 1)).all()
    data = [render(r) for r in rows[: params.limit]]
    return protocol.ListPage[item](url=url, data=data, has_more=len(rows) > params.limit)  # type: ignore[valid-type]
