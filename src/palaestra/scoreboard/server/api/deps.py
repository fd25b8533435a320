"""The API's dependencies as ``Annotated`` aliases, so that a route's signature says what it needs:

- :data:`State`: the app's :class:`~palaestra.scoreboard.server.core.state.ServerState`;
- :data:`CurrentUser`: the caller, authenticated by API key (401 otherwise; 429 after too many invalid keys);
- :func:`json_body`: a route's JSON body as its protocol model, read only once the caller is
  authenticated, within :data:`~palaestra.scoreboard.server.guards.body_limits.MAX_JSON_BODY_BYTES`, and parsed
  by :func:`palaestra.scoreboard.protocol.parse_json` (400 for malformed or too deep JSON);
- :data:`ListQuery`: a list endpoint's ``limit``/``starting_after`` and filters, also sent the 2017
  way (the raw JSON object as the query string).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, TypeVar
from urllib.parse import parse_qsl, unquote

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.accounts.auth import Principal, require_user
from palaestra.scoreboard.server.core.deps import get_state
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.problems import Problem

__all__ = [
    "CurrentUser",
    "ListQuery",
    "ListRequest",
    "State",
    "add_request_bodies",
    "json_body",
    "query_params",
]

State = Annotated[ServerState, Depends(get_state)]
CurrentUser = Annotated[Principal, Depends(require_user)]

_Model = TypeVar("_Model", bound=BaseModel)


def json_body(model: type[_Model]) -> Any:
    """The dependency of a route's JSON body, as ``model``: ``body: Annotated[Model, json_body(Model)]``.

    FastAPI reads and decodes a declared body before any dependency runs, so an anonymous client
    could make the server read and parse whatever it sends; this reads the body only after the caller
    is authenticated (:data:`CurrentUser`, which the route shares), at most
    :data:`~palaestra.scoreboard.server.guards.body_limits.MAX_JSON_BODY_BYTES` (413 beyond), and decodes it
    with :func:`palaestra.scoreboard.protocol.parse_json` (400 if it is malformed or too deep).
    """

    async def parse(request: Request, principal: CurrentUser) -> _Model:
        data = await request.body()
        try:
            doc = protocol.parse_json(data, "The request body") if data.strip() else None
        except protocol.JSONInputError as e:
            raise Problem(400, str(e)) from None
        if not isinstance(doc, dict):
            raise Problem(400, "The request body must be a JSON object.")
        try:
            return model.model_validate(doc)
        except ValidationError as e:
            raise RequestValidationError(e.errors(include_url=False)) from None

    parse.body_model = model  # type: ignore[attr-defined]  # for the OpenAPI document (add_request_bodies)
    return Depends(parse)


def add_request_bodies(document: dict[str, Any], routers: Iterable[APIRouter], prefix: str) -> dict[str, Any]:
    """Put the request body of each :func:`json_body` route of ``routers`` (served under ``prefix``)
    into the OpenAPI ``document``, with its model's schema among the components (FastAPI documents
    only the bodies it reads itself)."""
    from pydantic.json_schema import models_json_schema

    bodies: dict[tuple[str, str], type[BaseModel]] = {}
    for route in (r for router in routers for r in router.routes if isinstance(r, APIRoute)):
        for dependency in route.dependant.dependencies:
            model = getattr(dependency.call, "body_model", None)
            if model is not None:
                for method in route.methods or ():
                    bodies[(prefix + route.path, method.lower())] = model
    if not bodies:
        return document
    refs, schema = models_json_schema(
        [(m, "validation") for m in set(bodies.values())], ref_template="#/components/schemas/{model}"
    )
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in schema.get("$defs", {}).items():
        components.setdefault(name, definition)
    for (path, method), model in bodies.items():
        operation = document["paths"][path][method]
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": refs[(model, "validation")]}},
        }
    return document


def query_params(request: Request) -> dict[str, Any]:
    """GET parameters, also when sent the 2017 way: the raw JSON object as the query string."""
    raw = request.url.query
    if not raw:
        return {}
    text = unquote(raw) if raw[:3].upper() == "%7B" or raw.startswith("{") else raw
    if text.startswith("{"):
        try:
            doc = protocol.parse_json(text, "The JSON query string")
        except protocol.JSONInputError as e:
            raise Problem(
                400, f"{e} A query string is key=value pairs or a JSON object: {text[:100]!r}"
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
