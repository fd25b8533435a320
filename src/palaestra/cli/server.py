"""``palaestra server [OPTIONS]`` (or ``palaestra server run``): run the scoreboard service; each other
action is a sub-command with its own options (``palaestra server ACTION --help``):
``palaestra server migrate``: only migrate;
``palaestra server gc``: remove what no evaluation needs (:mod:`palaestra.scoreboard.server.archive.gc`);
``palaestra server rotate-secret``: a new upload-signing secret; ``palaestra server backup DEST``;
``palaestra server rescore``: derive every stored evaluation and benchmark run again (:mod:`palaestra.scoreboard.server.evaluations.rescore`);
``export`` (and ``export --static``, the static mirror), ``import``, ``verify`` and ``log-backfill``: :mod:`palaestra.cli.server_archive`."""

from __future__ import annotations

import argparse
import contextlib
import socket
from collections.abc import Iterator
from typing import Any

from palaestra.cli import exits, server_archive
from palaestra.errors import ConfigurationError, Error, StartupError


def add_database_arguments(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    """The flags that pick the database and store (shared with ``palaestra users``).

    ``suppress``: leave the namespace alone when a flag is not given (for sub-subcommands, so that
    flags given before the action survive).
    """
    default: Any = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--data-dir",
        default=default,
        help="folder of the default SQLite database and blob store "
        "(env PALAESTRA_DATA_DIR; default: the user data dir)",
    )
    parser.add_argument(
        "--database-url",
        default=default,
        help="sqlite:///PATH or postgresql://USER@HOST:PORT/DB (env PALAESTRA_DATABASE_URL)",
    )
    parser.add_argument(
        "--storage",
        default=default,
        help="blob store: a folder, file:///PATH or s3://BUCKET/PREFIX (env PALAESTRA_STORAGE)",
    )
    parser.add_argument(
        "--s3-endpoint-url",
        default=default,
        help="S3-compatible endpoint (env PALAESTRA_S3_ENDPOINT_URL or AWS_ENDPOINT_URL)",
    )


def config_from_args(args: argparse.Namespace) -> Any:
    from palaestra.scoreboard.server.core.config import resolve_config

    flags = {
        "gc_interval": "gc_interval_s",
        "grace": "gc_grace_s",
        "idempotency_ttl": "idempotency_ttl_s",
        "unused_file_ttl": "unused_file_ttl_s",
        "embedded_workers": "embedded_workers",
    }
    extra = {name: getattr(args, flag) for flag, name in flags.items() if getattr(args, flag, None) is not None}
    if getattr(args, "read_only", None):
        extra["read_only"] = True
    return resolve_config(
        database_url=args.database_url,
        storage=args.storage,
        data_dir=args.data_dir,
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        public_url=getattr(args, "public_url", None),
        s3_endpoint_url=args.s3_endpoint_url,
        **extra,
    )


