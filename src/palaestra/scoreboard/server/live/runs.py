"""Live runs on the server: created, appended to chunk by chunk, sealed into an evaluation.

- :func:`create_live`: a new live evaluation, in progress;
- :func:`apply_chunk`: one source's next episodes, appended to ``live_chunks`` in one transaction
  that also advances the source's position and the run's counters (episodes, timesteps, the recent
  rewards) and the pages' derivation (:mod:`.derived`): what a page shows is derived once, as the
  chunk arrives. A chunk already applied is acknowledged and changes nothing; the same sequence number
  with other episodes, a gap or a partial overlap is refused (409) with the next expected start;
- :func:`seal`: the stored episodes merged exactly as ``load_results`` merges the directory's stats
  files (:func:`palaestra.monitoring.results.merge_stats_documents`), encoded as the upload client
  encodes them (:func:`palaestra.scoreboard.protocol.batches.encode_episode_batch`), stored as an
  uploaded episode-batch file and made into an evaluation by ``POST /v1/evaluations``'s own code
  (:func:`palaestra.scoreboard.server.evaluations.create.create_evaluation`). So a
  sealed live evaluation is the evaluation an upload of the finished directory makes, byte for byte.
- :func:`live_object`: the wire answer, with *abandoned* derived from the silence since the last episode.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from fastapi import Request
from sqlalchemy.orm import Session

from palaestra.episodes import Episodes
from palaestra.monitoring.results import merge_stats_documents
from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol.batches import encode_episode_batch
from palaestra.scoreboard.protocol.live import (
    MAX_CHUNK_EPISODES,
    LiveChunk,
    LiveChunkAnswer,
    LiveEvaluationCreate,
    LiveEvaluationObject,
    LiveSeal,
    live_web_path,
)
from palaestra.scoreboard.server.accounts import rate_limits
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import sha256_of
from palaestra.scoreboard.server.evaluations.create import create_evaluation
from palaestra.scoreboard.server.live import derived as live_derived
from palaestra.scoreboard.server.live import twins
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.base import utcnow
from palaestra.scoreboard.server.tables.live import LiveChunkRecord, LiveDerived, LiveEvaluation, LiveSource
from palaestra.scoreboard.server.tables.service import FileRecord

__all__ = [
    "apply_chunk",
    "check_new_live_run",
    "create_live",
    "live_object",
    "live_view",
    "load_live",
    "seal",
    "stored_documents",
]

#: how many of the last rewards the recent mean is taken over (the 2017 solving window's size)
RECENT_WINDOW = 100


def live_object(
    state: ServerState, live: LiveEvaluation, sources: dict[str, int], owner: str | None, base: str = ""
) -> LiveEvaluationObject:
    now = utcnow()
    silence = None if live.last_episode_at is None else (now - live.last_episode_at).total_seconds()
    since = silence if silence is not None else (now - live.created).total_seconds()
    status = live.status
    if status == "in_progress" and since > state.config.live_abandoned_after_s:
        status = "abandoned"
    recent = live.recent_rewards or []
    return LiveEvaluationObject(
        id=live.id,
        env=live.env_id,
        status=status,  # type: ignore[arg-type]
        owner=owner,
        episodes=live.episodes,
        timesteps=live.timesteps,
        created=live.created,
        last_episode_at=live.last_episode_at,
        seconds_since_last_episode=silence,
        sources=sources,
        recent_mean=_finite_mean(recent),
        evaluation_id=live.evaluation_id,
        name=live.name,
        web_url=base + live_web_path(live.id),
    )


def _finite_mean(values: list[float]) -> float | None:
    """The mean of ``values``; None for none, or for a sum beyond a float (two rewards of 1e308)."""
    mean = sum(values) / len(values) if values else None
    return mean if mean is not None and math.isfinite(mean) else None


def load_live(session: Session, live_id: str) -> tuple[LiveEvaluation, dict[str, int], str | None]:
    """The live evaluation ``live_id``, its sources' positions and its owner's name (404 if none)."""
    live = session.scalar(sa.select(LiveEvaluation).where(LiveEvaluation.id == live_id))
    if live is None:
        raise Problem(404, f"No such live evaluation: {live_id!r}.")
    rows = session.execute(
        sa.select(LiveSource.name, LiveSource.position).where(LiveSource.live_seq == live.seq)
    ).all()
    owner = session.scalar(sa.select(User.name).where(User.seq == live.user_seq))
    return live, {name: position for name, position in rows}, owner


def check_new_live_run(state: ServerState, session: Session, user_seq: int) -> None:
    """429 if the user started ``live_runs_per_hour`` live runs in the last hour (counted from their
    table in ``session``, the transaction that would create one)."""
    limit = state.config.live_runs_per_hour
    if limit <= 0:
        return
    since = state.clock.now() - timedelta(seconds=rate_limits.UPLOAD_WINDOW_S)
    created = LiveEvaluation.created
    times = list(
        session.scalars(
            sa.select(created)
            .where(LiveEvaluation.user_seq == user_seq, created > since)
            .order_by(created.desc())
            .limit(limit)
        )
    )
    if len(times) >= limit:
        wait = (times[-1] - since).total_seconds()
        raise rate_limits.too_many(
            f"Too many live runs: this server accepts {limit} new live runs per user and hour, and you "
            f"started {len(times)} in the last hour. Try again in {math.ceil(wait / 60)} min, or ask the "
            "server's operator to raise PALAESTRA_RATE_LIMIT_LIVE_RUNS_PER_HOUR.",
            wait,
        )


def create_live(session: Session, principal: Principal, body: LiveEvaluationCreate) -> LiveEvaluation:
    live = LiveEvaluation(
        id=new_id("live_evaluation"),
        user_seq=principal.user_seq,
        env_id=body.env,
        gym_version=body.gym_version,
        algorithm_ref=body.algorithm.id if body.algorithm else None,
        writeup=body.writeup,
        name=body.name,
        status="in_progress",
        episodes=0,
        timesteps=0,
        recent_rewards=[],
        created=utcnow(),
    )
    session.add(live)
    session.flush()
    return live


def _check_owner(live: Any, principal: Principal, live_id: str) -> None:
    """404 for a live evaluation that does not exist, 403 for another user's."""
    if live is None:
        raise Problem(404, f"No such live evaluation: {live_id!r}.")
    if live.user_seq != principal.user_seq:
        raise Problem(
            403,
            f"Live evaluation {live_id} belongs to another user; only the API key of its owner may add "
            "episodes to it or seal it.",
        )


