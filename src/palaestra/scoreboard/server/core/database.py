"""The scoreboard's database connection: the engine(s) and sessions of one URL (:class:`Database`), and
statements sent with a write transaction's COMMIT (:func:`execute_at_commit`). The tables are in
:mod:`..tables.scores`, :mod:`..tables.accounts`, :mod:`..tables.service`, :mod:`..tables.ladders` and :mod:`..tables.live`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from palaestra.scoreboard.server.core.cache import Cache

__all__ = ["Database", "RawJSON", "WriterBusy", "execute_at_commit", "serialize_json", "shown_url"]

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy handler alone serialises writers
    fcntl = None  # type: ignore[assignment]


def shown_url(url: str) -> str:
    """A database URL as logs and error messages show it: its password hidden."""
    return sa.make_url(url).render_as_string(hide_password=True)


class WriterBusy(Exception):
    """Another writer holds the SQLite database: ``Database.write(wait=False)`` did not wait for it."""


class RawJSON(str):
    """A value for a JSON column that is already serialised: stored as it is.

    Large JSON values (an evaluation's learning curves) are serialised before the write
    transaction starts, not inside it, where SQLite writers wait for each other.
    """


def serialize_json(value: Any) -> str:
    """The JSON columns' serialiser: :class:`RawJSON` as it is, anything else through ``json``."""
    return value if isinstance(value, RawJSON) else json.dumps(value)



class Database:
    """The engine(s) and session factories for one database URL.

    ``read()`` gives a session for queries; ``write()`` a session inside one transaction that
    commits on success and rolls back on any exception. On SQLite, writes start with
    ``BEGIN IMMEDIATE`` (so a writer never fails half-way on a lock upgrade) and are serialised by
    a lock, in this process and, through ``flock`` on ``<database>-writer.lock``, between the
    processes that share the file (``palaestra server --workers N``, the CLI): a waiting writer wakes
    the moment the lock is free, where SQLite's own busy handler sleeps 1, 2, 5, 10... ms between
    tries and left server workers idle a third of the time (bench/server_load.py). The database runs
    in WAL mode with a busy timeout, so other programs writing it are still waited for.
    """

    def __init__(self, url: str, *, echo: bool = False, pool_size: int = 10) -> None:
        self.url = url
        #: the state's one cache (:mod:`.cache`), here so that whatever reads through a session reaches it
        self.cache = Cache()
        self.is_sqlite = url.startswith("sqlite")
        self._write_lock = threading.Lock() if self.is_sqlite else None
        self._calls = threading.local()  # .unwritten: in a never_waiting() block, nothing written yet
        self._lock_file: int | None = None
        if self.is_sqlite:
            self._lock_file = _open_lock_file(sa.make_url(url).database)
            # reads run without an explicit transaction: one statement, one consistent snapshot
            self.engine = self._sqlite_engine(url, echo, begin=None)
            self.write_engine = self._sqlite_engine(url, echo, begin="BEGIN IMMEDIATE")
        else:
            self.write_engine = sa.create_engine(
                url,
                echo=echo,
                pool_size=pool_size,
                max_overflow=40,
                pool_recycle=1800,
                json_serializer=serialize_json,
            )
            # Reads and single statements in autocommit, on the same pool: a query in a transaction
            # costs BEGIN and a ROLLBACK (when the pool takes the connection back) besides itself,
            # three round trips for one. Under READ COMMITTED, PostgreSQL's default, every statement
            # of a transaction sees its own snapshot anyway, so reads lose no consistency.
            self.engine = self.write_engine.execution_options(isolation_level="AUTOCOMMIT")
        info = {"cache": self.cache}
        self._read = sessionmaker(self.engine, expire_on_commit=False, info=info)
        self._write = sessionmaker(self.write_engine, expire_on_commit=False, info=info)

    @staticmethod
    def _sqlite_engine(url: str, echo: bool, begin: str | None) -> Engine:
        # how long a statement waits for another program's lock before the database counts as
        # unavailable (a 503, :mod:`..guards.outage`)
        busy_s = float(os.environ.get("PALAESTRA_SQLITE_BUSY_TIMEOUT_S") or 30)
        engine = sa.create_engine(
            url,
            echo=echo,
            connect_args={"timeout": busy_s, "check_same_thread": False},
            pool_size=20,
            max_overflow=40,
            json_serializer=serialize_json,
        )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={int(busy_s * 1000)}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        if begin is not None:
            statement = begin

            @event.listens_for(engine, "begin")
            def _on_begin(conn: sa.Connection) -> None:
                conn.exec_driver_sql(statement)

        return engine

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        """A session for queries (closed at the end; never commits)."""
        with self._read() as session:
            yield session

    @contextlib.contextmanager
    def connect(self) -> Iterator[sa.Connection]:
        """A Core connection for queries: a statement or two cost less than through a Session."""
        with self.engine.connect() as conn:
            yield conn

    @contextlib.contextmanager
    def write(self, *, wait: bool = True) -> Iterator[Session]:
        """A session inside one transaction: commit on success, roll back on any exception.

        ``wait=False``: on SQLite, raise :class:`WriterBusy` at once, having written nothing, when
        another writer holds the database (for work on the event loop that must not wait behind a
        large upload's transaction); PostgreSQL's writers never wait for each other here."""
        if self._write_lock is None:
            with self._write() as session, session.begin():
                yield session
                _run_at_commit(session)
            return
        # SQLite: the connection and the session are set up (and put away) outside the writers'
        # lock, which covers BEGIN IMMEDIATE ... COMMIT only.
        with self.write_engine.connect() as conn, Session(bind=conn, expire_on_commit=False) as session:  # noqa: SIM117
            with self._writers_lock(wait), conn.begin():
                yield session
                session.flush()
                _run_at_commit(session)

    @contextlib.contextmanager
    def never_waiting(self) -> Iterator[None]:
        """Within this block (on this thread), a write that would wait for another writer raises
        :class:`WriterBusy` instead, until one write went through: from then on the work has written
        and finishes where it is. For work on the event loop (``deps.run_blocking``), which runs it
        again in a thread rather than hold every request behind another's transaction."""
        self._calls.unwritten = True
        try:
            yield
        finally:
            self._calls.unwritten = False

    @contextlib.contextmanager
    def _writers_lock(self, wait: bool) -> Iterator[None]:
        """The writers' lock of this process and, through ``flock``, of the others on the file."""
        assert self._write_lock is not None
        wait = wait and not getattr(self._calls, "unwritten", False)
        if not self._write_lock.acquire(blocking=wait):
            raise WriterBusy
        try:
            with _file_lock(self._lock_file, wait):
                self._calls.unwritten = False
                yield
        finally:
            self._write_lock.release()

    def write_one(self, statement: sa.Executable, params: Mapping[str, Any]) -> int:
        """Run one INSERT/UPDATE/DELETE on its own and return its row count.

        One statement is atomic by itself, so it runs in autocommit mode: on SQLite the database's
        write lock (and the writers' lock) is held for that statement alone, not for a BEGIN ...
        COMMIT round trip through Python; on PostgreSQL it is one round trip instead of three.
        """
        # The read engine's connections run in autocommit (SQLite: isolation_level None, no BEGIN
        # emitted; PostgreSQL: AUTOCOMMIT): the statement commits itself when it finishes.
        if self._write_lock is None:
            with self.engine.connect() as conn:
                return int(conn.execute(statement, params).rowcount)
        with self.engine.connect() as conn:
            with self._writers_lock(wait=True):
                result = conn.execute(statement, params)
            conn.commit()  # closes SQLAlchemy's bookkeeping; SQLite has nothing open
            return int(result.rowcount)

    def dispose(self) -> None:
        self.write_engine.dispose()
        if self.is_sqlite:  # a second pool (on PostgreSQL, self.engine shares write_engine's)
            self.engine.dispose()
        if self._lock_file is not None:
            os.close(self._lock_file)
            self._lock_file = None


_AT_COMMIT = "palaestra.at_commit"


def execute_at_commit(session: Session, statement: sa.Executable, params: Mapping[str, Any]) -> None:
    """Run ``statement`` last in the write transaction of ``session`` (:meth:`Database.write`),
    sent to PostgreSQL together with the COMMIT.

    For hot rows, such as the ``envs`` row that every evaluation of an env adds to: the row lock an
    UPDATE takes lasts until COMMIT, and the other writers of the row queue meanwhile. Sent with the
    COMMIT (psycopg's pipeline mode), the lock lasts as long as the database's own work instead of a
    round trip through Python, which under load includes waiting for the GIL behind other threads
    (bench/server_load.py with handlers in threads: 1.5 evaluations waiting on this lock at any
    moment, 0.2 after). SQLite's writers are serialised anyway; there the statement simply runs last,
    as it does where libpq is too old for pipelines.
    """
    session.info.setdefault(_AT_COMMIT, []).append((statement, params))


def _run_at_commit(session: Session) -> None:
    """Run the statements of :func:`execute_at_commit`; on PostgreSQL, commit in the same round trip."""
    pending = session.info.pop(_AT_COMMIT, None)
    if not pending:
        return
    conn = session.connection()
    if conn.dialect.name != "postgresql" or not _pipelines_supported():
        for statement, params in pending:
            conn.execute(statement, params)
        return
    session.flush()
    dbapi_connection: Any = conn.connection.dbapi_connection
    dbapi_error = conn.dialect.loaded_dbapi.Error
    try:
        with dbapi_connection.pipeline():  # statements are sent without waiting for their results
            for statement, params in pending:
                conn.execute(statement, params)
            dbapi_connection.commit()  # SQLAlchemy's own COMMIT after this finds nothing to commit
    except dbapi_error as e:  # raised by psycopg at the pipeline's end: wrap it as SQLAlchemy does
        raise sa.exc.DBAPIError.instance(None, None, e, dbapi_error) from e


@functools.cache
def _pipelines_supported() -> bool:
    import psycopg

    return bool(psycopg.Pipeline.is_supported())  # libpq 14 or newer


def _open_lock_file(database: str | None) -> int | None:
    """The writers' lock file of a SQLite database file (None for in-memory databases or without flock)."""
    if not database or database == ":memory:" or database.startswith("file:") or fcntl is None:
        return None
    return os.open(f"{database}-writer.lock", os.O_RDWR | os.O_CREAT, 0o644)


@contextlib.contextmanager
def _file_lock(fd: int | None, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``fd`` (blocking with the GIL released; :class:`WriterBusy` at
    once if another process holds it and not ``wait``); nothing if ``fd`` is None."""
    if fd is None or fcntl is None:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise WriterBusy from None
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)

