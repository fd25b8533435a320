"""``palaestra login [--server URL] [--api-key KEY]``: save the scoreboard server and API key.

The key is read from standard input (a hidden prompt on a terminal) unless ``--api-key`` is given,
checked against the server, and saved with the server URL in the user's config directory with mode
0600. ``palaestra upload`` and ``palaestra.upload`` use them when no argument or environment variable
names others.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from palaestra.errors import ConfigurationError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "login",
        help="save the scoreboard server and your API key for 'palaestra upload'",
        description="Save the scoreboard server URL and your API key (mode 0600, in your config directory). "
        "The key is read from standard input, with a hidden prompt on a terminal, unless --api-key is given.",
    )
    parser.add_argument(
        "--server", metavar="URL", help="scoreboard base URL (default: the one configured now)"
    )
    parser.add_argument("--api-key", metavar="KEY", help="the API key (default: read from standard input)")
    parser.add_argument("--no-verify", action="store_true", help="save without asking the server")
    parser.set_defaults(handler=_login)


def _read_key() -> str:
    key = getpass.getpass("API key: ") if sys.stdin.isatty() else sys.stdin.readline()
    if not key.strip():
        raise ConfigurationError(
            "No API key given: pass --api-key KEY or type it at the prompt (pipe it on standard input in "
            "scripts). An administrator creates keys with 'palaestra users create NAME'."
        )
    return key.strip()


def _login(args: argparse.Namespace) -> int:
    from palaestra.scoreboard.client import ScoreboardClient, resolve_server, write_config

    server = resolve_server(args.server)
    key = args.api_key or _read_key()
    if not args.no_verify:
        with ScoreboardClient(server, key) as client:
            client.verify_api_key()
    path = write_config(server=server, api_key=key)
    print(f"Saved the server {server} and your API key to {path} (readable by you only).")
    return 0