def _own_live(session: Session, principal: Principal, live_id: str, *, for_update: bool) -> LiveEvaluation:
    query = sa.select(LiveEvaluation).where(LiveEvaluation.id == live_id)
    live = session.scalar(query.with_for_update() if for_update else query)
    _check_owner(live, principal, live_id)
    assert live is not None  # _check_owner refused a missing one
    return live


_LIVE: sa.Table = LiveEvaluation.__table__  # type: ignore[assignment]
_SOURCES: sa.Table = LiveSource.__table__  # type: ignore[assignment]
_CHUNKS: sa.Table = LiveChunkRecord.__table__  # type: ignore[assignment]
# Core statements, built once: an update is five short statements in one transaction (the ORM's
# unit of work made it twice as expensive, bench/live_follow.py).
_DERIVED: sa.Table = LiveDerived.__table__  # type: ignore[assignment]
_LIVE_FOR_CHUNK = sa.select(
    _LIVE.c.seq, _LIVE.c.user_seq, _LIVE.c.status, _LIVE.c.evaluation_id, _LIVE.c.recent_rewards,
    _LIVE.c.env_id, _LIVE.c.gym_version, _LIVE.c.episodes,
).where(_LIVE.c.id == sa.bindparam("live_id"))
_SOURCE = sa.select(_SOURCES.c.number, _SOURCES.c.position, _SOURCES.c.initial_reset_timestamp).where(
    _SOURCES.c.live_seq == sa.bindparam("live_seq"), _SOURCES.c.name == sa.bindparam("name")
)
_SOURCE_COUNT = (
    sa.select(sa.func.count()).select_from(_SOURCES).where(_SOURCES.c.live_seq == sa.bindparam("live_seq"))
)
_ADVANCE_SOURCE = (
    sa.update(_SOURCES)
    .where(
        _SOURCES.c.live_seq == sa.bindparam("b_live"),
        _SOURCES.c.number == sa.bindparam("b_number"),
        _SOURCES.c.position == sa.bindparam("old_position"),
    )
    .values(position=sa.bindparam("new_position"), initial_reset_timestamp=sa.bindparam("initial"))
)
_COUNT_EPISODES = (
    sa.update(_LIVE)
    .where(_LIVE.c.seq == sa.bindparam("b_live"))
    .values(
        episodes=_LIVE.c.episodes + sa.bindparam("n"),
        timesteps=_LIVE.c.timesteps + sa.bindparam("steps"),
        recent_rewards=sa.bindparam("recent", type_=_LIVE.c.recent_rewards.type),
        last_episode_at=sa.bindparam("now", type_=_LIVE.c.last_episode_at.type),
    )
)


