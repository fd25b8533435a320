"""The upload-signing secret: the HMAC key of the upload forms (``post_fields``) this server hands out.

It is kept out of the database, in a file only the server's user can read (0600):
``<data dir>/upload-secret.json``, or where ``PALAESTRA_UPLOAD_SECRET_FILE`` says (a mounted secret,
or a folder that several hosts share). The database holds only its fingerprint, so that a server
whose secret differs from the one its peers on the same database use refuses to start, instead of
handing out forms that the others refuse.

- :func:`open_secret`: the secret of a starting server, created on first start, or moved out of the
  database where an older palaestra kept it;
- :func:`rotate`: a new secret (``palaestra server rotate-secret``); the previous one still verifies
  the forms it signed until they expire, so no upload in flight breaks (stored evaluations do not
  depend on it at all);
- :class:`UploadSecret`: signs and verifies forms, and re-reads the file when it changes (a rotation
  reaches running servers within a second).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from palaestra.errors import ConfigurationError
from palaestra.scoreboard.server.core.clock import SYSTEM_CLOCK, Clock
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.tables.service import ServerSetting

__all__ = ["SECRET_FILE_NAME", "SigningKeys", "UploadSecret", "open_secret", "rotate", "secret_path"]

logger = logging.getLogger("palaestra.scoreboard")

SECRET_FILE_NAME = "upload-secret.json"
#: Where palaestra up to 0.x kept the secret, in plain text (moved out on first start).
LEGACY_SETTING = "upload_secret"
#: The sha256 of the current secret, shared by the servers on one database.
FINGERPRINT_SETTING = "upload_secret_sha256"
#: How often a running server looks at the file for a rotation.
RELOAD_CHECK_S = 1.0
#: Extra time the previous secret verifies, past the upload lifetime: forms signed by a server that
#: had not yet noticed the rotation.
ROTATION_GRACE_S = 60


@dataclass(frozen=True)
class SigningKeys:
    current: bytes
    previous: bytes | None = None
    #: Unix time until which ``previous`` still verifies
    previous_until: float = 0.0


def secret_path(config: ServerConfig) -> Path:
    return config.upload_secret_file or config.data_dir / SECRET_FILE_NAME


def fingerprint(secret: bytes) -> str:
    return hashlib.sha256(b"palaestra upload secret\n" + secret).hexdigest()


def _signature(secret: bytes, file_id: str, expires: int, max_bytes: int) -> str:
    message = f"{file_id}\n{expires}\n{max_bytes}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


class UploadSecret:
    """The signing keys in ``path``, re-read when the file changes."""

    def __init__(self, path: Path, keys: SigningKeys, clock: Clock = SYSTEM_CLOCK) -> None:
        self.path = path
        self._keys = keys
        self._stamp = _stamp(path)
        self._clock = clock
        self._checked = clock.monotonic()
        self._lock = threading.Lock()

    @property
    def keys(self) -> SigningKeys:
        now = self._clock.monotonic()
        if now - self._checked >= RELOAD_CHECK_S:
            with self._lock:
                self._checked = now
                stamp = _stamp(self.path)
                if stamp != self._stamp:
                    with contextlib.suppress(OSError, ConfigurationError):
                        self._keys, self._stamp = read_keys(self.path), stamp
        return self._keys

    def sign(self, file_id: str, expires: int, max_bytes: int) -> str:
        """The form signature of a file's upload (with the current secret)."""
        return _signature(self.keys.current, file_id, expires, max_bytes)

    def verifying_keys(self) -> list[bytes]:
        """The current secret and, until it retires, the previous one."""
        keys = self.keys
        candidates = [keys.current]
        if keys.previous is not None and self._clock.time() < keys.previous_until:
            candidates.append(keys.previous)
        return candidates

    def verify(self, file_id: str, expires: int, max_bytes: int, signature: str) -> bool:
        """Whether ``signature`` was made by the current secret or, until it retires, the previous one."""
        return any(
            hmac.compare_digest(_signature(key, file_id, expires, max_bytes), signature)
            for key in self.verifying_keys()
        )


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_ino


