"""The FastAPI application of the scoreboard, and running it under uvicorn.

``create_app(config)`` builds the app, assembled in one place: the error answers
(:mod:`.guards.errors`), the body limits (:mod:`.guards.body_limits`), the ``/v1`` API (:mod:`.api`) and the web pages (:mod:`.web`). The database is
opened (and migrated) when the app starts.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.concurrency import run_in_threadpool

from palaestra._version import __version__
from palaestra.scoreboard.protocol import API_PREFIX
from palaestra.scoreboard.server import api, web
from palaestra.scoreboard.server.agents.worker import EmbeddedWorkers
from palaestra.scoreboard.server.api.deps import add_request_bodies
from palaestra.scoreboard.server.archive.gc import PeriodicGc
from palaestra.scoreboard.server.core import logs
from palaestra.scoreboard.server.core.config import ServerConfig, resolve_config
from palaestra.scoreboard.server.core.database import shown_url
from palaestra.scoreboard.server.core.state import ServerState, build_state
from palaestra.scoreboard.server.evaluations.derive import warm_up
from palaestra.scoreboard.server.guards import errors
from palaestra.scoreboard.server.guards.body_limits import BodyLimitMiddleware
from palaestra.scoreboard.server.guards.read_limits import limit_anonymous_reads
from palaestra.scoreboard.server.guards.readonly import ReadOnlyMiddleware

logger = logging.getLogger("palaestra.scoreboard")


#: Worker threads per process for the synchronous handlers. Fewer threads fight less over the GIL:
#: with PostgreSQL handlers in threads, bench/server_load.py's evaluations had a p99 of 190-200 ms
#: with 16 and 120-145 ms with 8, at more evaluations a second.
THREADS = int(os.environ.get("PALAESTRA_SERVER_THREADS", "8"))
#: How long a thread runs before another waiting for the interpreter gets it (Python's default: 5 ms).
#: A page's handler lets go at each query; behind a thread storing a 4 MB ladder upload it waited the
#: whole interval to get back in, each time: a concurrent ``GET /`` took up to 100 ms instead of 8
#: (bench/ladder_upload_stall.py; with 1 ms, 35 ms at most, and uploads per second unchanged in
#: bench/server_load.py).
SWITCH_INTERVAL_S = 0.001


def create_app(
    config: ServerConfig | None = None, state: ServerState | None = None, *, own_process: bool = False
) -> FastAPI:
    """The scoreboard app for ``config`` (default: flags-free :func:`resolve_config`).

    With ``state`` given, that state is used as is (tests); otherwise the database and store are
    opened, and migrated, when the app starts. ``own_process``: the app is the process's only one
    (``palaestra server``): the interpreter switches threads sooner (:data:`SWITCH_INTERVAL_S`) and
    once the app is warm its heap is frozen (:func:`_warm_up`).
    """
    cfg = config or (state.config if state else resolve_config())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = state is None
        app.state.scoreboard = state or await run_in_threadpool(build_state, cfg)
        if own_process:
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        if THREADS:
            import anyio.to_thread

            anyio.to_thread.current_default_thread_limiter().total_tokens = THREADS
        # Build the env catalogue (it imports every env provider) while the first requests arrive.
        threading.Thread(target=_warm_up, args=(own_process,), name="palaestra-warm-up", daemon=True).start()
        scoreboard: ServerState = app.state.scoreboard
        cleaner = None
        if cfg.gc_interval_s > 0 and not cfg.read_only:
            cleaner = PeriodicGc(
                scoreboard.db,
                scoreboard.store,
                cfg.gc_interval_s,
                cfg.gc_grace_s,
                cfg.idempotency_ttl_s,
                cfg.unused_file_ttl_s,
            ).start()
        workers = None
        if cfg.embedded_workers > 0 and not cfg.read_only:  # agents the board evaluates (agents.worker)
            workers = EmbeddedWorkers(scoreboard, cfg.embedded_workers).start()
        logger.info(
            "palaestra scoreboard: database %s, storage %s", shown_url(cfg.database_url), cfg.storage_url
        )
        try:
            yield
        finally:
            if workers is not None:
                workers.stop()
            if cleaner is not None:
                cleaner.stop()
            if own:
                app.state.scoreboard.close()

    app = FastAPI(
        title="palaestra scoreboard",
        version=__version__,
        description="The 2017 OpenAI Gym scoreboard API (/v1), self-hosted.",
        lifespan=lifespan,
        dependencies=[Depends(limit_anonymous_reads)],  # every route, the API's and the pages'
    )
    app.add_middleware(BodyLimitMiddleware, config=cfg)  # inside the request-id middleware (install)
    if cfg.read_only:
        app.add_middleware(ReadOnlyMiddleware)  # before the body limits: a refused write is not read
    errors.install(app)
    api.include(app)
    web.include(app)
    _document_request_bodies(app)
    return app


def _document_request_bodies(app: FastAPI) -> None:
    """``/openapi.json`` with the request bodies of the routes that read theirs after authentication
    (:func:`palaestra.scoreboard.server.api.deps.json_body`)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = add_request_bodies(generate(), api.ROUTERS, API_PREFIX)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]




