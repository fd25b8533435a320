"""Server configuration: command-line flags, then ``PALAESTRA_*`` environment variables, then defaults.

Defaults are the embedded set-up: a SQLite database and a blob folder under the data directory
(``--data-dir``/``PALAESTRA_DATA_DIR``, by default ``<user data dir>/palaestra/scoreboard``),
listening on 127.0.0.1:8000. ``--database-url postgresql://...`` and ``--storage s3://bucket/prefix``
switch to the scale-out set-up with no other change.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from palaestra.errors import ConfigurationError
from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol.live import LIVE_ABANDONED_AFTER_S

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
#: How long a signed upload URL stays valid.
DEFAULT_UPLOAD_TTL_S = 3600
#: Seconds a stopping server lets requests in flight finish (``--graceful-timeout``).
DEFAULT_GRACEFUL_TIMEOUT_S = 30.0
#: How long a sign-in lasts (the session expires then, however active), and an invite link.
DEFAULT_SESSION_TTL_S = 14 * 24 * 3600
DEFAULT_INVITE_TTL_S = 7 * 24 * 3600
#: How often the server cleans up (``palaestra server gc``) while it runs; 0: never.
DEFAULT_GC_INTERVAL_S = 3600
#: A blob or temporary file younger than this is never removed (an upload may be between writing
#: its bytes and committing its row), nor a pending file that expired less than this long ago.
DEFAULT_GC_GRACE_S = 3600
#: How long an ``Idempotency-Key`` replays its answer (clients retry within minutes; Stripe keeps 24 h).
DEFAULT_IDEMPOTENCY_TTL_S = 24 * 3600
#: How long an uploaded file that no evaluation uses is kept (gc removes it then, and its blobs):
#: clients create the evaluation seconds after the upload; longer than the idempotency TTL, so that a
#: client's replayed answer never names a file gc removed.
DEFAULT_UNUSED_FILE_TTL_S = 48 * 3600

ENV_DATABASE_URL = "PALAESTRA_DATABASE_URL"
ENV_STORAGE = "PALAESTRA_STORAGE"
ENV_DATA_DIR = "PALAESTRA_DATA_DIR"
ENV_PUBLIC_URL = "PALAESTRA_PUBLIC_URL"
ENV_S3_ENDPOINT_URL = "PALAESTRA_S3_ENDPOINT_URL"
ENV_FFPROBE = "PALAESTRA_FFPROBE"
ENV_INLINE_HANDLERS = "PALAESTRA_INLINE_HANDLERS"
ENV_TRUST_PROXY = "PALAESTRA_TRUST_PROXY"
ENV_UPLOAD_SECRET_FILE = "PALAESTRA_UPLOAD_SECRET_FILE"
ENV_READ_ONLY = "PALAESTRA_READ_ONLY"
ENV_AGENT_UNCONFINED = "PALAESTRA_AGENT_UNCONFINED"
#: Host names of a database on this machine (no host at all: a Unix socket).
LOCAL_HOSTS = {None, "", "localhost", "127.0.0.1", "::1"}
#: Integer settings that may also come from the environment (name -> ServerConfig field).
ENV_LIMITS = {
    "PALAESTRA_UPLOAD_TTL_S": "upload_ttl_s",
    "PALAESTRA_MAX_EPISODE_BATCH_BYTES": "max_episode_batch_bytes",
    "PALAESTRA_MAX_VIDEO_ARCHIVE_BYTES": "max_video_archive_bytes",
    "PALAESTRA_MAX_ARCHIVE_MEMBER_BYTES": "max_archive_member_bytes",
    "PALAESTRA_MAX_ARCHIVE_EXPANDED_BYTES": "max_archive_expanded_bytes",
    "PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR": "uploads_per_hour",
    "PALAESTRA_RATE_LIMIT_PENDING_FILES": "max_pending_files",
    "PALAESTRA_RATE_LIMIT_INVALID_KEYS": "invalid_keys_per_window",
    "PALAESTRA_RATE_LIMIT_ANONYMOUS_READS": "anonymous_reads_per_minute",
    "PALAESTRA_RATE_LIMIT_LIVE_RUNS_PER_HOUR": "live_runs_per_hour",
    "PALAESTRA_RATE_LIMIT_LIVE_CHUNKS_PER_MINUTE": "live_chunks_per_minute",
    "PALAESTRA_SESSION_TTL_S": "session_ttl_s",
    "PALAESTRA_INVITE_TTL_S": "invite_ttl_s",
    "PALAESTRA_GC_INTERVAL_S": "gc_interval_s",
    "PALAESTRA_GC_GRACE_S": "gc_grace_s",
    "PALAESTRA_IDEMPOTENCY_TTL_S": "idempotency_ttl_s",
    "PALAESTRA_MIN_FREE_BYTES": "min_free_bytes",
    "PALAESTRA_UNUSED_FILE_TTL_S": "unused_file_ttl_s",
    "PALAESTRA_LIVE_ABANDONED_AFTER_S": "live_abandoned_after_s",
    "PALAESTRA_EMBEDDED_WORKERS": "embedded_workers",
    "PALAESTRA_MAX_AGENT_BYTES": "max_agent_bytes",
    "PALAESTRA_RATE_LIMIT_AGENTS_PER_HOUR": "agents_per_hour",
    "PALAESTRA_AGENT_LEASE_S": "agent_lease_s",
    "PALAESTRA_AGENT_MAX_ATTEMPTS": "agent_max_attempts",
    "PALAESTRA_AGENT_WALL_S": "agent_wall_s",
    "PALAESTRA_AGENT_MATCH_GAMES": "agent_match_games",
    "PALAESTRA_AGENT_MATCH_MOVE_S": "agent_match_move_s",
}
#: Settings that were renamed: the old name is refused with the new one, so that no limit is lost.
RENAMED_ENV = {"PALAESTRA_RATE_LIMIT_PER_MINUTE": "PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR"}
#: The rate limits' defaults (:mod:`..accounts.rate_limits`): far above what one user uploading by hand or a
#: benchmark run sends, low enough that a runaway script or a key-guessing client is stopped.
DEFAULT_UPLOADS_PER_HOUR = 2000
DEFAULT_MAX_PENDING_FILES = 200
DEFAULT_INVALID_KEYS_PER_WINDOW = 100
#: GET/HEAD requests a minute from one address without a key or sign-in (:mod:`..guards.read_limits`): 20 a
#: second, sustained, where a person browsing sends a few a minute (static files are not counted)
DEFAULT_ANONYMOUS_READS_PER_MINUTE = 1200
#: Live runs a user may start per hour: a benchmark of 60 tasks followed live, three times over.
DEFAULT_LIVE_RUNS_PER_HOUR = 200
#: Chunks a user may send per minute: 20 followers each sending 30 (30,000 episodes a minute each).
DEFAULT_LIVE_CHUNKS_PER_MINUTE = 600
#: Agent evaluations (:mod:`..agents.jobs`): the largest ``.onnx`` file accepted (a CleanRL Atari network is
#: 7 MB), agents a user may upload per hour, how long a worker's lease lasts without a heartbeat (it
#: renews it every quarter of that), and how many workers may die on a job before it fails.
DEFAULT_MAX_AGENT_BYTES = 64 * 1024 * 1024
DEFAULT_AGENTS_PER_HOUR = 30
DEFAULT_AGENT_LEASE_S = 60
DEFAULT_AGENT_MAX_ATTEMPTS = 3
#: The wall-clock limit of one job's run in the sandbox (100 Atari episodes at 27,000 steps are minutes).
DEFAULT_AGENT_WALL_S = 3600
#: A Go or Hex agent's matches (:mod:`..agents.matches`): games against each anchor, seconds a move.
DEFAULT_AGENT_MATCH_GAMES = 2
DEFAULT_AGENT_MATCH_MOVE_S = 10


def default_data_dir() -> Path:
    """``<user data dir>/palaestra/scoreboard`` (e.g. ``~/.local/share/palaestra/scoreboard``)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("palaestra")) / "scoreboard"


