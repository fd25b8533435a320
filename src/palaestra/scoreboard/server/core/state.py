"""The running service's state: configuration, database, blob store and upload-signing secret."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import sqlalchemy as sa

from palaestra.errors import ConfigurationError
from palaestra.scoreboard.server.core import migrate
from palaestra.scoreboard.server.core.background import BackgroundJobs
from palaestra.scoreboard.server.core.cache import Cache
from palaestra.scoreboard.server.core.clock import SYSTEM_CLOCK, Clock
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.core.database import Database, shown_url
from palaestra.scoreboard.server.core.signing import UploadSecret, open_secret
from palaestra.scoreboard.server.core.storage import BlobStore, FileStore, open_store
from palaestra.scoreboard.server.ladders.work import LadderWork

logger = logging.getLogger("palaestra.scoreboard")


@dataclass
class ServerState:
    """What every request handler needs; ``app.state.scoreboard`` holds one."""

    config: ServerConfig
    db: Database
    store: BlobStore
    #: signs and checks upload forms; the same secret for every server on the database (:mod:`.signing`)
    signing: UploadSecret
    #: Whether the busiest handlers may run on the event loop (``deps.run_blocking``): the database
    #: is on this machine and the blobs are a local folder, so nothing they wait on is on the network.
    inline: bool = False
    #: what every TTL, cache and rate window reads (:mod:`.clock`); tests advance one of their own
    clock: Clock = SYSTEM_CLOCK
    #: what requests leave to run after their response (benchmark runs' bootstraps)
    jobs: BackgroundJobs = field(default_factory=BackgroundJobs)
    #: ladder uploads' checks (worker processes) and re-ratings (on ``jobs``)
    ladder_work: LadderWork = field(init=False)

    def __post_init__(self) -> None:
        self.ladder_work = LadderWork(self.jobs)

    @property
    def cache(self) -> Cache:
        """The server's one cache (:mod:`.cache`), kept by its database."""
        return self.db.cache

    def close(self) -> None:
        self.ladder_work.close()
        self.jobs.close()
        self.db.dispose()


def migrate_database(config: ServerConfig) -> None:
    """Apply the Alembic migrations to ``config.database_url`` (safe when several processes start)."""
    if config.is_sqlite:
        path = sa.make_url(config.database_url).database
        if path and path != ":memory:":
            from pathlib import Path

            Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(config.database_url)
    try:
        migrate.upgrade(engine, open_store=lambda: open_store(config.storage_url, config.s3_endpoint_url))
    except sa.exc.OperationalError as e:
        raise ConfigurationError(
            f"Cannot open the database {shown_url(config.database_url)}: {e.orig}"
        ) from None
    finally:
        engine.dispose()


def check_schema(db: Database) -> None:
    """Refuse to run on a database whose schema is not the newest (``palaestra server migrate``)."""
    current, head = migrate.current_revision(db.engine), migrate.SCHEMA_HEAD
    if current is not None and current != head and current not in migrate.known_revisions():
        raise ConfigurationError(migrate.unknown_revision_problem(db.url, current))
    if current != head:
        raise ConfigurationError(
            f"The database {shown_url(db.url)} is at schema revision {current or '(empty)'}, not {head}; "
            "run `palaestra server migrate` (or start the server without --no-migrate)."
        )




def open_database(config: ServerConfig, migrate_now: bool | None = None) -> Database:
    """The database of ``config``, migrated first unless told not to."""
    if migrate_now if migrate_now is not None else config.migrate_on_start:
        migrate_database(config)
    db = Database(config.database_url)
    check_schema(db)
    return db


def build_state(config: ServerConfig, clock: Clock = SYSTEM_CLOCK) -> ServerState:
    """Open (and migrate) the database and the blob store of ``config``; a read-only archive's are
    only opened, never written (:mod:`..guards.readonly`). ``clock``: what its TTLs and caches read."""
    if config.read_only:
        return _read_only_state(config, clock)
    if config.is_sqlite or not config.storage_url.startswith("s3:"):
        make_data_dir(config)
    db = open_database(config)
    if config.is_sqlite:
        make_private(sa.make_url(config.database_url).database)
    store = open_store(config.storage_url, config.s3_endpoint_url)
    store.check()
    signing = open_secret(config, db, clock)
    return ServerState(config=config, db=db, store=store, signing=signing, inline=_inline(config, store), clock=clock)


def _inline(config: ServerConfig, store: BlobStore) -> bool:
    if config.inline_handlers is not None:
        return config.inline_handlers
    return config.database_is_local and isinstance(store, FileStore)


def _read_only_state(config: ServerConfig, clock: Clock) -> ServerState:
    """A frozen board: the database at the newest schema (not migrated), the store as it is, and a
    signing secret of this process only (no upload form is ever signed or checked)."""
    import secrets

    from palaestra.scoreboard.server.core.signing import SigningKeys, secret_path

    db = open_database(config, migrate_now=False)
    store = open_store(config.storage_url, config.s3_endpoint_url)
    signing = UploadSecret(secret_path(config), SigningKeys(secrets.token_bytes(32)), clock)
    return ServerState(config=config, db=db, store=store, signing=signing, inline=_inline(config, store), clock=clock)


def make_private(database: str | None) -> None:
    """Make a SQLite database and its -wal/-shm files readable by this user only (0600), also when
    an older palaestra created them readable by others."""
    if not database or database == ":memory:":
        return
    from pathlib import Path

    for path in (Path(database), Path(f"{database}-wal"), Path(f"{database}-shm")):
        try:
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)
                logger.info("Made %s readable by this user only (0600)", path)
        except FileNotFoundError:
            pass
        except OSError as e:  # not ours: say so, keep serving
            logger.warning("Could not make %s private (%s); `chmod 600 %s`", path, e.strerror or e, path)


def make_data_dir(config: ServerConfig) -> None:
    """Create the data folder readable by this user only (0700); warn about one others can read."""
    config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    mode = config.data_dir.stat().st_mode & 0o777
    if mode & 0o077:
        logger.warning(
            "The data folder %s can be read by other users (mode %o); `chmod 700 %s` keeps its database, "
            "blobs and upload secret private",
            config.data_dir,
            mode,
            config.data_dir,
        )
