"""``palaestra server export DEST``, ``import SRC``, ``verify [DEST|URL]`` and ``log-backfill``: a board
that outlives its server (:mod:`palaestra.scoreboard.server.archive`; ``docs/archive.md``).

:data:`ACTIONS` maps each action to its handler, ``handler(config, args) -> exit status``; a new way
to export (a static mirror) is one more flag read in :func:`export`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from palaestra.errors import ConfigurationError

__all__ = ["ACTIONS", "DEFAULTS", "add_arguments", "run"]


#: The namespace of every ``palaestra server`` action holds these (each action's parser sets its own).
DEFAULTS: dict[str, Any] = {"include_keys": False, "expect_head": None, "static": False, "no_progress": False}

_DESTINATION_HELP = {
    "export": "the export's folder (new, or an earlier export's, to update it; --static: a new or empty "
    "folder for the static mirror)",
    "import": "the export to load",
    "verify": "an export folder or a server's URL (none: this board)",
}


def add_arguments(parser: argparse.ArgumentParser, action: str) -> None:
    """The argument and flags of the archive action ``action`` (on ``palaestra server ACTION``)."""
    if action in _DESTINATION_HELP:
        metavar = {"import": "SRC", "verify": "DEST|URL"}.get(action, "DEST")
        parser.add_argument("destination", nargs="?", metavar=metavar, help=_DESTINATION_HELP[action])
    if action in ("export", "import"):
        parser.add_argument(
            "--include-keys",
            action="store_true",
            help="include the API keys (their hashes: the keys keep working on the imported board); "
            "without it an import leaves out the keys an export holds",
        )
        parser.add_argument(
            "--no-progress", action="store_true", help="no progress bars (default: on a terminal)"
        )
    if action == "verify":
        parser.add_argument(
            "--expect-head",
            metavar="SHA256",
            help="fail unless the log still holds this entry hash (the head of an earlier verify)",
        )
    if action == "export":
        parser.add_argument(
            "--static",
            nargs="?",
            const=True,
            default=False,
            metavar="DEST",
            # it takes the folder itself, so that `export --static DEST` parses (argparse will not fill an
            # optional positional after a flag) as well as `export DEST --static`
            help="the board as a static website (relative links: any static file host or file://) "
            "into a new or empty folder, instead of the archive format",
        )


def _progress(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def _folder(args: argparse.Namespace, action: str, what: str) -> Path:
    if not args.destination:
        raise ConfigurationError(f"palaestra server {action} needs {what}: palaestra server {action} FOLDER")
    return Path(args.destination)


def export(config: Any, args: argparse.Namespace) -> int:
    from palaestra.scoreboard.server.archive.export import export as export_board

    if isinstance(args.static, str):
        if args.destination:
            raise ConfigurationError(
                f"palaestra server export --static takes one folder, not {args.static!r} and {args.destination!r}"
            )
        args.destination = args.static
    destination = _folder(args, "export", "a folder to export into")
    if args.static:
        return _export_static(config, destination)
    report = export_board(config, destination, include_keys=args.include_keys, progress=_progress(args))
    print(report.summary() + ".")
    return 0


def _export_static(config: Any, destination: Path) -> int:
    from palaestra.scoreboard.server.archive.static import export_static

    report = export_static(config, destination)
    print(report.summary())
    return 0


def import_(config: Any, args: argparse.Namespace) -> int:
    from palaestra.scoreboard.server.archive.restore import import_board

    report = import_board(
        config,
        _folder(args, "import", "the folder of an export"),
        progress=_progress(args),
        include_keys=args.include_keys,
    )
    print(report.summary() + ".")
    return 0


def verify(config: Any, args: argparse.Namespace) -> int:
    from palaestra.scoreboard.server.archive.verify import open_source
    from palaestra.scoreboard.server.archive.verify import verify as verify_chain

    source, close = open_source(args.destination, config)
    try:
        report = verify_chain(source, expect_head=args.expect_head)
    finally:
        close()
    print(report.summary())
    return 1 if report.failure else 0


def log_backfill(config: Any, args: argparse.Namespace) -> int:
    from palaestra.scoreboard.server.core.state import open_database
    from palaestra.scoreboard.server.core.storage import open_store
    from palaestra.scoreboard.server.evaluations.scorelog import backfill

    db = open_database(config, migrate_now=True)
    try:
        added = backfill(db, open_store(config.storage_url, config.s3_endpoint_url))
    finally:
        db.dispose()
    print(f"Added {added} entries to the score log.")
    return 0


ACTIONS: dict[str, Callable[[Any, argparse.Namespace], int]] = {
    "export": export,
    "import": import_,
    "verify": verify,
    "log-backfill": log_backfill,
}


def run(config: Any, args: argparse.Namespace) -> int:
    """Run archive action ``args.action``; a database that cannot be reached is one line, not a traceback."""
    import sqlalchemy as sa

    try:
        return ACTIONS[args.action](config, args)
    except sa.exc.DBAPIError as exc:
        first = str(exc.orig or exc).strip().splitlines()[0]
        from palaestra.scoreboard.server.core.database import shown_url

        url = shown_url(config.database_url)
        raise ConfigurationError(
            f"palaestra server {args.action}: the database {url} failed ({first})"
        ) from None