def read_keys(path: Path) -> SigningKeys:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        previous = doc.get("previous")
        return SigningKeys(
            current=bytes.fromhex(doc["current"]),
            previous=bytes.fromhex(previous) if previous else None,
            previous_until=float(doc.get("previous_valid_until") or 0),
        )
    except OSError as e:
        raise ConfigurationError(f"Cannot read the upload-signing secret {path}: {e.strerror or e}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ConfigurationError(
            f"The upload-signing secret {path} is not a palaestra secret file ({e}); restore it from a "
            "backup, or remove it to make a new one (upload forms handed out so far stop working)"
        ) from None


def _write_keys(path: Path, keys: SigningKeys, *, exclusive: bool) -> bool:
    """Write ``keys`` to ``path`` (0600, atomically); with ``exclusive``, only if there is no file yet.
    Whether this call wrote it."""
    doc = {
        "current": keys.current.hex(),
        "previous": keys.previous.hex() if keys.previous else None,
        "previous_valid_until": int(keys.previous_until) or None,
    }
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        if exclusive:
            try:
                os.link(tmp, path)  # fails if another process made the file first
            except FileExistsError:
                return False
            return True
        os.replace(tmp, path)
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def open_secret(config: ServerConfig, db: Database, clock: Clock = SYSTEM_CLOCK) -> UploadSecret:
    """The secret of a starting server: its file, else the one an older palaestra kept in the database
    (moved into the file), else a new one; checked against the fingerprint its peers registered."""
    path = secret_path(config)
    with db.read() as session:
        legacy = session.get(ServerSetting, LEGACY_SETTING)
        legacy_hex = legacy.value if legacy is not None else None
    if not path.exists():
        keys = SigningKeys(bytes.fromhex(legacy_hex) if legacy_hex else secrets.token_bytes(32))
        if _write_keys(path, keys, exclusive=True) and legacy_hex:
            logger.info("Moved the upload-signing secret out of the database into %s", path)
    keys = read_keys(path)
    if legacy_hex is not None:
        with db.write() as session:
            session.execute(sa.delete(ServerSetting).where(ServerSetting.key == LEGACY_SETTING))
    _check_fingerprint(db, keys.current, path)
    return UploadSecret(path, keys, clock)


def _check_fingerprint(db: Database, secret: bytes, path: Path) -> None:
    mine = fingerprint(secret)
    with db.read() as session:
        row = session.get(ServerSetting, FINGERPRINT_SETTING)
        registered = row.value if row is not None else None
    if registered is None:
        with contextlib.suppress(sa.exc.IntegrityError), db.write() as session:
            session.add(ServerSetting(key=FINGERPRINT_SETTING, value=mine))
        with db.read() as session:
            row = session.get(ServerSetting, FINGERPRINT_SETTING)
            registered = row.value if row is not None else mine
    if registered != mine:
        raise ConfigurationError(
            f"This server's upload-signing secret ({path}) is not the one the other servers on its "
            "database use, so they would refuse its upload forms: copy their secret file here, or "
            "point PALAESTRA_UPLOAD_SECRET_FILE of every server at one shared file"
        )


def rotate(config: ServerConfig, db: Database) -> tuple[Path, float]:
    """Make a new secret current; the previous one verifies the forms it signed until they expire.
    Returns the file and the Unix time until which the previous secret verifies."""
    old = open_secret(config, db)
    until = time.time() + config.upload_ttl_s + ROTATION_GRACE_S
    keys = SigningKeys(secrets.token_bytes(32), old.keys.current, until)
    try:
        _write_keys(old.path, keys, exclusive=False)
    except OSError as e:
        raise ConfigurationError(
            f"Cannot write the upload-signing secret {old.path} ({e.strerror or e}): rotate it where it "
            "is kept (a mounted secret: replace the file there)"
        ) from None
    with db.write() as session:
        session.merge(ServerSetting(key=FINGERPRINT_SETTING, value=fingerprint(keys.current)))
    return old.path, until
