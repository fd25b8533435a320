"""The scoreboard served from a background thread of this process: ``palaestra demo`` and the tests.

:class:`EmbeddedScoreboard` runs the app under uvicorn in a daemon thread and waits until
``/v1/health`` answers; ``palaestra server`` is the way to run it for others.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from palaestra.errors import StartupError
from palaestra.scoreboard.server.app import KEEP_ALIVE_S, create_app
from palaestra.scoreboard.server.core.config import ServerConfig

__all__ = ["STARTUP_TIMEOUT_S", "EmbeddedScoreboard", "ScoreboardStartError"]

STARTUP_TIMEOUT_S = 60.0


class ScoreboardStartError(StartupError):
    """The embedded scoreboard could not start (the port is taken, the database cannot be opened...);
    the ``palaestra`` command exits with its "could not start" code."""


class EmbeddedScoreboard:
    """The scoreboard app under uvicorn in a background thread of this process (``app``: one
    already built, e.g. on a state of the caller's; by default ``create_app(config)``)."""

    def __init__(self, config: ServerConfig, app: FastAPI | None = None) -> None:
        self.config = config
        self.url = f"http://{_url_host(config.host)}:{config.port}"
        uv_config = uvicorn.Config(
            app or create_app(config),
            host=config.host,
            port=config.port,
            log_level="warning",
            timeout_keep_alive=KEEP_ALIVE_S,
            proxy_headers=config.trust_proxy,
        )
        self.server = uvicorn.Server(uv_config)
        self.thread = threading.Thread(target=self._serve, name="palaestra-embedded-server", daemon=True)
        self._error: BaseException | None = None

    def _serve(self) -> None:
        try:
            self.server.run()
        except BaseException as exc:  # SystemExit when the port cannot be bound, or anything else
            self._error = exc

    def start(self) -> EmbeddedScoreboard:
        """Start serving; returns once ``/v1/health`` answers 200 (:class:`ScoreboardStartError` if not)."""
        self.thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if not self.thread.is_alive():
                raise ScoreboardStartError(
                    f"The scoreboard could not start on {self.url} ({self._error!r}); try another --port"
                )
            if self.server.started:
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    health = httpx.get(f"{self.url}/v1/health", timeout=5)
                    if health.status_code == 200:
                        return self
                    if health.status_code == 503:  # it runs, but cannot store (a full disk): say why
                        self.stop()
                        raise ScoreboardStartError(f"The scoreboard on {self.url} cannot serve: {health.json()['detail']}")
            time.sleep(0.05)
        self.stop()
        raise ScoreboardStartError(
            f"The scoreboard did not answer on {self.url} within {STARTUP_TIMEOUT_S:.0f} s"
        )

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def wait(self) -> None:
        """Serve until the server stops (Ctrl-C raises KeyboardInterrupt here)."""
        while self.thread.is_alive():
            self.thread.join(0.5)

    def __enter__(self) -> EmbeddedScoreboard:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