@dataclass(frozen=True)
class ServerConfig:
    """Everything the service needs to know; build it with :func:`resolve_config`."""

    data_dir: Path
    database_url: str
    storage_url: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    #: the URL clients and browsers reach the service at (``None``: the URL each request came in on)
    public_url: str | None = None
    s3_endpoint_url: str | None = None
    upload_ttl_s: int = DEFAULT_UPLOAD_TTL_S
    max_episode_batch_bytes: int = protocol.MAX_EPISODE_BATCH_BYTES
    max_video_archive_bytes: int = protocol.MAX_VIDEO_ARCHIVE_BYTES
    max_archive_member_bytes: int = protocol.MAX_ARCHIVE_MEMBER_BYTES
    max_archive_expanded_bytes: int = protocol.MAX_ARCHIVE_EXPANDED_BYTES
    #: ffprobe binary used to check every uploaded mp4 (``None``: look on PATH)
    ffprobe: str | None = None
    #: files a user may create per hour, all its keys and every server on the database together
    #: (0: no limit); 429 above it
    uploads_per_hour: int = DEFAULT_UPLOADS_PER_HOUR
    #: files a user may have waiting for their upload (created, not uploaded, not expired; 0: no limit)
    max_pending_files: int = DEFAULT_MAX_PENDING_FILES
    #: requests with an invalid API key one client address may send per 10 minutes (0: no limit)
    invalid_keys_per_window: int = DEFAULT_INVALID_KEYS_PER_WINDOW
    #: reads (GET/HEAD) one client address may send per minute without an API key or a sign-in
    #: (0: no limit); 429 above it
    anonymous_reads_per_minute: int = DEFAULT_ANONYMOUS_READS_PER_MINUTE
    #: live runs a user may create per hour, and chunks a user may send per minute (0: no limit)
    live_runs_per_hour: int = DEFAULT_LIVE_RUNS_PER_HOUR
    live_chunks_per_minute: int = DEFAULT_LIVE_CHUNKS_PER_MINUTE
    #: the upload-signing secret's file (``None``: ``upload-secret.json`` in the data folder; :mod:`.signing`)
    upload_secret_file: Path | None = None
    #: on SIGTERM/SIGINT, how long requests in flight may take to finish before they are cut off
    graceful_timeout_s: float = DEFAULT_GRACEFUL_TIMEOUT_S
    #: seconds between clean-ups in the running server (0: none; ``palaestra server gc`` by hand)
    gc_interval_s: int = DEFAULT_GC_INTERVAL_S
    #: age below which gc leaves blobs, temporary files and just-expired pending files alone
    gc_grace_s: int = DEFAULT_GC_GRACE_S
    #: age after which gc removes a stored ``Idempotency-Key`` answer
    idempotency_ttl_s: int = DEFAULT_IDEMPOTENCY_TTL_S
    #: age (since its bytes arrived) after which gc removes an uploaded file no evaluation uses (0: never)
    unused_file_ttl_s: int = DEFAULT_UNUSED_FILE_TTL_S
    #: ``/v1/health`` answers 503 when the blob store's or the database's disk has less free than
    #: this (``None``: the largest upload accepted, :meth:`largest_upload_bytes`; 0: not checked)
    min_free_bytes: int | None = None
    #: seconds without a new episode after which a live run in progress is shown as abandoned
    live_abandoned_after_s: int = LIVE_ABANDONED_AFTER_S
    #: apply Alembic migrations when the app starts
    migrate_on_start: bool = True
    #: run the busiest handlers on the event loop (``None``: when :attr:`database_is_local`)
    inline_handlers: bool | None = None
    #: seconds a sign-in (web session) and an invite link last
    session_ttl_s: int = DEFAULT_SESSION_TTL_S
    invite_ttl_s: int = DEFAULT_INVITE_TTL_S
    #: believe a reverse proxy's ``X-Forwarded-Proto``/``-For`` (from the addresses in uvicorn's
    #: ``FORWARDED_ALLOW_IPS``, by default 127.0.0.1): the scheme decides whether cookies are Secure
    trust_proxy: bool = False
    #: a read-only archive (:mod:`..guards.readonly`): every read serves, every write is refused, nothing is written
    read_only: bool = False
    #: render a still of an installed env that has no picture from a video (the static mirror does not:
    #: hundreds of envs rendered on the exporting machine would be that machine's, not the board's)
    render_env_pictures: bool = True
    #: agent-evaluation workers the server runs in its own process (threads; 0: none, e.g. when
    #: ``palaestra worker`` runs elsewhere); the rest of the agent settings: see the defaults above
    embedded_workers: int = 1
    max_agent_bytes: int = DEFAULT_MAX_AGENT_BYTES
    agents_per_hour: int = DEFAULT_AGENTS_PER_HOUR
    agent_lease_s: int = DEFAULT_AGENT_LEASE_S
    agent_max_attempts: int = DEFAULT_AGENT_MAX_ATTEMPTS
    agent_wall_s: int = DEFAULT_AGENT_WALL_S
    agent_match_games: int = DEFAULT_AGENT_MATCH_GAMES
    agent_match_move_s: int = DEFAULT_AGENT_MATCH_MOVE_S
    #: run agents without the sandbox where the kernel cannot give one (namespaces forbidden): the
    #: operator's explicit choice (``PALAESTRA_AGENT_UNCONFINED=1``); otherwise the worker refuses to start
    agent_unconfined: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def database_is_local(self) -> bool:
        """SQLite, or PostgreSQL on this machine (a loopback address or a Unix socket): a query
        answers in tens of microseconds, with no network in between."""
        if self.is_sqlite:
            return True
        from sqlalchemy.engine import make_url

        url = make_url(self.database_url)
        # Where libpq connects: the URL's host, else its ?host=, else $PGHOST, else a Unix socket.
        host = url.host or url.query.get("host") or os.environ.get("PGHOST")
        hosts = (host,) if host is None or isinstance(host, str) else tuple(host)  # ?host= repeated
        return all(h in LOCAL_HOSTS or (h or "").startswith("/") for h in hosts)

    def max_upload_bytes(self, purpose: str) -> int:
        return self.max_video_archive_bytes if purpose == "video" else self.max_episode_batch_bytes

    def largest_upload_bytes(self) -> int:
        return max(self.max_video_archive_bytes, self.max_episode_batch_bytes)

    def needed_free_bytes(self) -> int:
        """The free space health asks of each disk (0: none)."""
        return self.largest_upload_bytes() if self.min_free_bytes is None else max(self.min_free_bytes, 0)

    def base_url(self, request_base_url: str) -> str:
        """The public URL, or else the base URL the request came in on (no trailing slash)."""
        return (self.public_url or request_base_url).rstrip("/")

    def with_overrides(self, **kwargs: Any) -> ServerConfig:
        return replace(self, **kwargs)


