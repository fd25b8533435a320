"""``palaestra users create NAME | list | revoke NAME|KEY_ID``: API keys of the scoreboard.

Works directly on the database chosen by the same flags and variables as ``palaestra server``.
``create`` prints the new API key on its last line (it is stored hashed and never shown again).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from palaestra.cli.server import add_database_arguments, config_from_args, private_files


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "users",
        help="create, list and revoke scoreboard users' API keys",
        description="Manage the scoreboard's users and API keys (directly in its database).",
    )
    add_database_arguments(parser)
    sub = parser.add_subparsers(dest="users_command", metavar="ACTION", required=True)
    create = sub.add_parser("create", help="create a user (or a new key for one); prints the key last")
    create.add_argument("name")
    listing = sub.add_parser("list", help="list users and their keys (ids and prefixes, never the keys)")
    listing.add_argument("--json", action="store_true", help="print the keys as JSON, for scripts")
    revoke = sub.add_parser("revoke", help="revoke a key (key_... id or the key) or all keys of a user")
    revoke.add_argument("target", metavar="NAME|KEY_ID")
    for p in (create, revoke, listing):
        add_database_arguments(p, suppress=True)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from palaestra.errors import Error
    from palaestra.scoreboard.server import auth
    from palaestra.scoreboard.server.state import open_database

    private_files()
    config = config_from_args(args)
    config.data_dir.mkdir(parents=True, exist_ok=True)
    db = open_database(config, migrate_now=True)
    try:
        if args.users_command == "create":
            key_id, key = auth.create_user(db, args.name)
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
                print(f"{k.user}\t{k.key_id}\t{k.prefix}...\tcreated {k.created:%Y-%m-%d %H:%M}\t{state}")
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


def _key_document(key: Any) -> dict[str, Any]:
    """One key of ``users list --json`` (times in ISO 8601; never the key itself)."""
    return {
        "user": key.user,
        "key_id": key.key_id,
        "prefix": key.prefix,
        "created": key.created.isoformat(),
        "revoked": key.revoked.isoformat() if key.revoked else None,
        "active": key.revoked is None,
    }