def apply_chunk(state: ServerState, principal: Principal, live_id: str, chunk: LiveChunk) -> LiveChunkAnswer:
    """Append ``chunk`` to its source, or acknowledge it as already applied; all or nothing."""
    n = len(chunk.timestamps)
    if n > MAX_CHUNK_EPISODES:
        raise Problem(
            413,
            f"The chunk has {n} episodes; a chunk carries at most {MAX_CHUNK_EPISODES}. Send them in "
            "several chunks.",
            "timestamps",
        )
    with state.db.write() as session:
        conn = session.connection()
        live = conn.execute(_LIVE_FOR_CHUNK.with_for_update(), {"live_id": live_id}).first()
        _check_chunk_target(live, principal, live_id)
        assert live is not None
        source = conn.execute(_SOURCE, {"live_seq": live.seq, "name": chunk.source}).first()
        position = source.position if source is not None else 0
        if chunk.start + n <= position:  # applied before (a retry, or a resend after an outage)
            _check_replay(conn, live.seq, source.number if source is not None else 0, chunk, live_id)
            return LiveChunkAnswer(source=chunk.source, applied=False, position=position)
        if chunk.start != position:
            raise Problem(
                409,
                f"Source {chunk.source!r} of live evaluation {live_id} expects the chunk starting at episode "
                f"{position} next, not {chunk.start}; nothing was stored. Send its episodes from {position}.",
                "start",
            )
        if source is None:
            number = int(conn.scalar(_SOURCE_COUNT, {"live_seq": live.seq}) or 0)
            conn.execute(
                sa.insert(_SOURCES),
                {"live_seq": live.seq, "number": number, "name": chunk.source, "position": 0,
                 "initial_reset_timestamp": chunk.initial_reset_timestamp},
            )  # fmt: skip
            initial = chunk.initial_reset_timestamp
        else:
            number = source.number
            initial = (
                source.initial_reset_timestamp
                if source.initial_reset_timestamp is not None
                else chunk.initial_reset_timestamp
            )
        _append(conn, live, number, position, initial, chunk)
        _derive(conn, live, number, initial, chunk)
    return LiveChunkAnswer(source=chunk.source, applied=True, position=position + n)


def _check_chunk_target(live: Any, principal: Principal, live_id: str) -> None:
    _check_owner(live, principal, live_id)
    if live.status in ("sealing", "sealed"):
        raise Problem(
            409,
            f"Live evaluation {live_id} was sealed"
            + (f" as {live.evaluation_id}" if live.evaluation_id else "")
            + "; it takes no more episodes. Record a new run to add more.",
            "status",
        )


def _append(
    conn: sa.Connection, live: Any, number: int, position: int, initial: float | None, chunk: LiveChunk
) -> None:
    n = len(chunk.timestamps)
    if n:
        arrays = {
            "t": chunk.timestamps,
            "r": chunk.episode_rewards,
            "l": chunk.episode_lengths,
            "type": chunk.episode_types,  # None: the source records no types
            "truncated": chunk.episode_truncated,
        }
        row = {"live_seq": live.seq, "source": number, "start": position, "episodes": n, "arrays": arrays}
        conn.execute(sa.insert(_CHUNKS), row)
    params = {"b_live": live.seq, "b_number": number, "old_position": position, "new_position": position + n}
    if conn.execute(_ADVANCE_SOURCE, {**params, "initial": initial}).rowcount != 1:
        raise Problem(
            409, f"Source {chunk.source!r} of live evaluation moved on meanwhile; ask where it is.", "start"
        )
    if n:
        recent = [*(live.recent_rewards or []), *chunk.episode_rewards][-RECENT_WINDOW:]
        conn.execute(
            _COUNT_EPISODES,
            {
                "b_live": live.seq,
                "n": n,
                "steps": sum(chunk.episode_lengths),
                "recent": recent,
                "now": utcnow(),
            },
        )


