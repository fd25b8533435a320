"""The tables of live runs (migration ``0008_live_runs``), beside :mod:`.scores`'s.

- ``live_evaluations``: one followed run: its owner, env, status (``in_progress`` -> ``sealing`` ->
  ``sealed``; *abandoned* is derived from ``last_episode_at``), the counters kept current by every
  chunk, and once sealed the evaluation it became;
- ``live_sources``: each source's (manifest's) next expected episode index and first reset time;
- ``live_chunks``: every chunk applied, its episodes as arrays, appended as they arrive: sealing reads
  them back from here, never from blobs;
- ``live_derived``: what the pages show of the run, derived as each chunk is applied
  (:mod:`palaestra.scoreboard.server.live.derived`; migration ``0014_live_derived``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from palaestra.scoreboard.server.tables.base import Base, utcnow

__all__ = ["LiveChunkRecord", "LiveDerived", "LiveEvaluation", "LiveSource"]


class LiveEvaluation(Base):
    __tablename__ = "live_evaluations"
    __table_args__ = (
        sa.Index("ix_live_evaluations_env_status", "env_id", "status", "seq"),
        sa.Index("ix_live_evaluations_user_seq", "user_seq", "seq"),
    )

    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(40), unique=True)  # live_...
    user_seq: Mapped[int] = mapped_column(sa.ForeignKey("users.seq"))
    env_id: Mapped[str] = mapped_column(sa.String(200))
    gym_version: Mapped[str | None] = mapped_column(sa.String(200), default=None)
    #: the algorithm's id or name, as the follower gave it (resolved when sealed, as an upload's is)
    algorithm_ref: Mapped[str | None] = mapped_column(sa.String(200), default=None)
    writeup: Mapped[str | None] = mapped_column(sa.Text, default=None)
    #: what the follower named the run (its env id and algorithm, or its directory)
    name: Mapped[str | None] = mapped_column(sa.String(300), default=None)
    #: in_progress -> sealing -> sealed
    status: Mapped[str] = mapped_column(sa.String(20), default="in_progress")
    episodes: Mapped[int] = mapped_column(default=0)
    timesteps: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    #: the rewards of the last (up to) 100 episodes received, for the page's "recent mean"
    recent_rewards: Mapped[list[Any]] = mapped_column(default=list)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    last_episode_at: Mapped[datetime | None] = mapped_column(default=None)
    #: the episode-batch file that sealing stored (set before the evaluation is made, so that a seal
    #: killed half-way resumes with the same file)
    seal_file_id: Mapped[str | None] = mapped_column(sa.String(40), default=None)
    evaluation_id: Mapped[str | None] = mapped_column(sa.String(40), default=None)


class LiveSource(Base):
    __tablename__ = "live_sources"

    live_seq: Mapped[int] = mapped_column(sa.ForeignKey("live_evaluations.seq"), primary_key=True)
    number: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(sa.String(300))
    position: Mapped[int] = mapped_column(default=0)
    initial_reset_timestamp: Mapped[float | None] = mapped_column(sa.Float, default=None)


class LiveChunkRecord(Base):
    """One chunk as it arrived: episodes ``start .. start + episodes`` of one source, as its arrays
    (``t``, ``r``, ``l``, ``type``: "" where the source records none, ``truncated``). A row per chunk,
    not per episode: an update is one INSERT, and reading a run back is one row per chunk
    (bench/live_follow.py)."""

    __tablename__ = "live_chunks"

    live_seq: Mapped[int] = mapped_column(sa.ForeignKey("live_evaluations.seq"), primary_key=True)
    source: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    start: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    episodes: Mapped[int] = mapped_column(sa.Integer)
    arrays: Mapped[dict[str, Any]] = mapped_column()


class LiveDerived(Base):
    """A live run's derivation: ``state`` (what the next chunk continues from, packed by
    :func:`palaestra.scoreboard.server.live.derived.pack`) and ``view`` (the JSON text its page, its
    JSON and compare read), as of ``episodes`` episodes."""

    __tablename__ = "live_derived"

    live_seq: Mapped[int] = mapped_column(sa.ForeignKey("live_evaluations.seq"), primary_key=True)
    episodes: Mapped[int] = mapped_column(sa.Integer)
    state: Mapped[bytes] = mapped_column(sa.LargeBinary)
    view: Mapped[str] = mapped_column(sa.Text)
