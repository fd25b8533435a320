"""Request body limits, enforced before a body is read into memory.

- :data:`MAX_JSON_BODY_BYTES`: every ``/v1`` route that takes a JSON body (and any other route), but
  a match upload's and a live run's chunk (:data:`palaestra.scoreboard.protocol.live.MAX_CHUNK_BODY_BYTES`);
- the configured upload maximum (plus :data:`FORM_OVERHEAD_BYTES` of multipart framing) for the
  upload forms at ``/v1/uploads/{file_id}``, whose handler then holds each file to its own cap, and
  ``max_agent_bytes`` (plus the framing) for an agent's form at ``/v1/agents``.

:class:`BodyLimitMiddleware` answers 413 at once when the ``Content-Length`` says the body is too
large, and otherwise counts the bytes as the app receives them, stopping with a 413 the moment the
limit is passed (a chunked body, or one whose ``Content-Length`` lied), so a request never costs more
memory than its limit. Authentication runs before a JSON body is read at all
(:func:`palaestra.scoreboard.server.api.deps.json_body`). An answer sent before the body was read to
its end (a 413, a 401, a 404) closes the connection, so the client stops sending: uvicorn would
otherwise read and discard the rest on a kept-alive connection, however long it is.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palaestra.scoreboard.protocol import API_PREFIX
from palaestra.scoreboard.protocol.agents import AGENTS_PATH
from palaestra.scoreboard.protocol.ladder import LADDER_MATCHES_PATH, MAX_MATCH_BODY_BYTES
from palaestra.scoreboard.protocol.live import MAX_CHUNK_BODY_BYTES
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.problems import Problem, error_response

__all__ = ["FORM_OVERHEAD_BYTES", "MAX_JSON_BODY_BYTES", "BodyLimitMiddleware", "body_limit"]

#: The largest JSON body any route reads: the biggest request of the protocol (an evaluation with a
#: 10,000-character writeup, or tags) is a few tens of kilobytes.
MAX_JSON_BODY_BYTES = 256 * 1024
#: Room for the multipart framing and form fields around an upload's bytes.
FORM_OVERHEAD_BYTES = 64 * 1024

_UPLOADS = f"{API_PREFIX}/uploads/"
#: A match upload carries its game records in its JSON body (palaestra.scoreboard.protocol.ladder).
_LADDER_MATCHES = f"{API_PREFIX}{LADDER_MATCHES_PATH}"
_LIVE = f"{API_PREFIX}/live_evaluations/"
#: An agent upload is a form of its .onnx file and descriptor (palaestra.scoreboard.protocol.agents).
_AGENTS = f"{API_PREFIX}{AGENTS_PATH}"


def body_limit(config: ServerConfig, path: str) -> int:
    """The most bytes a request to ``path`` may send."""
    if path.startswith(_UPLOADS):
        return max(config.max_episode_batch_bytes, config.max_video_archive_bytes) + FORM_OVERHEAD_BYTES
    if path == _LADDER_MATCHES:
        return MAX_MATCH_BODY_BYTES
    if path == _AGENTS:
        return config.max_agent_bytes + FORM_OVERHEAD_BYTES
    if path.startswith(_LIVE) and path.endswith("/chunks"):  # a chunk of the protocol's most episodes
        return MAX_CHUNK_BODY_BYTES
    return MAX_JSON_BODY_BYTES


def too_large(limit: int, path: str) -> Problem:
    return Problem(413, f"The request body is larger than {path} accepts ({limit} bytes).")


class BodyLimitMiddleware:
    """Hold every request body to :func:`body_limit` of its path (413 beyond it)."""

    def __init__(self, app: ASGIApp, config: ServerConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        limit = body_limit(self.config, path)
        declared = _header(scope, b"content-length")
        length = int(declared) if declared is not None and declared.isdigit() else None
        if length is not None and length > limit:
            problem = too_large(limit, path)
            response = error_response(
                Request(scope), problem.status, problem.detail, problem.param, {"Connection": "close"}
            )
            await response(scope, receive, send)
            return
        received = 0
        body_read = length == 0 or (length is None and _header(scope, b"transfer-encoding") is None)

        async def counted() -> Message:
            nonlocal received, body_read
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise too_large(limit, path)  # answered by the app's Problem handler
                body_read = not message.get("more_body", False)
            return message

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start" and not body_read:
                message["headers"] = [*message.get("headers", []), (b"connection", b"close")]
            await send(message)

        await self.app(scope, counted, closing)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None
