"""``palaestra users create NAME [--password | --password-stdin] [--invite] | list | revoke NAME|KEY_ID``:
the scoreboard's users, their passwords and API keys.

Works directly on the database chosen by the same flags and variables as ``palaestra server``;
without them, on the data folder of the one ``palaestra server`` running on this machine
(:mod:`palaestra.scoreboard.server.core.running`), else the default one. It says on stderr which
database it used.
``create`` prints the new API key on its last line (it is stored hashed and never shown again).
A password lets the user sign in to the web pages (``/settings/profile``: their keys): the admin
types it at a hidden prompt (``--password``) or pipes it (``--password-stdin``), never on the command
line where ``ps`` and shell history would keep it; or ``--invite`` prints a one-time link with which
the user sets it.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import Any

from palaestra.cli.server import add_database_arguments, config_from_args, private_files
from palaestra.errors import ConfigurationError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "users",
        help="create, list and revoke scoreboard users' API keys",
        description="Manage the scoreboard's users and API keys (directly in its database).",
    )
    add_database_arguments(parser)
    sub = parser.add_subparsers(dest="users_command", metavar="ACTION", required=True)
    create = sub.add_parser(
        "create",
        help="create a user (or a new key for one); prints the key last",
        description="Create a user (or a new key for one) and print the key on the last line. With a "
        "password (or an invite link, with which the user sets one) the user also signs in to the web "
        "pages, where /settings/profile lists, creates and revokes their keys. Given again for an "
        "existing user, --password sets a new password.",
    )
    create.add_argument("name")
    password = create.add_mutually_exclusive_group()
    password.add_argument(
        "--password", action="store_true", help="set the user's password, typed twice at a hidden prompt"
    )
    password.add_argument(
        "--password-stdin", action="store_true", help="set the user's password, read from standard input"
    )
    create.add_argument(
        "--invite",
        action="store_true",
        help="print a one-time link (valid PALAESTRA_INVITE_TTL_S, 7 days by default) with which the "
        "user sets their password",
    )
    create.add_argument(
        "--operator",
        action="store_true",
        help="make the user an operator: its keys may upload games of the ladders' anchor players "
        "(gnugo:10, random, ...), which other users' uploads may not name",
    )
    create.add_argument(
        "--public-url",
        help="the server's address in the invite link (env PALAESTRA_PUBLIC_URL; default "
        "http://127.0.0.1:8000)",
    )
    listing = sub.add_parser("list", help="list users and their keys (ids and prefixes, never the keys)")
    listing.add_argument("--json", action="store_true", help="print the keys as JSON, for scripts")
    revoke = sub.add_parser("revoke", help="revoke a key (key_... id or the key) or all keys of a user")
    revoke.add_argument("target", metavar="NAME|KEY_ID")
    for p in (create, revoke, listing):
        add_database_arguments(p, suppress=True)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from palaestra.errors import Error
    from palaestra.scoreboard.server.accounts import auth
    from palaestra.scoreboard.server.accounts import sessions as accounts
    from palaestra.scoreboard.server.core.state import open_database

    private_files()
    config = _users_config(args)
    if config.read_only and args.users_command != "list":
        raise ConfigurationError(
            f"This scoreboard is a read-only archive (PALAESTRA_READ_ONLY=1): `users {args.users_command}` "
            "would change it; unset PALAESTRA_READ_ONLY to change its users"
        )
    config.data_dir.mkdir(parents=True, exist_ok=True)
    db = open_database(config, migrate_now=not config.read_only)
    try:
        if args.users_command == "create":
            password = _read_password(args) if args.password or args.password_stdin else None
            key_id, key = auth.create_user(db, args.name, operator=args.operator)
            if password is not None:
                accounts.set_password(db, args.name.strip(), password)
                print(f"Set the password of {args.name}: sign in at {_base_url(config)}/login.")
            if args.invite:
                token = accounts.create_invite(db, args.name.strip(), config.invite_ttl_s)
                days = config.invite_ttl_s / 86400
                print(f"Invite link for {args.name} (works once, for {days:g} days; the user sets a password there):")
                print(f"  {_base_url(config)}/invite/{token}")
            if args.operator:
                print(f"{args.name} is an operator: its keys may upload the ladders' anchor games.")
            print(f"Created API key {key_id} for user {args.name}. Keep it secret; it is not shown again.")
            print("Use it with: export PALAESTRA_API_KEY=... (or OPENAI_GYM_API_KEY for gym.upload)")
            print(key)
            return 0
        if args.users_command == "list":
            keys = auth.list_keys(db)
            if args.json:
                print(json.dumps([_key_document(k) for k in keys], indent=2))
                return 0
            if not keys:
                print("No users yet: `palaestra users create NAME`.")
            for k in keys:
                state = f"revoked {k.revoked:%Y-%m-%d %H:%M}" if k.revoked else "active"
                signs_in = "password" if k.password_set else "no password"
                print(
                    f"{k.user}\t{k.key_id}\t{k.prefix}...\tcreated {k.created:%Y-%m-%d %H:%M}\t{state}\t{signs_in}"
                )
            return 0
        revoked = auth.revoke(db, args.target)
        if not revoked:
            raise Error(
                f"No active API key matches {args.target!r} (give a user name, a key_... id or a key; "
                "see `palaestra users list`)."
            )
        print(f"Revoked {', '.join(revoked)}.")
        return 0
    finally:
        db.dispose()


def _users_config(args: argparse.Namespace) -> Any:
    """The configuration of the database to work on, said on stderr: the flags' and variables' where
    given, else the running server's data folder (when exactly one server runs here), else the default."""
    import os

    from palaestra.scoreboard.server.core.config import ENV_DATA_DIR, ENV_DATABASE_URL
    from palaestra.scoreboard.server.core.database import shown_url
    from palaestra.scoreboard.server.core.running import running_servers

    chosen = args.data_dir or args.database_url or os.environ.get(ENV_DATA_DIR) or os.environ.get(ENV_DATABASE_URL)
    servers = [] if chosen else running_servers()
    why = ""
    if len(servers) == 1:
        server = servers[0]
        if not server.default_database:
            raise ConfigurationError(
                f"The scoreboard server running at {server.url} (pid {server.pid}) uses the database "
                f"{server.database_url}: pass it with --database-url (with its password), or pass --data-dir "
                "for another scoreboard"
            )
        args.data_dir = str(server.data_dir)
        why = f"the data folder of the scoreboard server running at {server.url}, pid {server.pid}"
    elif len(servers) > 1:
        running = ", ".join(f"{s.url} ({s.data_dir})" for s in servers)
        why = f"the default: {len(servers)} scoreboard servers run here, {running}; --data-dir picks one"
    elif not chosen:
        why = "the default: no scoreboard server runs here; --data-dir or --database-url picks another"
    config = config_from_args(args)
    print(
        f"palaestra users: database {shown_url(config.database_url)}" + (f" ({why})" if why else ""),
        file=sys.stderr,
    )
    return config


