"""The scoreboard's database: SQLAlchemy 2 models, the engine, and sessions.

Tables (created by the Alembic migrations in ``migrations/``, never by ``create_all`` in production):

- ``users`` (with an argon2 password hash once they have a password), ``api_keys`` (hashed keys; a
  key is shown once, at creation)
- ``web_sessions`` (signed-in browsers), ``invites`` (one-time links to set a password)
- ``files`` (uploads: pending until their bytes arrived and were validated)
- ``algorithms``, ``benchmark_runs``
- ``evaluations``: one upload, with its scores precomputed on ingest (the "solved" statistics of
  spec §4.6 as columns, the learning-curve series as ``graph_stats`` JSON) and its videos
- ``envs``: one row per env id ever uploaded, with aggregates (evaluation count, best mean) kept
  current in the same transaction that adds an evaluation
- ``idempotency_keys``: the stored answers of creating POSTs sent with an ``Idempotency-Key``
- ``server_settings``: the upload-signing secret, shared by every server process
- ``score_log``: the hash chain of scored evaluations and benchmark runs (:mod:`.archive.scorelog`)

Every public object has a string ``id`` (``eval_...``) and an integer ``seq`` primary key that gives
the newest-first order of list pages.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

_M = TypeVar("_M")

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy handler alone serialises writers
    fcntl = None  # type: ignore[assignment]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class RawJSON(str):
    """A value for a JSON column that is already serialised: stored as it is.

    Large JSON values (an evaluation's learning curves) are serialised before the write
    transaction starts, not inside it, where SQLite writers wait for each other.
    """


def serialize_json(value: Any) -> str:
    """The JSON columns' serialiser: :class:`RawJSON` as it is, anything else through ``json``."""
    return value if isinstance(value, RawJSON) else json.dumps(value)


def snapshot(model: type[_M], values: Mapping[Any, Any]) -> _M:
    """A plain object with ``values`` (and None for other columns) as attributes, typed as ``model``,
    for reading (never add it to a session). The hot API paths select with Core and build their answers from these: an ORM
    object costs an instrumented ``setattr`` per column, a snapshot one ``dict`` copy."""
    columns = _COLUMNS.get(model)
    if columns is None:
        columns = _COLUMNS[model] = dict.fromkeys(model.__table__.columns.keys())  # type: ignore[attr-defined]
    return cast(_M, SimpleNamespace(**{**columns, **values}))


#: model -> {column name: None}: what a snapshot holds for the columns its values leave out
_COLUMNS: dict[type, dict[str, None]] = {}


def from_row(model: type[_M], row: sa.Row[Any]) -> _M:
    """A :func:`snapshot` of a Core ``row`` of ``model``'s table."""
    return snapshot(model, row._mapping)


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite forgets the zone; this restores it)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value


JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def sorted_keys(value: Any) -> Any:
    """A JSON column's value with every object's keys sorted, for answers: PostgreSQL's JSONB hands
    keys back in an order of its own (shorter first), SQLite in the order they were written, and a
    board moved from one to the other answers byte for byte the same (``palaestra server import``)."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSONType, list[Any]: JSONType}


class User(Base):
    __tablename__ = "users"

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(sa.String(100), unique=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    #: argon2 hash of the user's password (:mod:`.accounts`); None: no password, no sign-in
    password_hash: Mapped[str | None] = mapped_column(sa.String(200), default=None)


class WebSession(Base):
    """A signed-in browser: the cookie holds a random token, the table its sha256 (:mod:`.accounts`)."""

    __tablename__ = "web_sessions"

    token_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq", ondelete="CASCADE"), index=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    expires: Mapped[datetime] = mapped_column(index=True)


class Invite(Base):
    """A one-time link with which a user sets a password (``palaestra users create NAME --invite``)."""

    __tablename__ = "invites"

    token_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq", ondelete="CASCADE"), index=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    expires: Mapped[datetime] = mapped_column()
    used: Mapped[datetime | None] = mapped_column(default=None)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)  # key_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq", ondelete="CASCADE"), index=True)
    #: sha256 hex of the key (keys are 256-bit random, so a fast hash is the right one)
    key_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    #: the first characters of the key, to recognise it in ``palaestra users list``
    prefix: Mapped[str] = mapped_column(sa.String(16))
    created: Mapped[datetime] = mapped_column(default=utcnow)
    revoked: Mapped[datetime | None] = mapped_column(default=None)


class ServerSetting(Base):
    __tablename__ = "server_settings"

    key: Mapped[str] = mapped_column(sa.String(100), primary_key=True)
    value: Mapped[str] = mapped_column(sa.Text)


class FileRecord(Base):
    __tablename__ = "files"
    #: gc finds expired pending files with the first; the rate limits count a user's recent (and
    #: pending) files with the second (:mod:`.rate_limits`)
    __table_args__ = (
        sa.Index("ix_files_status_expires", "status", "expires"),
        sa.Index("ix_files_user_created", "user_seq", "created"),
    )

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # file_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), index=True)
    purpose: Mapped[str] = mapped_column(sa.String(20))
    content_type: Mapped[str] = mapped_column(sa.String(100))
    #: pending -> uploaded
    status: Mapped[str] = mapped_column(sa.String(20), default="pending")
    #: where the bytes are in the blob store (set when they arrived, for the file store)
    storage_key: Mapped[str | None] = mapped_column(sa.String(300), default=None)
    size: Mapped[int | None] = mapped_column(sa.BigInteger, default=None)
    max_bytes: Mapped[int] = mapped_column(sa.BigInteger)
    expires: Mapped[datetime] = mapped_column()
    created: Mapped[datetime] = mapped_column(default=utcnow)
    uploaded: Mapped[datetime | None] = mapped_column(default=None)
    #: what ingest found (for videos: the list of unpacked videos with their blob keys)
    ingest: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    #: the evaluation that consumed this file (a file backs at most one evaluation)
    evaluation_id: Mapped[str | None] = mapped_column(sa.String(40), index=True, default=None)
    #: sha256 hex of the stored episode batch (checked when it is read; NULL: not recorded)
    sha256: Mapped[str | None] = mapped_column(sa.String(64), default=None)


class Algorithm(Base):
    __tablename__ = "algorithms"
    __table_args__ = (sa.UniqueConstraint("user_seq", "name", name="uq_algorithms_user_name"),)

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # alg_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), index=True)
    name: Mapped[str] = mapped_column(sa.String(200))
    description: Mapped[str | None] = mapped_column(sa.Text, default=None)
    writeup: Mapped[str | None] = mapped_column(sa.Text, default=None)
    created: Mapped[datetime] = mapped_column(default=utcnow)


class BenchmarkRun(Base):
    __tablename__ = "benchmark_runs"

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # brun_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), index=True)
    benchmark_id: Mapped[str] = mapped_column(sa.String(200), index=True)
    algorithm_seq: Mapped[int | None] = mapped_column(sa.ForeignKey("algorithms.seq"), default=None)
    tags: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: open -> committed
    status: Mapped[str] = mapped_column(sa.String(20), default="open")
    #: ``benchmark_aggregate_score`` output, when palaestra.benchmarks knows the benchmark
    score: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    #: the aggregate score as a number, for ordering leaderboards
    score_value: Mapped[float | None] = mapped_column(sa.Float, default=None)
    #: how many evaluations ``score`` was computed from (a later, larger count wins a race)
    score_evaluations: Mapped[int | None] = mapped_column(default=None)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    committed: Mapped[datetime | None] = mapped_column(default=None)


class Evaluation(Base):
    __tablename__ = "evaluations"
    __table_args__ = (
        sa.Index("ix_evaluations_env_seq", "env_id", "seq"),
        # The leaderboard's default order (solved first, fewest episodes before solve, best mean, the mean
        # of a short run's episodes where it has no 100-episode mean: ``ranking_mean``) and the
        # "best mean" order, so that any page of an env's leaderboard is an index range scan
        # (bench/web_pages.py: p95 under 100 ms with 10,000 evaluations).
        sa.Index(
            "ix_evaluations_env_leaderboard",
            "env_id",
            sa.text("solved DESC"),
            "episode_t_value",
            sa.text("ranking_mean DESC"),
            "seq",
        ),
        sa.Index("ix_evaluations_env_mean", "env_id", sa.text("mean DESC"), "seq"),
        sa.Index("ix_evaluations_user_seq", "user_seq", "seq"),
        sa.Index("ix_evaluations_algorithm_seq", "algorithm_seq", "seq"),
        sa.Index("ix_evaluations_benchmark_run", "benchmark_run_seq"),
        sa.Index("ix_evaluations_env_conditions", "env_id", "conditions_key", "seq"),
        # an env page in algorithm order counts its rows per algorithm, then reads them, along this
        sa.Index("ix_evaluations_env_algorithm", "env_id", "algorithm_seq", "seq"),
    )

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # eval_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"))
    env_id: Mapped[str | None] = mapped_column(sa.String(200))
    #: the env id is in palaestra's catalogue (unknown ids are accepted and unlisted)
    env_listed: Mapped[bool] = mapped_column(default=False)
    algorithm_seq: Mapped[int | None] = mapped_column(sa.ForeignKey("algorithms.seq"), default=None)
    benchmark_run_seq: Mapped[int | None] = mapped_column(sa.ForeignKey("benchmark_runs.seq"), default=None)
    writeup: Mapped[str | None] = mapped_column(sa.Text, default=None)
    gym_version: Mapped[str | None] = mapped_column(sa.String(100), default=None)
    training_episode_batch: Mapped[str | None] = mapped_column(sa.String(40), default=None)  # file id
    training_video: Mapped[str | None] = mapped_column(sa.String(40), default=None)  # file id
    #: blob key of the enriched episode batch (uploaded keys + env_id + initial_reset_timestamp)
    episode_batch_key: Mapped[str | None] = mapped_column(sa.String(300), default=None)
    #: sha256 hex of that blob, checked whenever it is read (NULL: stored before hashes were recorded)
    episode_batch_sha256: Mapped[str | None] = mapped_column(sa.String(64), default=None)
    # -- "solved" statistics (palaestra.solved_stats.SolvedStats) and what they were scored against --
    trials: Mapped[int] = mapped_column(default=100)
    reward_threshold: Mapped[float | None] = mapped_column(sa.Float, default=None)
    solved: Mapped[bool] = mapped_column(default=False)
    episode_t_value: Mapped[int | None] = mapped_column(default=None)
    timestep_t_value: Mapped[int | None] = mapped_column(sa.BigInteger, default=None)
    mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    error: Mapped[float | None] = mapped_column(sa.Float, default=None)
    number_episodes: Mapped[int] = mapped_column(default=0)
    number_timesteps: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    seconds_to_solve: Mapped[float | None] = mapped_column(sa.Float, default=None)
    seconds_in_total: Mapped[float | None] = mapped_column(sa.Float, default=None)
    episodes_mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    evaluation_episodes: Mapped[int] = mapped_column(default=0, server_default="0")
    evaluation_mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    #: what the unsolved evaluations of a leaderboard are ordered by (``solved_stats.ranking_mean``)
    ranking_mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    #: palaestra.solved_stats.compute_graph_stats output (learning-curve series), or None
    graph_stats: Mapped[dict[str, Any] | None] = mapped_column(default=None, deferred=True)
    #: the benchmark's per-evaluation score (``score_evaluation``), when linked to a known benchmark
    benchmark_score: Mapped[dict[str, Any] | None] = mapped_column(default=None, deferred=True)
    #: [{name, metadata_name, episode_id, content_type, size, key, metadata_key}, ...]
    videos: Mapped[list[Any]] = mapped_column(default=list)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    #: what ran, as uploaded (provenance_wire.Provenance), and the conditions card derived from it
    #: (server/conditions.py); ``conditions_key`` NULL: not recorded (a 2017 upload)
    provenance: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    conditions: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    conditions_key: Mapped[str | None] = mapped_column(sa.String(16), default=None)


class EnvStats(Base):
    """Per-env aggregates for the home page and leaderboards, updated with every new evaluation."""

    __tablename__ = "envs"
    __table_args__ = (sa.Index("ix_envs_group", "group_id", "env_id"),)

    env_id: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    group_id: Mapped[str | None] = mapped_column(sa.String(50), default=None)
    listed: Mapped[bool] = mapped_column(default=False)
    evaluation_count: Mapped[int] = mapped_column(default=0)
    solved_count: Mapped[int] = mapped_column(default=0)
    best_mean: Mapped[float | None] = mapped_column(sa.Float, default=None)
    best_evaluation_id: Mapped[str | None] = mapped_column(sa.String(40), default=None)
    last_evaluation: Mapped[datetime | None] = mapped_column(default=None)


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"
    __table_args__ = (sa.Index("ix_idempotency_keys_created", "created"),)

    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"), primary_key=True)
    key: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    #: "POST /v1/evaluations" and a hash of the body, to refuse a key reused for another request
    request: Mapped[str] = mapped_column(sa.String(200))
    request_hash: Mapped[str] = mapped_column(sa.String(64))
    status_code: Mapped[int] = mapped_column()
    response: Mapped[dict[str, Any]] = mapped_column()
    created: Mapped[datetime] = mapped_column(default=utcnow)


class RateCounter(Base):
    """Hits of one rate-limited subject (``bucket``, e.g. ``invalid_key:203.0.113.7``) in one fixed
    window starting at ``window_start`` (Unix seconds): shared by every process on the database."""

    __tablename__ = "rate_counters"

    bucket: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    window_start: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    hits: Mapped[int] = mapped_column(sa.Integer)


class ScoreLogEntry(Base):
    """One link of the hash chain of scores (:mod:`palaestra.scoreboard.server.archive.scorelog`):
    appended in the transaction that scores the record, never changed."""

    __tablename__ = "score_log"
    __table_args__ = (sa.Index("ix_score_log_record", "kind", "record_id"),)

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    #: "evaluation" or "benchmark_run"
    kind: Mapped[str] = mapped_column(sa.String(20))
    record_id: Mapped[str] = mapped_column(sa.String(40))
    #: sha256 hex of the record's canonical JSON document when it was scored
    record_sha256: Mapped[str] = mapped_column(sa.String(64))
    #: [{"key": blob key, "sha256": hex}, ...]: the record's blobs when it was scored
    blobs: Mapped[list[Any]] = mapped_column(default=list)
    previous_sha256: Mapped[str] = mapped_column(sa.String(64))
    entry_sha256: Mapped[str] = mapped_column(sa.String(64), unique=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)


# --------------------------------------------------------------------------------------------------
# Engine and sessions
# --------------------------------------------------------------------------------------------------


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
        self.is_sqlite = url.startswith("sqlite")
        self._write_lock = threading.Lock() if self.is_sqlite else None
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
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        self._write = sessionmaker(self.write_engine, expire_on_commit=False)

    @staticmethod
    def _sqlite_engine(url: str, echo: bool, begin: str | None) -> Engine:
        # how long a statement waits for another program's lock before the database counts as
        # unavailable (a 503, :mod:`.outage`)
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
    def write(self) -> Iterator[Session]:
        """A session inside one transaction: commit on success, roll back on any exception."""
        if self._write_lock is None:
            with self._write() as session, session.begin():
                yield session
                _run_at_commit(session)
            return
        # SQLite: the connection and the session are set up (and put away) outside the writers'
        # lock, which covers BEGIN IMMEDIATE ... COMMIT only.
        with self.write_engine.connect() as conn, Session(bind=conn, expire_on_commit=False) as session:  # noqa: SIM117
            with self._write_lock, _file_lock(self._lock_file), conn.begin():
                yield session
                session.flush()
                _run_at_commit(session)

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
            with self._write_lock, _file_lock(self._lock_file):
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
def _file_lock(fd: int | None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``fd`` (blocking with the GIL released); nothing if ``fd`` is None."""
    if fd is None or fcntl is None:
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


