"""Request body limits, enforced before a body is read into memory.

- :data:`MAX_JSON_BODY_BYTES`: every ``/v1`` route that takes a JSON body (and any other route);
- the configured upload maximum (plus :data:`FORM_OVERHEAD_BYTES` of multipart framing) for the
  upload forms at ``/v1/uploads/{file_id}``, whose handler then holds each file to its own cap.

:class:`BodyLimitMiddleware` answers 413 at once when the ``Content-Length`` says the body is too
large, and otherwise counts the bytes as the app receives them, stopping with a 413 the moment the
limit is passed (a chunked body, or one whose ``Content-Length`` lied), so a request never costs more
memory than its limit. Authentication runs before a JSON body is read at all
(:func:`palaestra.scoreboard.server.api.deps.json_body`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palaestra.scoreboard.protocol import API_PREFIX
from palaestra.scoreboard.server.config import ServerConfig
from palaestra.scoreboard.server.problems import Problem, error_response

__all__ = ["FORM_OVERHEAD_BYTES", "MAX_JSON_BODY_BYTES", "BodyLimitMiddleware", "body_limit"]

#: The largest JSON body any route reads: the biggest request of the protocol (an evaluation with a
#: 10,000-character writeup, or tags) is a few tens of kilobytes.
MAX_JSON_BODY_BYTES = 256 * 1024
#: Room for the multipart framing and form fields around an upload's bytes.
FORM_OVERHEAD_BYTES = 64 * 1024

_UPLOADS = f"{API_PREFIX}/uploads/"


def body_limit(config: ServerConfig, path: str) -> int:
    """The most bytes a request to ``path`` may send."""
    if path.startswith(_UPLOADS):
        return max(config.max_episode_batch_bytes, config.max_video_archive_bytes) + FORM_OVERHEAD_BYTES
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
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            # Answered without reading the body; the server closes the connection afterwards.
            problem = too_large(limit, path)
            response = error_response(Request(scope), problem.status, problem.detail, problem.param)
            await response(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise too_large(limit, path)  # answered by the app's Problem handler
            return message

        await self.app(scope, counted, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None