def normalise_database_url(url: str) -> str:
    """Pick the installed driver: ``postgresql://`` becomes ``postgresql+psycopg://``."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    if not (url.startswith("sqlite") or url.startswith("postgresql")):
        raise ConfigurationError(
            f"Unsupported database URL {url!r}: use sqlite:///PATH or postgresql://USER@HOST:PORT/DB"
        )
    return url


def resolve_config(
    database_url: str | None = None,
    storage: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    host: str | None = None,
    port: int | None = None,
    public_url: str | None = None,
    s3_endpoint_url: str | None = None,
    environ: dict[str, str] | None = None,
    **extra: Any,
) -> ServerConfig:
    """Combine explicit values (flags), ``PALAESTRA_*`` environment variables and defaults."""
    env = os.environ if environ is None else environ
    directory = Path(data_dir or env.get(ENV_DATA_DIR) or default_data_dir()).expanduser().absolute()
    db = database_url or env.get(ENV_DATABASE_URL) or f"sqlite:///{directory / 'scoreboard.sqlite3'}"
    store = storage or env.get(ENV_STORAGE) or str(directory / "blobs")
    h = host or DEFAULT_HOST
    p = DEFAULT_PORT if port is None else int(port)
    public = public_url or env.get(ENV_PUBLIC_URL) or None
    endpoint = (
        s3_endpoint_url
        or env.get(ENV_S3_ENDPOINT_URL)
        or env.get("AWS_ENDPOINT_URL_S3")
        or env.get("AWS_ENDPOINT_URL")
    )
    inline = env.get(ENV_INLINE_HANDLERS, "").strip().lower()
    if "inline_handlers" not in extra and inline:
        if inline not in ("0", "1", "auto"):
            raise ConfigurationError(
                f"{ENV_INLINE_HANDLERS} must be 1, 0 or auto, not {env[ENV_INLINE_HANDLERS]!r}"
            )
        extra["inline_handlers"] = None if inline == "auto" else inline == "1"
    for old_name, new_name in RENAMED_ENV.items():
        if env.get(old_name):
            raise ConfigurationError(f"{old_name} was replaced by {new_name} (see docs/scoreboard.md)")
    trust = env.get(ENV_TRUST_PROXY, "").strip().lower()
    if "trust_proxy" not in extra and trust:
        if trust not in ("0", "1"):
            raise ConfigurationError(f"{ENV_TRUST_PROXY} must be 1 or 0, not {env[ENV_TRUST_PROXY]!r}")
        extra["trust_proxy"] = trust == "1"
    read_only = env.get(ENV_READ_ONLY, "").strip().lower()
    if "read_only" not in extra and read_only:
        if read_only not in ("0", "1"):
            raise ConfigurationError(f"{ENV_READ_ONLY} must be 1 or 0, not {env[ENV_READ_ONLY]!r}")
        extra["read_only"] = read_only == "1"
    unconfined = env.get(ENV_AGENT_UNCONFINED, "").strip().lower()
    if "agent_unconfined" not in extra and unconfined:
        if unconfined not in ("0", "1"):
            raise ConfigurationError(f"{ENV_AGENT_UNCONFINED} must be 1 or 0, not {env[ENV_AGENT_UNCONFINED]!r}")
        extra["agent_unconfined"] = unconfined == "1"
    for name, field_name in ENV_LIMITS.items():
        if field_name not in extra and env.get(name):
            try:
                extra[field_name] = int(env[name])
            except ValueError:
                raise ConfigurationError(f"{name} must be a whole number, not {env[name]!r}") from None
    return ServerConfig(
        data_dir=directory,
        database_url=normalise_database_url(db),
        storage_url=store,
        host=h,
        port=p,
        public_url=public.rstrip("/") if public else None,
        s3_endpoint_url=endpoint,
        ffprobe=env.get(ENV_FFPROBE),
        upload_secret_file=Path(env[ENV_UPLOAD_SECRET_FILE]).expanduser().absolute()
        if env.get(ENV_UPLOAD_SECRET_FILE)
        else None,
        **extra,
    )