_UPSERTS: dict[str, Any] = {}


def _env_upsert(dialect: str) -> Any:
    """``INSERT ... ON CONFLICT DO UPDATE`` adding one evaluation to ``envs`` (built once per dialect)."""
    if dialect not in _UPSERTS:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
        table: Any = EnvStats.__table__
        stmt = insert(table).values(
            env_id=sa.bindparam("env_id"),
            group_id=sa.bindparam("group_id"),
            listed=sa.bindparam("listed"),
            evaluation_count=1,
            solved_count=sa.bindparam("solved_count"),
            best_mean=sa.bindparam("best_mean", type_=sa.Float()),
            best_evaluation_id=sa.bindparam("best_evaluation_id", type_=sa.String()),
            last_evaluation=sa.bindparam("last_evaluation", type_=UTCDateTime()),
        )
        current, new = table.c, stmt.excluded
        better = sa.and_(
            new.best_mean.is_not(None), sa.or_(current.best_mean.is_(None), new.best_mean > current.best_mean)
        )
        _UPSERTS[dialect] = stmt.on_conflict_do_update(
            index_elements=[current.env_id],
            set_={
                "group_id": new.group_id,
                "listed": new.listed,
                "evaluation_count": current.evaluation_count + 1,
                "solved_count": current.solved_count + new.solved_count,
                "best_mean": sa.case((better, new.best_mean), else_=current.best_mean),
                "best_evaluation_id": sa.case(
                    (better, new.best_evaluation_id), else_=current.best_evaluation_id
                ),
                "last_evaluation": new.last_evaluation,
            },
        )
    return _UPSERTS[dialect]


def upsert_env_stats(
    session: Session,
    env_id: str,
    group_id: str | None,
    listed: bool,
    mean: float | None,
    solved: bool,
    evaluation_id: str,
    created: datetime,
) -> None:
    """Add one evaluation to the env's aggregates, atomically (INSERT ... ON CONFLICT DO UPDATE),
    last in the transaction and with its COMMIT (:func:`execute_at_commit`): every evaluation of the
    env updates this one row."""
    execute_at_commit(
        session,
        _env_upsert(session.connection().dialect.name),
        {
            "env_id": env_id,
            "group_id": group_id,
            "listed": listed,
            "solved_count": int(solved),
            "best_mean": mean,
            "best_evaluation_id": evaluation_id if mean is not None else None,
            "last_evaluation": created,
        },
    )
