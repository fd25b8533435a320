"""What every resource of the API uses: the public base URL, list filters and Stripe-style list pages
(answers are :func:`palaestra.scoreboard.server.core.answers.answer`, "not found" is
:func:`palaestra.scoreboard.server.problems.not_found`: the services below make them too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from fastapi import Request
from pydantic import BaseModel
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.api.deps import ListRequest
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.problems import not_found

__all__ = ["base_url", "filtered", "page"]

T = TypeVar("T", bound=BaseModel)


def base_url(state: ServerState, request: Request) -> str:
    """The URL the links in answers start with (``--public-url``, else the request's own)."""
    return state.config.base_url(str(request.base_url))


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
