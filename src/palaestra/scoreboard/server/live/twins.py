"""An upload of a live run's directory after its seal: the sealed evaluation, not a second one.

The seal makes the evaluation an upload of the finished directory makes (:mod:`.runs`), so uploading
that directory again, with palaestra's client or gym 0.9.4's, answers with the sealed evaluation (200,
:data:`SEALED_TWIN_HEADER` naming the live run) and stores nothing. Evaluation creation
(:func:`palaestra.scoreboard.server.evaluations.create.create_evaluation`, a floor below) is handed
:func:`sealed_twin_answer` by its callers (``POST /v1/evaluations`` and the seal):

- palaestra's client sends the very batch the seal stored: found by its sha256;
- gym 0.9.4's client encodes the same episodes otherwise (its own merge of the stats files, its own
  JSON): found by the episodes themselves (end times, lengths, rewards and types), among the caller's
  sealed runs of that env with as many episodes.
"""

from __future__ import annotations

import logging

import numpy as np
import sqlalchemy as sa
from fastapi import Request, Response

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import BlobDamaged, BlobNotFound
from palaestra.scoreboard.server.evaluations.create import SEALED_TWIN_HEADER
from palaestra.scoreboard.server.evaluations.ingest import IngestError, read_validated_batch
from palaestra.scoreboard.server.evaluations.records import evaluation_record, evaluation_select
from palaestra.scoreboard.server.tables.live import LiveEvaluation
from palaestra.scoreboard.server.tables.scores import Evaluation

__all__ = ["SEALED_TWIN_HEADER", "sealed_twin_answer"]

logger = logging.getLogger("palaestra.scoreboard.api")

#: Sealed runs of the same user, env and episode count compared episode by episode, at most.
MAX_CANDIDATES = 5


def sealed_twin_answer(
    state: ServerState,
    request: Request,
    principal: Principal,
    env_id: str | None,
    batch_sha256: str | None,
    batch: protocol.EpisodeBatch | None,
) -> Response | None:
    """The evaluation of the caller's sealed live run on ``env_id`` whose episodes are ``batch``'s (the
    same stored bytes, else the same episodes), as the answer; else None."""
    if batch_sha256 is None or not env_id:
        return None
    sealed = (
        sa.select(Evaluation.id, LiveEvaluation.id, Evaluation.episode_batch_key, Evaluation.episode_batch_sha256)
        .join(LiveEvaluation, LiveEvaluation.evaluation_id == Evaluation.id)
        .where(
            LiveEvaluation.user_seq == principal.user_seq,
            LiveEvaluation.status == "sealed",
            Evaluation.env_id == env_id,
        )
    )
    with state.db.read() as session:
        found = session.execute(sealed.where(Evaluation.episode_batch_sha256 == batch_sha256).limit(1)).first()
        if found is None and batch is not None and batch.timestamps:
            candidates = session.execute(
                sealed.where(LiveEvaluation.episodes == len(batch.timestamps))
                .order_by(LiveEvaluation.seq.desc())
                .limit(MAX_CANDIDATES)
            ).all()
            found = next((c for c in candidates if _same_episodes(state, c[2], c[3], batch)), None)
        if found is None:
            return None
        row = session.execute(evaluation_select().where(Evaluation.id == found[0])).first()
    if row is None:
        return None
    body = evaluation_record(row).to_object(state.config.base_url(str(request.base_url)))
    return Response(
        body.model_dump_json(),
        status_code=200,
        media_type="application/json",
        headers={SEALED_TWIN_HEADER: found[1]},
    )


def _same_episodes(state: ServerState, key: str | None, sha256: str | None, batch: protocol.EpisodeBatch) -> bool:
    """Whether the stored batch at ``key`` holds ``batch``'s episodes (in the merged order both share)."""
    if key is None:
        return False
    try:
        stored = read_validated_batch(state.store.get_verified(key, sha256))
    except (BlobNotFound, BlobDamaged, IngestError) as e:
        logger.warning("Could not compare with the sealed batch %s (%s)", key, e)
        return False
    for name in ("timestamps", "episode_lengths", "episode_rewards"):
        if not np.array_equal(np.asarray(getattr(stored, name), dtype=float), np.asarray(getattr(batch, name), dtype=float)):
            return False
    return _types(stored) == _types(batch)


def _types(batch: protocol.EpisodeBatch) -> list[str]:
    """Each episode's type (``'t'`` where the batch records none)."""
    n = len(batch.timestamps)
    types: list[str] = [str(t) for t in (batch.episode_types or [])[:n]]
    return types + ["t"] * (n - len(types))
