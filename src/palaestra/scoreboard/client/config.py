"""Where the upload client finds its scoreboard and API key.

An argument wins, then ``$PALAESTRA_SERVER`` / ``$PALAESTRA_API_KEY``, then the 2017 names
``$OPENAI_GYM_API_BASE`` / ``$OPENAI_GYM_API_KEY``, then the file ``palaestra login`` writes
(:func:`config_path`, readable by the user only). Errors say how to set what is missing.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Sequence
from pathlib import Path

import platformdirs

from palaestra.errors import ConfigurationError

__all__ = [
    "ENV_API_KEY",
    "ENV_RETRY_BUDGET",
    "ENV_SERVER",
    "LEGACY_ENV_API_KEY",
    "LEGACY_ENV_SERVER",
    "check_api_key",
    "config_path",
    "normalize_server",
    "read_config",
    "resolve_api_key",
    "resolve_retry_budget",
    "resolve_server",
    "write_config",
]

logger = logging.getLogger("palaestra.upload")

ENV_SERVER = "PALAESTRA_SERVER"
ENV_API_KEY = "PALAESTRA_API_KEY"
#: Seconds the client keeps retrying a request that fails in a way that may pass (default 60).
ENV_RETRY_BUDGET = "PALAESTRA_RETRY_BUDGET"
#: The 2017 names, honoured after palaestra's (``OPENAI_GYM_API_BASE`` is the same base URL).
LEGACY_ENV_SERVER = "OPENAI_GYM_API_BASE"
LEGACY_ENV_API_KEY = "OPENAI_GYM_API_KEY"
CONFIG_FILE_NAME = "config.json"
CONFIG_KEYS = ("server", "api_key")

_SERVER_HINT = (
    "Pass it (palaestra.upload(..., server='http://HOST:PORT') or 'palaestra upload --server URL'), "
    f"or 'export {ENV_SERVER}=http://HOST:PORT', or save it with 'palaestra login --server URL'."
)
_KEY_HINT = (
    f"Pass it (palaestra.upload(..., api_key=...)), or 'export {ENV_API_KEY}=...', or save it with "
    "'palaestra login'. An administrator of the server creates keys with 'palaestra users create NAME'."
)


def config_path() -> Path:
    """The file ``palaestra login`` writes: ``config.json`` in the user's config directory."""
    return Path(platformdirs.user_config_dir("palaestra", appauthor=False)) / CONFIG_FILE_NAME


def read_config(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The saved ``server`` and ``api_key`` (an absent file is an empty configuration)."""
    p = Path(path) if path is not None else config_path()
    try:
        text = p.read_text(encoding="utf-8")
        mode = p.stat().st_mode
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ConfigurationError(f"Cannot read the palaestra config file {p}: {e.strerror or e}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        logger.warning("The palaestra config file %s is readable by other users; run 'chmod 600 %s'", p, p)
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ConfigurationError(
            f"The palaestra config file {p} is not valid JSON ({e}); run 'palaestra login' to rewrite it"
        ) from None
    if not isinstance(doc, dict):
        raise ConfigurationError(
            f"The palaestra config file {p} must hold a JSON object; run 'palaestra login'"
        )
    return {k: v for k, v in doc.items() if k in CONFIG_KEYS and isinstance(v, str) and v}


def write_config(
    server: str | None = None, api_key: str | None = None, path: str | os.PathLike[str] | None = None
) -> Path:
    """Save ``server`` and/or ``api_key`` (keeping the other one), readable by the user only (0600)."""
    p = Path(path) if path is not None else config_path()
    try:
        doc = read_config(p)
    except ConfigurationError:
        doc = {}
    if server is not None:
        doc["server"] = normalize_server(server)
    if api_key is not None:
        doc["api_key"] = check_api_key(api_key)
    p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = p.with_name(p.name + "~")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # also when the temporary file was left over with a wider mode
        os.write(fd, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, p)
    return p


def normalize_server(server: str) -> str:
    """``server`` as a base URL without a trailing slash (:class:`ConfigurationError` if it is not one)."""
    url = server.strip().rstrip("/")
    if not url.startswith(("http://", "https://")) or len(url) <= len("https://"):
        raise ConfigurationError(
            f"The scoreboard server must be an http:// or https:// base URL such as http://127.0.0.1:8000, "
            f"not {server!r}"
        )
    if url.endswith("/v1"):
        raise ConfigurationError(
            f"The scoreboard server URL {server!r} ends in /v1: drop the trailing /v1 (use {url[:-3]!r}); "
            "the client adds /v1 to every API path itself"
        )
    return url


def resolve_retry_budget(explicit: float | None = None) -> float | None:
    """Seconds of retries: ``explicit``, else ``$PALAESTRA_RETRY_BUDGET``, else ``None`` (the default)."""
    if explicit is not None:
        value: float | str = explicit
    else:
        text = os.environ.get(ENV_RETRY_BUDGET, "").strip()
        if not text:
            return None
        value = text
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise ConfigurationError(
            f"The retry budget must be a number of seconds (0 or more), not {value!r} "
            f"(--retry-budget or ${ENV_RETRY_BUDGET})"
        )
    return seconds


def check_api_key(api_key: str) -> str:
    """``api_key`` stripped; :class:`ConfigurationError` if it is not one word."""
    key = api_key.strip()
    if not key or any(c.isspace() for c in key):
        raise ConfigurationError("An API key is one word without spaces; check what you pasted")
    return key


def _lookup(
    explicit: str | None, env_names: Sequence[str], config_key: str, config_file: Path | None
) -> str | None:
    if explicit:
        return explicit
    for name in env_names:
        value = os.environ.get(name)
        if value:
            return value
    return read_config(config_file).get(config_key)


def resolve_server(server: str | None = None, config_file: str | os.PathLike[str] | None = None) -> str:
    """The scoreboard base URL: ``server``, $PALAESTRA_SERVER, $OPENAI_GYM_API_BASE, the login file."""
    value = _lookup(server, (ENV_SERVER, LEGACY_ENV_SERVER), "server", _path(config_file))
    if not value:
        raise ConfigurationError(f"No scoreboard server is configured. {_SERVER_HINT}")
    return normalize_server(value)


def resolve_api_key(api_key: str | None = None, config_file: str | os.PathLike[str] | None = None) -> str:
    """The API key: ``api_key``, ``$PALAESTRA_API_KEY``, ``$OPENAI_GYM_API_KEY``, the login file."""
    value = _lookup(api_key, (ENV_API_KEY, LEGACY_ENV_API_KEY), "api_key", _path(config_file))
    if not value:
        raise ConfigurationError(f"You must provide a palaestra scoreboard API key. {_KEY_HINT}")
    return check_api_key(value)


def _path(p: str | os.PathLike[str] | None) -> Path | None:
    return Path(p) if p is not None else None
