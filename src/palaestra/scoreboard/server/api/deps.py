"""The API's dependencies as ``Annotated`` aliases, so that a route's signature says what it needs:

- :data:`State`: the app's :class:`~palaestra.scoreboard.server.state.ServerState`;
- :data:`CurrentUser`: the caller, authenticated by API key (401 otherwise; 429 after too many invalid keys);
- :data:`ListQuery`: a list endpoint's ``limit``/``starting_after`` and filters, also sent the 2017
  way (the raw JSON object as the query string).
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import parse_qsl, unquote

from fastapi import Depends, Request

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.auth import Principal, require_user
from palaestra.scoreboard.server.deps import get_state
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.state import ServerState

__all__ = ["CurrentUser", "ListQuery", "ListRequest", "State", "query_params"]

State = Annotated[ServerState, Depends(get_state)]
CurrentUser = Annotated[Principal, Depends(require_user)]


def query_params(request: Request) -> dict[str, Any]:
    """GET parameters, also when sent the 2017 way: the raw JSON object as the query string."""
    raw = request.url.query
    if not raw:
        return {}
    text = unquote(raw) if raw[:3].upper() == "%7B" or raw.startswith("{") else raw
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            raise Problem(
                400, f"The query string is neither key=value pairs nor a JSON object: {text[:100]!r}"
            ) from None
        if not isinstance(doc, dict):
            raise Problem(400, "A JSON query string must be an object.")
        return doc
    return dict(parse_qsl(raw, keep_blank_values=True))


class ListRequest:
    """What a list endpoint was asked: the page (``params``) and the other parameters (``filters``)."""

    def __init__(self, params: protocol.ListParams, filters: dict[str, Any]) -> None:
        self.params = params
        self.filters = filters


async def list_request(request: Request) -> ListRequest:
    # async: parsing a query string is no reason for a hop to a worker thread
    params = query_params(request)
    try:
        parsed = protocol.ListParams.model_validate(params)
    except Exception as e:
        raise Problem(400, f"Invalid list parameters: {e}", "limit") from None
    filters = {k: v for k, v in params.items() if k not in ("limit", "starting_after")}
    return ListRequest(parsed, filters)


ListQuery = Annotated[ListRequest, Depends(list_request)]
