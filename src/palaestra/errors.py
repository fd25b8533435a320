"""palaestra's exceptions.

Every error palaestra raises on purpose derives from :class:`Error`, which is Gymnasium's
``gymnasium.error.Error``, so ``except gymnasium.error.Error`` catches palaestra's errors too.
Messages name the thing that is wrong (the file, the id, the value) and, where one exists, the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium.error


class Error(gymnasium.error.Error):
    """Base class of every palaestra error."""


class MonitorError(Error):
    """Misuse of the Monitor: an occupied directory, a bad mode, a bad video schedule."""


class ResultsError(Error):
    """A training directory that cannot be loaded: missing, empty, unreadable or inconsistent."""


class DependencyNotInstalled(Error, gymnasium.error.DependencyNotInstalled):
    """An optional dependency or external binary (ffmpeg, gnugo, ale-py, ...) is missing."""


class RetiredEnv(Error):
    """A 2017 environment id that no maintained code can make any more; the message says why."""


class InvalidFrame(Error):
    """A rendered frame that the video encoder cannot take (wrong type, shape or dtype)."""


class UnregisteredBenchmark(Error):
    """No benchmark is registered under the requested id."""


class Unregistered(Error):
    """A lookup (an env id in a benchmark, ...) found nothing registered."""


class IllegalMove(Error):
    """A board-game move that the rules forbid (raised with ``illegal_move_mode='raise'``)."""


class EngineError(Error):
    """A game engine process (GTP) misbehaved: died, timed out or answered nonsense."""


class StartupError(Error):
    """A service could not start: its port is taken, its data folder or database cannot be used.
    The ``palaestra`` command exits with its own code for it (3, :mod:`palaestra.cli.exits`)."""


class ConfigurationError(Error):
    """Missing or invalid configuration: no API key, no server URL, a bad database URL."""


class APIError(Error):
    """An error answered by the scoreboard service (or no answer at all).

    Mirrors the 2017 client's ``APIError``: ``str()`` is ``"Request {request_id}: {message}"`` when
    the server sent a ``request-id`` header.
    """

    def __init__(
        self,
        message: str | None = None,
        http_body: str | bytes | None = None,
        http_status: int | None = None,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        if isinstance(http_body, bytes):
            http_body = http_body.decode("utf-8", errors="replace")
        self._message = message
        self.http_body = http_body
        self.http_status = http_status
        self.json_body = json_body
        self.headers = dict(headers or {})
        self.request_id = self.headers.get("request-id")

    def __str__(self) -> str:
        msg = self._message or "<empty message>"
        if self.request_id is not None:
            return f"Request {self.request_id}: {msg}"
        return msg


class APIConnectionError(APIError):
    """The scoreboard could not be reached (network error, refused connection, timeout)."""


class InvalidRequestError(APIError):
    """The server rejected the request as invalid (HTTP 400/404/409/413)."""

    def __init__(self, message: str | None, param: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.param = param


class AuthenticationError(APIError):
    """No API key, or the server answered 401."""


class RateLimitError(APIError):
    """The server answered 429."""


class StorageFullError(APIError):
    """The server answered 507: its storage is full. Not retried; nothing was stored."""


class RetriesExceededError(Error):
    """A request kept failing after every retry."""


class ResetNeeded(Error, gymnasium.error.ResetNeeded):
    """A monitored environment was stepped before ``reset()`` or after its episode ended."""


class EpisodesError(Error, ValueError):
    """Episode columns that do not describe one run: lengths that disagree, an unknown episode type."""
