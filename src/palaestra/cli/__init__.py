"""The ``palaestra`` command.

One entry point; each subcommand lives in its own module under ``palaestra.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` (a function taking the parsed
``argparse.Namespace`` and returning an exit code). Handlers import what they need when they run, so
``palaestra --help`` stays fast.

Exit codes: 0 success, 1 failure (a palaestra error, printed as one line), 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from palaestra._version import __version__
from palaestra.errors import Error

# Subcommand modules, in the order ``--help`` lists them; a module that is not there yet is skipped.
COMMAND_MODULES = (
    "envs",
    "run",
    "results",
    "server",
    "users",
    "login",
    "upload",
    "import_",
    "benchmark",
    "demo",
)

logger = logging.getLogger("palaestra")


def add_progress_arguments(parser: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress`` (``args.progress``: True, False, or None for "on a terminal")."""
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", dest="progress", action="store_true", default=None, help="always show the progress bar"
    )
    progress.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        help="never show the progress bar (default: only on a terminal)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="palaestra",
        description="Record, score, upload and compare reinforcement-learning runs (the 2017 Gym system, today).",
    )
    parser.add_argument("--version", action="version", version=f"palaestra {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("-q", "--quiet", action="store_true", help="log only warnings and errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"palaestra.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"palaestra.cli.{name}":
                continue
            raise
        module.register(subparsers)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (tests swap it), one line a message."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def _configure_logging(verbose: bool, quiet: bool) -> None:
    # The command line is an application, so it may give palaestra's logger a handler; the library never
    # does. Installed once per process, however often main() runs.
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        logger.addHandler(_StderrHandler())
    logger.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    logger.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    _configure_logging(args.verbose, args.quiet)
    # `--agent mymodule:factory` (run, benchmark run) finds mymodule.py in the current directory, as
    # `python -m` would; appended, so that a file there never shadows an installed module.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        code: int = args.handler(args)
    except Error as e:
        # One line, whatever the message's layout: scripts read the last line of stderr.
        print(f"palaestra {args.command}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"palaestra {args.command}: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
