"""Apply the scoreboard's Alembic migrations programmatically (on start, and ``palaestra server migrate``).

Several processes may start at once against one database: on PostgreSQL they take an advisory
lock around the upgrade; on SQLite, a file lock beside the database file.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from palaestra.scoreboard.server.core.database import shown_url

if TYPE_CHECKING:
    from alembic.config import Config

    from palaestra.scoreboard.server.core.storage import BlobStore

logger = logging.getLogger("palaestra.scoreboard.migrate")

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"  # server/migrations
#: pg_advisory_lock key of the migration lock ("palaestra" in ASCII, folded to 63 bits)
PG_LOCK_KEY = 0x70616C6165737472
#: The newest revision in ``migrations/versions`` (a test checks it), so that a database already at
#: it is recognised without importing Alembic.
SCHEMA_HEAD = "0016_verified_ladder_matches"


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def head_revision() -> str | None:
    """The newest revision, read from the migration scripts."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def current_revision(engine: sa.Engine) -> str | None:
    """The database's revision (``None`` for an empty database), without importing Alembic."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        rows = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
    return rows[0] if len(rows) == 1 else None


@contextlib.contextmanager
def _sqlite_file_lock(url: str) -> Iterator[None]:
    path = sa.make_url(url).database
    if not path or path == ":memory:":
        yield
        return
    import fcntl

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.migrate-lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def known_revisions() -> set[str]:
    """Every revision of the migration scripts."""
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return {script.revision for script in scripts.walk_revisions()}


def unknown_revision_problem(url: str, current: str) -> str:
    """The one line for a database at a revision these migrations do not have."""
    return (
        f"The database {shown_url(url)} is at schema revision {current}, which this palaestra does not know "
        f"(its newest is {SCHEMA_HEAD}): a newer palaestra migrated it. Run that version, or upgrade "
        "palaestra on this machine; to go back instead, restore a backup made before the upgrade"
    )


def upgrade(engine: sa.Engine, revision: str = "head", open_store: Callable[[], BlobStore] | None = None) -> None:
    """Bring the database to ``revision`` (default: the newest), safely under concurrent starts;
    ``open_store`` opens the blob store, for migrations that derive stored rows from blobs.

    A database at a revision the scripts do not have (a newer palaestra migrated it) is refused with
    :class:`~palaestra.errors.ConfigurationError`, before Alembic is asked to find it.
    """
    current = current_revision(engine)
    if revision == "head" and current == SCHEMA_HEAD:
        return
    if current is not None and current not in known_revisions():
        from palaestra.errors import ConfigurationError

        raise ConfigurationError(
            unknown_revision_problem(engine.url.render_as_string(hide_password=False), current)
        )
    from alembic import command

    cfg = alembic_config(engine.url.render_as_string(hide_password=False))
    cfg.attributes["open_store"] = open_store
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": PG_LOCK_KEY})
            conn.commit()
            try:
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, revision)
                conn.commit()
            finally:
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": PG_LOCK_KEY})
                conn.commit()
        return
    with _sqlite_file_lock(engine.url.render_as_string(hide_password=False)), engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        conn.commit()