#: The actions of ``palaestra server ACTION``, each a sub-command with its own options and ``--help``;
#: ``palaestra server [OPTIONS]`` without one runs the server (``run``).
ACTION_HELP = {
    "run": "run the scoreboard (the default: `palaestra server [OPTIONS]` does the same)",
    "migrate": "apply the database migrations and exit",
    "gc": "remove orphaned blobs, temporary files, expired pending files and idempotency keys, and exit",
    "rotate-secret": "make a new upload-signing secret (forms already handed out stay valid)",
    "backup": "copy a running SQLite scoreboard (database, blobs, secret) into DEST",
    "rescore": "derive every stored evaluation and benchmark run again (after a scoring change)",
    "export": "write the whole board in the archive format into DEST (--static: as a static website)",
    "import": "load an export (SRC) into an empty board",
    "verify": "check the hash chain of scores (of this board, an export folder or a server's URL)",
    "log-backfill": "log what was scored before the log existed",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "server",
        help="run the scoreboard service (the 2017 /v1 API and web pages)",
        description="Run the scoreboard: SQLite and a blob folder under --data-dir by default; "
        "--database-url postgresql://... and --storage s3://bucket/prefix for the scale-out set-up. "
        "--read-only serves a frozen board: every read, no write. The actions below look after a board; "
        "`palaestra server ACTION --help` shows an action's own options.",
    )
    # `palaestra server [OPTIONS]`, with no action, runs the server: the run options are here too
    add_database_arguments(parser)
    _add_run_arguments(parser)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    for name, help_text in ACTION_HELP.items():
        action = actions.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        # suppressed defaults: flags given before the action (`server --data-dir D gc`) survive
        add_database_arguments(action, suppress=True)
        if name == "run":
            _add_run_arguments(action, suppress=True)
        if name == "gc":
            action.add_argument(
                "--read-only",
                action="store_true",
                default=argparse.SUPPRESS,
                help="the board is a read-only archive (env PALAESTRA_READ_ONLY=1): only --dry-run is allowed",
            )
            _add_gc_arguments(action, suppress=True)
            action.add_argument("--dry-run", action="store_true", help="report what would be removed, remove nothing")
            action.add_argument("--json", action="store_true", help="print the report as JSON")
        if name == "backup":
            action.add_argument(
                "destination",
                nargs="?",
                metavar="DEST",
                help="a new folder for the copy (a data folder: `palaestra server --data-dir DEST` serves it)",
            )
        if name in server_archive.ACTIONS:
            server_archive.add_arguments(action, name)
    parser.set_defaults(
        handler=run, destination=None, dry_run=False, json=False, **server_archive.DEFAULTS
    )


