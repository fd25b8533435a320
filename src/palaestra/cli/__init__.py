"""The ``palaestra`` command.

One entry point; each subcommand lives in its own module under ``palaestra.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` (a function taking the parsed
``argparse.Namespace`` and returning an exit code). Handlers import what they need when they run, so
``palaestra --help`` stays fast.

Exit codes (:mod:`palaestra.cli.exits`): 0 success, 1 failure, 2 usage error, 3 could not start, 130
interrupted, 141 stdout closed, 143 terminated. A failure is one line on stderr, never a traceback,
unless ``--debug`` is given.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shlex
import shutil
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from palaestra._version import __version__
from palaestra.cli import exits
from palaestra.errors import Error, StartupError
from palaestra.extras import missing_extra_message

# Subcommand modules, in the order ``--help`` lists them; a module that is not there yet is skipped.
COMMAND_MODULES = (
    "envs",
    "run",
    "results",
    "server",
    "users",
    "login",
    "upload",
    "agent",
    "worker",
    "import_",
    "export",
    "benchmark",
    "match",
    "anchors",
    "ratings",
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


def runnable_command() -> tuple[str, str | None]:
    """How the user types the ``palaestra`` command that is running, in a line they can paste, and the
    line that puts it on PATH where it is not there (``None`` when it is).

    ``palaestra`` where PATH finds this very program; else its path (relative to the current folder
    when it is inside it: ``.venv/bin/palaestra`` after ``make demo``) with ``source .../activate``;
    ``python -m palaestra`` where there is no script (issue 36: the demo's last line said
    ``palaestra server`` where no ``palaestra`` was on PATH).
    """
    bin_dir = os.path.dirname(sys.executable)  # the venv's bin, not the interpreter it links to
    script = os.path.join(bin_dir, "palaestra")
    if not os.path.isfile(script):
        return f"{shlex.quote(sys.executable)} -m palaestra", None
    found = shutil.which("palaestra")
    if found and os.path.samefile(found, script):
        return "palaestra", None

    def shown(path: str) -> str:
        relative = os.path.relpath(path)
        return shlex.quote(relative if not relative.startswith("..") else os.path.abspath(path))

    activate = os.path.join(bin_dir, "activate")
    return shown(script), (f"source {shown(activate)}" if os.path.isfile(activate) else None)


class CommandParser(argparse.ArgumentParser):
    """The parser of ``palaestra`` and (by argparse's inheritance) of every subcommand.

    * An unknown option is reported by the subcommand that got it, with that subcommand's usage
      (argparse leaves them to the top-level parser, whose usage does not help).
    * ``--debug`` is accepted after any subcommand too, where users type it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        top_level = " " not in self.prog  # "palaestra", not "palaestra run"
        self.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,  # a subcommand's default must not undo `palaestra --debug CMD`
            help="on a failure, print the traceback (and log debug messages)" if top_level else argparse.SUPPRESS,
        )

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
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
        parser.print_help(sys.stderr)
        return exits.USAGE
    debug = getattr(args, "debug", False)
    _configure_logging(args.verbose or debug, args.quiet)
    # `--agent mymodule:factory` (run, benchmark run) finds mymodule.py in the current directory, as
    # `python -m` would; appended, so that a file there never shadows an installed module.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    exits.stop_on_sigterm()
    try:
        code: int = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the try, not at interpreter exit
    except KeyboardInterrupt:
        code = exits.interrupted_code()
        print(f"palaestra {args.command}: {exits.interruption()}", file=sys.stderr)
    except BrokenPipeError:
        # The reader went away (`palaestra envs | head`): stop writing, quietly, as `cat` would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = exits.BROKEN_PIPE
    except Exception as exc:
        if debug:
            traceback.print_exc()
        code = exits.COULD_NOT_START if isinstance(exc, StartupError) else exits.FAILURE
        print(f"palaestra {args.command}: error: {error_line(exc, debug)}", file=sys.stderr)
    return code


def error_line(exc: BaseException, debug: bool = False) -> str:
    """One line for a failure: palaestra's errors as they are, the extra to install for a missing
    module, anything else with its type and a pointer to ``--debug``."""
    if isinstance(exc, Error):
        message = str(exc)
    elif isinstance(exc, ModuleNotFoundError) and missing_extra_message(exc):
        message = str(missing_extra_message(exc))
    else:
        message = f"{type(exc).__name__}: {exc}"
        if not debug:
            message += " (run with --debug for the traceback)"
    # One line, whatever the message's layout: scripts read the last line of stderr.
    return " ".join(message.split())


if __name__ == "__main__":
    sys.exit(main())