_CHUNKS_BETWEEN = sa.select(_CHUNKS.c.start, _CHUNKS.c.arrays).where(
    _CHUNKS.c.live_seq == sa.bindparam("live_seq"),
    _CHUNKS.c.source == sa.bindparam("source"),
    _CHUNKS.c.start < sa.bindparam("end"),
    _CHUNKS.c.start + _CHUNKS.c.episodes > sa.bindparam("begin"),
).order_by(_CHUNKS.c.start)


def _check_replay(conn: sa.Connection, live_seq: int, number: int, chunk: LiveChunk, live_id: str) -> None:
    """A chunk already applied is acknowledged only if it carries the episodes stored: the same
    sequence number with other data is a second run writing into this one, or a rewritten journal."""
    n = len(chunk.timestamps)
    if not n:
        return
    stored: dict[str, list[Any]] = {"t": [], "r": [], "l": [], "type": [], "truncated": []}
    rows = conn.execute(
        _CHUNKS_BETWEEN, {"live_seq": live_seq, "source": number, "begin": chunk.start, "end": chunk.start + n}
    ).all()
    for start, arrays in rows:
        lo, hi = max(chunk.start - start, 0), chunk.start + n - start
        size = len(arrays["t"])
        for key in stored:
            values = arrays.get(key)
            stored[key].extend(values[lo:hi] if values is not None else [None] * len(range(size)[lo:hi]))
    sent: dict[str, list[Any] | None] = {
        "t": chunk.timestamps,
        "r": chunk.episode_rewards,
        "l": chunk.episode_lengths,
        "type": chunk.episode_types,
        "truncated": chunk.episode_truncated,
    }
    first = chunk.start + len(stored["t"]) if len(stored["t"]) != n else None
    for key, values in sent.items():
        if values is None:  # not sent: compared only where it was
            continue
        ours = stored[key]
        if key == "truncated":
            ours = [bool(x) for x in ours]
        elif key == "type" and all(x is None for x in ours):
            ours = ["t"] * len(ours)  # stored without types: every episode a training one
        differs = next((i for i, (a, b) in enumerate(zip(values, ours, strict=False)) if a != b), None)
        if differs is not None:
            first = chunk.start + differs if first is None else min(first, chunk.start + differs)
    if first is not None:
        raise Problem(
            409,
            f"Source {chunk.source!r} of live evaluation {live_id} already has episodes {chunk.start} to "
            f"{chunk.start + n - 1} (sequence number {chunk.start}), and they differ from this chunk's from "
            f"episode {first} on; nothing was changed. A chunk is resent only as it was: a different run "
            "recording into the same directory needs its own live evaluation (a new directory).",
            "source",
        )


def _derive(conn: sa.Connection, live: Any, number: int, initial: float | None, chunk: LiveChunk) -> None:
    """Continue the run's derivation with ``chunk`` (just appended), or derive it from every chunk."""
    if not chunk.timestamps:
        return
    row = conn.execute(sa.select(_DERIVED.c.state).where(_DERIVED.c.live_seq == live.seq)).first()
    state: dict[str, Any] | None = None
    if row is not None:
        state = live_derived.advance(
            live_derived.unpack(row.state), number, initial, chunk.timestamps, chunk.episode_rewards, chunk.episode_lengths,
            chunk.episode_types,
        )  # fmt: skip
    elif live.episodes == 0:
        state = live_derived.advance(
            live_derived.empty_state(live.env_id, live.gym_version), number, initial, chunk.timestamps,
            chunk.episode_rewards, chunk.episode_lengths, chunk.episode_types,
        )  # fmt: skip
    if state is None:  # older than what was folded, or a run from before the derivations
        state = _rebuild(conn, live.seq, live.env_id, live.gym_version)
    values = {
        "episodes": len(state["tail"]["t"]) + state["folded"]["n"],
        "state": live_derived.pack(state),
        "view": json.dumps(live_derived.view_of(state), allow_nan=False),
    }
    if row is None:
        conn.execute(sa.insert(_DERIVED), {"live_seq": live.seq, **values})
    else:
        conn.execute(sa.update(_DERIVED).where(_DERIVED.c.live_seq == live.seq).values(**values))