#: Keep idle client connections this long (uvicorn's 5 s default makes clients that pause between
#: requests race the server's close and see "connection reset").
KEEP_ALIVE_S = 75


def serve(
    config: ServerConfig, workers: int = 1, log_level: str = "info", **uvicorn_options: Any
) -> int | None:
    """Run the service in the foreground under uvicorn (``palaestra server``) until SIGTERM or SIGINT.

    With ``workers > 1`` returns the signal taken to have stopped the workers' supervisor; a single
    process re-raises its signal to the handler that was there before (uvicorn does that itself).
    """
    import uvicorn

    uvicorn_options.setdefault("timeout_keep_alive", KEEP_ALIVE_S)
    # On SIGTERM/SIGINT uvicorn stops accepting, lets requests in flight finish for this long, then
    # cancels what is left: a client holding a half-sent request cannot keep the server up.
    uvicorn_options.setdefault("timeout_graceful_shutdown", config.graceful_timeout_s)
    # One log format for uvicorn's lines and palaestra's (in every worker process), and one access
    # line per request with its request id, written by guards.errors.RequestMiddleware instead of uvicorn.
    uvicorn_options.setdefault("log_config", logs.log_config(log_level))
    uvicorn_options.setdefault("access_log", False)
    # uvicorn believes X-Forwarded-* from 127.0.0.1 unless told not to; only a configured proxy's count
    uvicorn_options.setdefault("proxy_headers", config.trust_proxy)

    if workers > 1:
        # Each worker process builds its own app from the environment; migrate once first (never a
        # read-only archive: it is served as it is).
        from palaestra.scoreboard.server.core.state import migrate_database

        if not config.read_only:
            migrate_database(config)
        os.environ.update(_config_environ(config))
        uvicorn.run(
            "palaestra.scoreboard.server.app:app_from_environment",
            factory=True,
            host=config.host,
            port=config.port,
            workers=workers,
            log_level=log_level,
            **uvicorn_options,
        )
        # uvicorn's supervisor returns only once SIGTERM or SIGINT stopped it (and, gracefully, its
        # workers), and does not say which: process managers send SIGTERM.
        return signal.SIGTERM
    uvicorn.run(
        create_app(config, own_process=True), host=config.host, port=config.port, log_level=log_level, **uvicorn_options
    )
    return None


def _warm_up(freeze_heap: bool) -> None:
    """Build the env catalogue; then, in a process of its own, move what start-up built (modules,
    templates, the catalogue: most of the heap) out of the garbage collector's sight. Every full
    collection walked all of it: a 50-90 ms pause in one request of every fifty or so to ``GET /``,
    which a frozen heap takes away (bench/ladder_upload_stall.py's quiet figures)."""
    warm_up()
    if freeze_heap:
        gc.collect()
        gc.freeze()


def _config_environ(config: ServerConfig) -> dict[str, str]:
    env = {
        "PALAESTRA_DATABASE_URL": config.database_url,
        "PALAESTRA_STORAGE": config.storage_url,
        "PALAESTRA_DATA_DIR": str(config.data_dir),
    }
    if config.public_url:
        env["PALAESTRA_PUBLIC_URL"] = config.public_url
    if config.s3_endpoint_url:
        env["PALAESTRA_S3_ENDPOINT_URL"] = config.s3_endpoint_url
    if config.trust_proxy:
        env["PALAESTRA_TRUST_PROXY"] = "1"
    if config.read_only:
        env["PALAESTRA_READ_ONLY"] = "1"
    env["PALAESTRA_SESSION_TTL_S"] = str(config.session_ttl_s)
    env["PALAESTRA_INVITE_TTL_S"] = str(config.invite_ttl_s)
    env["PALAESTRA_GC_INTERVAL_S"] = str(config.gc_interval_s)
    env["PALAESTRA_UNUSED_FILE_TTL_S"] = str(config.unused_file_ttl_s)
    env["PALAESTRA_EMBEDDED_WORKERS"] = str(config.embedded_workers)  # --embedded-workers, in each process
    if config.upload_secret_file:
        env["PALAESTRA_UPLOAD_SECRET_FILE"] = str(config.upload_secret_file)
    return env


def app_from_environment() -> FastAPI:
    """App factory for uvicorn workers: configuration from ``PALAESTRA_*`` variables."""
    return create_app(resolve_config(), own_process=True)