def _key_document(key: Any) -> dict[str, Any]:
    """One key of ``users list --json`` (times in ISO 8601; never the key itself)."""
    return {
        "user": key.user,
        "key_id": key.key_id,
        "prefix": key.prefix,
        "created": key.created.isoformat(),
        "revoked": key.revoked.isoformat() if key.revoked else None,
        "active": key.revoked is None,
        "password_set": key.password_set,
    }


def _read_password(args: argparse.Namespace) -> str:
    """The new password: from standard input (``--password-stdin``, one line) or typed twice at a
    hidden prompt; checked before anything is written."""
    from palaestra.errors import ConfigurationError
    from palaestra.scoreboard.server.accounts.sessions import check_password

    if args.password_stdin:
        return check_password(sys.stdin.readline().rstrip("\r\n"))
    if not sys.stdin.isatty():
        raise ConfigurationError(
            "--password asks at a hidden prompt, and standard input is not a terminal; "
            "pipe the password with --password-stdin instead."
        )
    password = check_password(getpass.getpass(f"Password for {args.name}: "))
    if getpass.getpass("The same password again: ") != password:
        raise ConfigurationError("The two passwords differ; nothing was changed.")
    return password


def _base_url(config: Any) -> str:
    """Where users reach the server: its public URL, else the address ``palaestra server`` listens on."""
    if config.public_url:
        return str(config.public_url)
    host = f"[{config.host}]" if ":" in config.host else config.host
    return f"http://{host}:{config.port}"