def _rebuild(conn: sa.Connection, live_seq: int, env_id: str, gym_version: str | None) -> dict[str, Any]:
    """The derivation of every stored chunk of the run (merged as the seal merges them)."""
    documents, numbers = _documents_and_numbers(conn, live_seq)
    merged = merge_stats_documents(documents) if documents else None
    if merged is None or not merged["timestamps"]:
        return live_derived.empty_state(env_id, gym_version)
    kept = [number for number, doc in zip(numbers, documents, strict=True) if doc["timestamps"]]
    resets = {number: float(doc["initial_reset_timestamp"] if doc["initial_reset_timestamp"] is not None
                            else doc["timestamps"][0])
              for number, doc in zip(numbers, documents, strict=True) if doc["timestamps"]}  # fmt: skip
    episodes = Episodes.from_results(merged)
    sources = [kept[i] for i in merged["data_sources"]]
    return live_derived.rebuild(env_id, gym_version, episodes, sources, resets)


def live_view(session: Session, live: LiveEvaluation) -> dict[str, Any]:
    """What the pages show of ``live``: its stored derivation (:func:`.derived.view_of`), or for
    a run from before the derivations (or imported from an archive), one derived now."""
    view = session.scalar(sa.select(_DERIVED.c.view).where(_DERIVED.c.live_seq == live.seq))
    if view is not None:
        return dict(json.loads(view))
    return live_derived.view_of(_rebuild(session.connection(), live.seq, live.env_id, live.gym_version))


def stored_documents(session: Session | sa.Connection, live_seq: int) -> list[dict[str, Any]]:
    """Each source's stats document, read back from ``live_chunks``, in manifest-name order (the
    order ``load_results`` reads a directory's manifests in)."""
    sources = session.execute(
        sa.select(_SOURCES.c.number, _SOURCES.c.initial_reset_timestamp)
        .where(_SOURCES.c.live_seq == live_seq)
        .order_by(_SOURCES.c.name)
    ).all()
    chunks = session.execute(
        sa.select(_CHUNKS.c.source, _CHUNKS.c.episodes, _CHUNKS.c.arrays)
        .where(_CHUNKS.c.live_seq == live_seq)
        .order_by(_CHUNKS.c.source, _CHUNKS.c.start)
    ).all()
    by_source: dict[int, list[Any]] = {}
    for chunk in chunks:
        by_source.setdefault(chunk.source, []).append(chunk)
    return [_document(initial, by_source.get(number, [])) for number, initial in sources]


def _documents_and_numbers(session: Session | sa.Connection, live_seq: int) -> tuple[list[dict[str, Any]], list[int]]:
    """:func:`stored_documents` and each one's source number."""
    numbers = list(
        session.scalars(
            sa.select(_SOURCES.c.number).where(_SOURCES.c.live_seq == live_seq).order_by(_SOURCES.c.name)
        )
    )
    return stored_documents(session, live_seq), numbers


def _document(initial: float | None, chunks: list[Any]) -> dict[str, Any]:
    """A stats document (:meth:`palaestra.episodes.Episodes.to_stats_document`'s keys) of one source's chunks."""
    doc: dict[str, Any] = {
        "initial_reset_timestamp": initial,
        "abandoned_steps": [],
        "abandoned_timestamps": [],
    }
    for key, field in (("timestamps", "t"), ("episode_rewards", "r"), ("episode_lengths", "l")):
        doc[key] = [x for c in chunks for x in c.arrays[field]]
    typed = all(c.arrays.get("type") is not None for c in chunks)
    doc["episode_types"] = [x for c in chunks for x in c.arrays["type"]] if typed and chunks else None
    doc["episode_truncated"] = [
        bool(x) for c in chunks for x in (c.arrays.get("truncated") or [False] * c.episodes)
    ]
    return doc


# -- sealing -----------------------------------------------------------------------------------------