def _add_run_arguments(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    """The options of the running server (``suppress``: as for :func:`add_database_arguments`)."""

    def given(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument("--host", default=given(None), help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=given(None), help="port to listen on (default 8000)")
    parser.add_argument(
        "--public-url",
        default=given(None),
        help="URL clients reach this server at, used in upload URLs and "
        "web links (env PALAESTRA_PUBLIC_URL; default: the URL of each request)",
    )
    parser.add_argument(
        "--trust-proxy",
        action="store_true",
        default=given(None),
        help="behind a reverse proxy: believe its X-Forwarded-Proto (HTTPS makes sign-in cookies Secure) "
        "and X-Forwarded-For, from the addresses in FORWARDED_ALLOW_IPS (default 127.0.0.1) "
        "(env PALAESTRA_TRUST_PROXY=1)",
    )
    parser.add_argument("--workers", type=int, default=given(1), help="server processes (default 1)")
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        default=given(None),
        metavar="SECONDS",
        help="on SIGTERM or Ctrl-C, stop accepting and let requests in flight finish for at most this "
        "long, then exit with 143 (SIGTERM) or 130 (default 30)",
    )
    parser.add_argument(
        "--no-migrate", action="store_true", default=given(False), help="do not apply migrations on start"
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=given(None),
        help="serve the board as a read-only archive: every page, /v1 read and download as before, every "
        "write refused with 403 (env PALAESTRA_READ_ONLY=1)",
    )
    parser.add_argument(
        "--gc-interval",
        type=int,
        default=given(None),
        metavar="SECONDS",
        help="clean up every SECONDS while serving, 0 never (env PALAESTRA_GC_INTERVAL_S; default 3600)",
    )
    parser.add_argument(
        "--embedded-workers",
        type=int,
        default=given(None),
        metavar="N",
        help="agent-evaluation workers in the server's process, 0 none (run `palaestra worker` "
        "elsewhere) (env PALAESTRA_EMBEDDED_WORKERS; default 1)",
    )
    _add_gc_arguments(parser, suppress)  # the clean-up while serving follows them too


def _add_gc_arguments(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    """What the clean-up (``gc``, and the server's every ``--gc-interval``) leaves alone."""
    default: Any = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--grace",
        type=int,
        default=default,
        metavar="SECONDS",
        help="leave blobs and temporary files younger than this, and pending files that expired "
        "less long ago (env PALAESTRA_GC_GRACE_S; default 3600)",
    )
    parser.add_argument(
        "--idempotency-ttl",
        type=int,
        default=default,
        metavar="SECONDS",
        help="remove idempotency keys older than this (env PALAESTRA_IDEMPOTENCY_TTL_S; default 86400)",
    )
    parser.add_argument(
        "--unused-file-ttl",
        type=int,
        default=default,
        metavar="SECONDS",
        help="remove uploaded files no evaluation uses this long after their upload, and their blobs "
        "(env PALAESTRA_UNUSED_FILE_TTL_S; default 172800; 0: never)",
    )


def run(args: argparse.Namespace) -> int:
    import logging

    from palaestra.scoreboard.server.core.state import migrate_database

    private_files()
    config = config_from_args(args)
    log = logging.getLogger("palaestra")
    level = "warning" if args.quiet else "debug" if args.verbose else "info"
    args.action = args.action or "run"
    if args.action == "run":
        import logging.config

        from palaestra.scoreboard.server.core.logs import log_config

        # the server's log format (timestamps) from its first line on
        logging.config.dictConfig(log_config(level))
    if args.action == "migrate":
        with startup_errors(config):
            migrate_database(config)
        log.info("Database %s is at the newest schema.", _shown(config.database_url))
        return 0
    if args.action == "gc":
        if config.read_only and not args.dry_run:
            raise ConfigurationError(
                "This scoreboard is a read-only archive (--read-only or PALAESTRA_READ_ONLY=1): gc removes "
                "nothing from it; `gc --dry-run` reports what it would remove"
            )
        return collect_garbage(config, dry_run=args.dry_run, as_json=args.json)
    if args.action == "rotate-secret":
        return _rotate_secret(config)
    if args.action == "rescore":
        return rescore_board(config)
    if args.action == "backup":
        return _backup(config, args.destination)
    if args.action in server_archive.ACTIONS:
        return server_archive.run(config, args)
    from palaestra.scoreboard.server.app import serve

    if args.no_migrate:
        config = config.with_overrides(migrate_on_start=False)
    if args.graceful_timeout is not None:
        if not args.graceful_timeout >= 0:
            raise ConfigurationError(
                f"--graceful-timeout must be 0 or more seconds, not {args.graceful_timeout}"
            )
        config = config.with_overrides(graceful_timeout_s=args.graceful_timeout)
    if args.trust_proxy:
        config = config.with_overrides(trust_proxy=True)
    from palaestra.scoreboard.server.core.running import record_running

    check_can_start(config)
    log.info("palaestra scoreboard on http://%s:%s", _url_host(config.host), config.port)
    # recorded while it serves, so that `palaestra users` finds its data folder
    with record_running(config, local_url(config.host, config.port)):
        stopped_by = serve(config, workers=max(1, args.workers), log_level=level)
    if stopped_by is not None:
        exits.note_stop(stopped_by)
    exits.reraise_stop()  # uvicorn stopped gracefully on SIGTERM/Ctrl-C: exit 143/130, as documented
    return 0


def collect_garbage(config: Any, dry_run: bool, as_json: bool) -> int:
    """``palaestra server gc``: one clean-up of the database and store of ``config``, reported."""
    import json

    from palaestra.scoreboard.server.archive.gc import collect
    from palaestra.scoreboard.server.core.state import open_database
    from palaestra.scoreboard.server.core.storage import open_store

    with startup_errors(config):
        db = open_database(config, migrate_now=True)
        store = open_store(config.storage_url, config.s3_endpoint_url)
        store.check()
    try:
        report = collect(
            db,
            store,
            grace_s=config.gc_grace_s,
            idempotency_ttl_s=config.idempotency_ttl_s,
            unused_file_ttl_s=config.unused_file_ttl_s,
            dry_run=dry_run,
        )
    finally:
        db.dispose()
    print(json.dumps(report.document(), indent=2) if as_json else report.summary() + ".")
    return 0


def rescore_board(config: Any) -> int:
    """``palaestra server rescore``: every stored evaluation derived again from its episode batch, then
    every benchmark run scored from its evaluations' TaskScores; a report of what changed."""
    from palaestra.scoreboard.server.core.state import open_database
    from palaestra.scoreboard.server.core.storage import open_store
    from palaestra.scoreboard.server.evaluations.rescore import rescore

    if config.read_only:
        raise ConfigurationError(
            "This scoreboard is a read-only archive (--read-only or PALAESTRA_READ_ONLY=1): rescore would "
            "change its stored scores; rescore the board it was copied from"
        )
    with startup_errors(config):
        db = open_database(config, migrate_now=True)
        store = open_store(config.storage_url, config.s3_endpoint_url)
        store.check()
    try:
        report = rescore(db, store)
    finally:
        db.dispose()
    print(report.summary() + ".")
    return 0


def private_files() -> None:
    """Make what this process creates (the data folder, the database and its -wal/-shm, blobs, the
    upload secret) readable by this user only: 0700 folders, 0600 files."""
    import os

    os.umask(0o077)


def _backup(config: Any, destination: str | None) -> int:
    from pathlib import Path

    from palaestra.scoreboard.server.archive.backup import backup

    if not destination:
        raise ConfigurationError("palaestra server backup needs a folder to copy into: backup DEST")
    report = backup(config, Path(destination))
    print(
        f"Backed up the database ({report.database_bytes} bytes) and {report.blob_files} blobs "
        f"({report.blob_bytes} bytes) into {report.destination}; serve it with "
        f"`palaestra server --data-dir {report.destination}`."
    )
    return 0


def _rotate_secret(config: Any) -> int:
    from datetime import datetime, timezone

    from palaestra.scoreboard.server.core.signing import rotate
    from palaestra.scoreboard.server.core.state import open_database

    with startup_errors(config):
        db = open_database(config)
    try:
        path, until = rotate(config, db)
    finally:
        db.dispose()
    print(
        f"Rotated the upload-signing secret in {path}. Upload forms signed with the previous one stay "
        f"valid until {datetime.fromtimestamp(until, timezone.utc):%Y-%m-%d %H:%M:%S} UTC; running servers "
        "that read this file use the new one within a second. Servers on other hosts need this file "
        "too (copy it, or point their PALAESTRA_UPLOAD_SECRET_FILE at one shared file)."
    )
    return 0


def check_can_start(config: Any) -> None:
    """Open what the server needs, once, before it listens, so that a server that cannot start says
    why in one line (:class:`~palaestra.errors.StartupError`, exit code 3) instead of uvicorn's
    traceback: the port, the data folder, the database (migrated unless ``--no-migrate``) and the store."""
    from palaestra.scoreboard.server.core.state import build_state

    why = cannot_listen(config.host, config.port)
    if why:
        raise StartupError(
            f"The scoreboard cannot listen on {config.host}:{config.port} ({why}): stop what uses the port "
            "or pass --port with a free one"
        )
    with startup_errors(config):
        build_state(config).close()


@contextlib.contextmanager
def startup_errors(config: Any) -> Iterator[None]:
    """Turn the failures of opening the data folder, the database or the store into one line each."""
    import sqlalchemy as sa

    try:
        yield
    except OSError as exc:
        raise StartupError(
            f"The scoreboard cannot use its data folder {config.data_dir} ({exc.strerror or exc}): pass "
            "--data-dir (or PALAESTRA_DATA_DIR) with a folder this user can write"
        ) from None
    except sa.exc.DBAPIError as exc:
        first = str(exc.orig or exc).strip().splitlines()[0]
        raise StartupError(
            f"The scoreboard cannot reach its database {_shown(config.database_url)} ({first}): check "
            "--database-url (PALAESTRA_DATABASE_URL) and that the database server is running"
        ) from None
    except Error as exc:  # a database at another schema, an unreadable store, a bad URL
        raise StartupError(str(exc)) from None


def cannot_listen(host: str, port: int) -> str | None:
    """Why nothing can listen on ``host:port`` now (the system's reason), or ``None`` when it can."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def local_url(host: str, port: int) -> str:
    """The URL a client on this machine reaches a server listening on ``host:port`` at (a wildcard
    address is reached through loopback)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://{_url_host(shown)}:{port}"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _shown(url: str) -> str:
    from palaestra.scoreboard.server.core.database import shown_url

    return shown_url(url)
