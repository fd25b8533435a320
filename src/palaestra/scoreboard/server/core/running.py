"""Which scoreboard servers run on this machine, and on which data: one record per server process.

- :func:`record_running`: while ``palaestra server`` (or ``palaestra demo``) serves, a small JSON file
  ``<state dir>/palaestra/servers/<pid>.json`` says its pid, URL, data folder and database URL (the
  password hidden); a clean exit removes it.
- :func:`running_servers`: the records whose process is alive; a record left by a killed server is
  stale: ignored (and removed).
- :func:`servers_dir`: ``$XDG_STATE_HOME/palaestra/servers``, else ``~/.local/state/palaestra/servers``.

``palaestra users`` reads them: without ``--data-dir`` or ``--database-url`` it works on the data of
the one running server, where a user's key would otherwise go to another database and fail on the
server with "Invalid API key" (issue 36).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["RunningServer", "record_running", "running_servers", "servers_dir"]

logger = logging.getLogger("palaestra.server")


@dataclass(frozen=True)
class RunningServer:
    """A scoreboard server process that is running now."""

    pid: int
    url: str
    data_dir: Path
    #: its database URL, the password hidden
    database_url: str
    #: whether that database is the SQLite file in ``data_dir`` (then ``--data-dir`` reaches it)
    default_database: bool


def servers_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder of the records: ``$XDG_STATE_HOME/palaestra/servers`` (``~/.local/state`` without it)."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "palaestra" / "servers"


@contextlib.contextmanager
def record_running(config: Any, url: str) -> Iterator[Path | None]:
    """Record this process as a server of ``config`` (a ``ServerConfig``) at ``url`` while the block
    runs; yields the record's path (``None`` where it could not be written: serving goes on)."""
    from palaestra.scoreboard.server.core.config import resolve_config
    from palaestra.scoreboard.server.core.database import shown_url

    default = resolve_config(data_dir=config.data_dir, environ={}).database_url
    document = {
        "pid": os.getpid(),
        "url": url,
        "data_dir": str(config.data_dir),
        "database_url": shown_url(config.database_url),
        "default_database": config.database_url == default,
    }
    path = servers_dir() / f"{os.getpid()}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(document), encoding="utf-8")
        os.replace(partial, path)  # a reader never sees half a record
    except OSError as exc:
        logger.warning("Could not record this server in %s (%s); `palaestra users` will not find it", path, exc)
        yield None
        return
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def running_servers(environ: Mapping[str, str] | None = None) -> list[RunningServer]:
    """The servers recorded in :func:`servers_dir` whose process is alive, by pid."""
    folder = servers_dir(environ)
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            server = RunningServer(
                pid=int(document["pid"]),
                url=str(document["url"]),
                data_dir=Path(document["data_dir"]),
                database_url=str(document["database_url"]),
                default_database=bool(document["default_database"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a record of ours (or being removed)
        if _alive(server.pid):
            found.append(server)
        else:  # left by a server that was killed
            with contextlib.suppress(OSError):
                path.unlink()
    return sorted(found, key=lambda s: s.pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has that pid
        return True
    return True