def seal(state: ServerState, principal: Principal, live_id: str, request: Request, body: LiveSeal) -> None:
    """Make the live evaluation's evaluation, once; each step can be rerun after a kill.

    ``body`` brings what the follower read from the finished directory besides the episodes (its
    video archive, its provenance), so that the evaluation equals an upload of that directory. A seal
    refused (a video file that is not the caller's, a batch the store cannot take) leaves the run in
    progress: it takes chunks again and can be sealed again, the problem saying why."""
    with state.db.write() as session:
        live = _own_live(session, principal, live_id, for_update=True)
        if live.status == "sealed":
            return
        if live.episodes == 0:
            raise Problem(
                400,
                f"Live evaluation {live_id} has no episodes yet; an evaluation is scored on its episodes, "
                "so there is nothing to seal.",
            )
        live.status = "sealing"  # from now on chunks are refused: the batch below is the last word
        file_id, env_id = live.seal_file_id, live.env_id
    try:
        if file_id is None:
            file_id = _store_final_batch(state, principal, live_id)
        evaluation_id = _evaluation_of_file(state, file_id)
        if evaluation_id is None:
            evaluation_id = _create_evaluation(state, principal, live_id, file_id, env_id, request, body)
    except Problem as refused:
        if refused.status >= 500:  # an outage: the seal resumes where it stopped when asked again
            raise
        _reopen(state, principal, live_id)
        raise Problem(
            refused.status,
            f"Live evaluation {live_id} was not sealed: {refused.detail} It is in progress again and takes "
            "episodes; seal it again once this is mended.",
            refused.param,
            headers=refused.headers,
        ) from None
    with state.db.write() as session:
        live = _own_live(session, principal, live_id, for_update=True)
        live.status, live.evaluation_id = "sealed", evaluation_id


def _reopen(state: ServerState, principal: Principal, live_id: str) -> None:
    """A refused seal: the run in progress again, its stored batch forgotten (chunks may follow it;
    the unused file is removed by gc as any unused upload)."""
    with state.db.write() as session:
        live = _own_live(session, principal, live_id, for_update=True)
        if live.status == "sealing" and live.evaluation_id is None:
            live.status, live.seal_file_id = "in_progress", None


def _store_final_batch(state: ServerState, principal: Principal, live_id: str) -> str:
    """Store the merged episodes as an uploaded episode-batch file of the owner's; its id."""
    with state.db.read() as session:
        live = _own_live(session, principal, live_id, for_update=False)
        merged = merge_stats_documents(stored_documents(session, live.seq))
    # No upload cap here: that cap guards the server from what a client sends, and these episodes were
    # checked chunk by chunk as they came; a run longer than one upload may carry still seals.
    data = encode_episode_batch(merged, f"live evaluation {live_id}")
    file_id = new_id("file")
    key = f"files/{file_id}.live"
    state.store.put_bytes(key, data)
    now = utcnow()
    with state.db.write() as session:
        live = _own_live(session, principal, live_id, for_update=True)
        if live.seal_file_id is not None:  # a concurrent seal stored its batch first
            state.store.delete(key)
            return live.seal_file_id
        session.add(
            FileRecord(
                id=file_id,
                user_seq=principal.user_seq,
                purpose="episode_batch",
                content_type=protocol.default_content_type("episode_batch"),
                status="uploaded",
                storage_key=key,
                size=len(data),
                max_bytes=max(len(data), state.config.max_episode_batch_bytes),
                expires=now,
                created=now,
                uploaded=now,
                ingest={"episodes": len(merged["timestamps"])},
                sha256=sha256_of(data),
            )
        )
        live.seal_file_id = file_id
    return file_id


def _evaluation_of_file(state: ServerState, file_id: str) -> str | None:
    with state.db.connect() as conn:
        return conn.scalar(sa.select(FileRecord.evaluation_id).where(FileRecord.id == file_id))


def _create_evaluation(
    state: ServerState,
    principal: Principal,
    live_id: str,
    file_id: str,
    env_id: str,
    request: Request,
    sealed: LiveSeal,
) -> str:
    """``POST /v1/evaluations``'s own code, on the stored batch: one implementation of an evaluation."""
    with state.db.read() as session:
        live = _own_live(session, principal, live_id, for_update=False)
        body = protocol.EvaluationCreate(
            training_episode_batch=file_id,
            training_video=sealed.training_video,
            provenance=sealed.provenance,
            env=env_id,
            algorithm=protocol.AlgorithmRef(id=live.algorithm_ref) if live.algorithm_ref else None,
            writeup=live.writeup,
            gym_version=live.gym_version,
        )
    response = create_evaluation(body, request, principal, state, twins.sealed_twin_answer)
    return str(json.loads(bytes(response.body))["id"])
