"""Creating an evaluation (``POST /v1/evaluations``, and sealing a live run): one upload of a training
directory (its episode batch and video archive), scored once, when it is created.

:func:`create_evaluation` runs in named stages: :func:`_check_references` (the files, benchmark run and
algorithm the request names: :mod:`.files`, :mod:`.owners`), :func:`_read_content` (the episodes and
videos; a file uploaded straight to S3 is validated now, :mod:`.uploads`, every other one was validated
when it arrived), :func:`_score` (solved statistics, the page's curves and the benchmark's TaskScores:
:mod:`.derive`) and :func:`_insert`: one transaction that adds the evaluation, claims its files, adds it
to its env's aggregates and stores the idempotent answer. A server killed at any point leaves either
the whole evaluation or none of it.

Uploading episodes the uploader already made into an evaluation answers that evaluation (200,
``already_uploaded``), or refuses other details for it (409): :mod:`.repeats` holds the rule. The
directory of a live run sealed before is such a repeat (the answer with :data:`SEALED_TWIN_HEADER`): the
caller passes the :data:`TwinFinder` that finds it also where gym 0.9.4's client encoded the episodes
otherwise (:func:`palaestra.scoreboard.server.live.twins.sealed_twin_answer`, a floor above this one).

A caller may add to the evaluation with an :class:`Extra`: columns of its row, and work done in its
insert's transaction (a worker marks the board's own evaluation of an agent verified, and its job done,
so: :mod:`palaestra.scoreboard.server.agents.worker`).

Answers render :class:`~palaestra.scoreboard.server.evaluations.records.EvaluationRecord`, as the web
pages do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from fastapi import Request, Response
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol import EpisodeBatch
from palaestra.scoreboard.protocol.provenance import Provenance
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.core.answers import JSON, Idempotency
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import BlobDamaged, BlobNotFound, FileStore
from palaestra.scoreboard.server.evaluations import benchmarking, index_stats, repeats, scorelog
from palaestra.scoreboard.server.evaluations.conditions import conditions_key, derive_conditions
from palaestra.scoreboard.server.evaluations.derive import EvaluationScoring, derive_evaluation
from palaestra.scoreboard.server.evaluations.files import load_files, own_file
from palaestra.scoreboard.server.evaluations.ingest import IngestError, read_validated_batch
from palaestra.scoreboard.server.evaluations.owners import find_algorithm, own_run, resolve_algorithm
from palaestra.scoreboard.server.evaluations.records import (
    EvaluationRecord,
    StoredVideo,
)
from palaestra.scoreboard.server.evaluations.uploads import ingest_remote
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.base import snapshot, utcnow
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, Evaluation, upsert_env_stats
from palaestra.scoreboard.server.tables.service import FileRecord

__all__ = ["BATCH", "SEALED_TWIN_HEADER", "VIDEO", "Extra", "TwinFinder", "create_evaluation"]

logger = logging.getLogger("palaestra.scoreboard.api")

_INSERT_EVALUATION = sa.insert(Evaluation)

_CLAIM_FILES = (
    sa.update(FileRecord)
    .where(FileRecord.id.in_(sa.bindparam("file_ids", expanding=True)), FileRecord.evaluation_id.is_(None))
    .values(evaluation_id=sa.bindparam("evaluation_id"))
)

_RUN_STATUS = sa.select(BenchmarkRun.status).where(BenchmarkRun.seq == sa.bindparam("run_seq"))

BATCH, VIDEO = "training_episode_batch", "training_video"

#: On the answer to ``POST /v1/evaluations`` for the directory of a live run already sealed: the
#: live run whose evaluation the answer is (200), no new one.
SEALED_TWIN_HEADER = "Palaestra-Sealed-Live-Evaluation"

#: ``(state, request, principal, env_id, batch_sha256, batch)``: the answer for an upload whose episodes
#: a sealed live run of the caller's already made into an evaluation (with :data:`SEALED_TWIN_HEADER`),
#: else None (:func:`palaestra.scoreboard.server.live.twins.sealed_twin_answer`).
TwinFinder = Callable[[ServerState, Request, Principal, str | None, str | None, EpisodeBatch | None], Response | None]


@dataclass(frozen=True)
class Extra:
    """What a caller of :func:`create_evaluation` adds to the evaluation: ``columns`` of its row, and
    ``within(session, evaluation_id)``, run in its insert's transaction (raising rolls it all back).
    The board's own agent evaluations are marked verified so
    (:mod:`palaestra.scoreboard.server.agents.worker`)."""

    columns: dict[str, Any]
    within: Callable[[Session, str], None]


def create_evaluation(
    body: protocol.EvaluationCreate,
    request: Request,
    principal: Principal,
    state: ServerState,
    find_twin: TwinFinder | None = None,
    extra: Extra | None = None,
) -> Response:
    """What ``POST /v1/evaluations`` does, in this thread: the answer (201; or 200 for a repeat: the
    evaluation of a retried request, of the same episodes uploaded before (:mod:`.repeats`), or, through
    ``find_twin``, of a live run sealed before); ``extra``: what a worker adds to the evaluation of an
    agent it ran."""
    if not body.env:
        raise Problem(
            400, "Missing required parameter 'env' (the env id the episodes were recorded on).", "env"
        )
    idempotency = Idempotency.of(request, principal, body)
    if (stored := idempotency.stored_answer(state.db)) is not None:
        return repeats.replayed(stored)  # before any work: a retried request finds its evaluation made
    refs = _check_references(state, principal, body)
    _check_benchmark_env(body.env, refs)
    content = _Content()
    try:
        response = _score_and_insert(
            state, request, principal, body, idempotency, refs, content, find_twin, extra
        )
    except BaseException:
        _delete_quietly(state, content.stored_keys)  # copies no evaluation references
        raise
    if response.status_code != 201:  # made before (a repeat): nothing of this request is referenced
        _delete_quietly(state, content.stored_keys)
    else:
        # what the client uploaded straight to the store was copied; the copies are what count
        _delete_quietly(state, content.uploaded_keys)
        if refs.run is not None:
            benchmarking.score_run(state.db, refs.run.id)
    return response


def _score_and_insert(
    state: ServerState,
    request: Request,
    principal: Principal,
    body: protocol.EvaluationCreate,
    idempotency: Idempotency,
    refs: _References,
    content: _Content,
    find_twin: TwinFinder | None,
    extra: Extra | None = None,
) -> Response:
    _read_content(state, refs, content)
    twin = (
        None
        if refs.run or extra or find_twin is None
        else find_twin(state, request, principal, body.env, content.batch_sha256, content.batch)
    )
    if twin is not None:  # the directory of a live run sealed before: its evaluation, nothing new
        sealed = protocol.EvaluationObject.model_validate_json(bytes(twin.body))
        answer = repeats.repeat_of(sealed, _asked_details(body, refs))
        return Response(answer.model_dump_json(), 200, {SEALED_TWIN_HEADER: twin.headers[SEALED_TWIN_HEADER]}, JSON)
    if content.batch is None or not content.batch.episode_lengths:
        raise Problem(
            400,
            f"An evaluation is scored on its episodes, and this one has none: upload the completed episodes "
            f"of the {body.env} run (purpose 'episode_batch') and pass the file as {BATCH}.",
            BATCH,
        )
    scored = _score(body.env or "", body.gym_version, refs, content)
    videos = [v.stored() for v in content.videos]
    content.blobs = scorelog.evaluation_blobs(state.store, content.batch_key, content.batch_sha256, videos)
    new = _NewEvaluation(
        new_id("evaluation"),
        body,
        principal,
        refs,
        content,
        scored,
        state.config.base_url(str(request.base_url)),
        extra,
    )
    return idempotency.create(state.db, lambda session: _insert(state, session, new))


def _asked_details(body: protocol.EvaluationCreate, refs: _References) -> repeats.Details:
    """The details an upload asks for, as :mod:`.repeats` compares them with an evaluation's."""
    algorithm = refs.algorithm.id if refs.algorithm else refs.algorithm_ref
    label = refs.algorithm.name if refs.algorithm else refs.algorithm_ref
    return repeats.Details(algorithm, body.writeup, label)


def _delete_quietly(state: ServerState, keys: list[str]) -> None:
    """Remove blobs that nothing references; one that stays is left for ``palaestra server gc``."""
    for key in keys:
        try:
            state.store.delete(key)
        except Exception as e:
            logger.warning("Could not delete the unreferenced blob %s (%s); gc will", key, e)


@dataclass
class _References:
    """What the request names, checked: its files, its open benchmark run, its algorithm."""

    batch: FileRecord | None = None
    video: FileRecord | None = None
    run: BenchmarkRun | None = None
    run_algorithm: Algorithm | None = None
    #: the algorithm's id or name, and the algorithm if it exists (else it is created with the evaluation)
    algorithm_ref: str | None = None
    algorithm: Algorithm | None = None

    @property
    def files(self) -> list[FileRecord]:
        return [f for f in (self.batch, self.video) if f is not None]


def _check_references(
    state: ServerState, principal: Principal, body: protocol.EvaluationCreate
) -> _References:
    refs = _References(algorithm_ref=body.algorithm.id if body.algorithm else None)
    with state.db.read() as session:
        conn = session.connection()
        if refs.algorithm_ref:  # looked up here, so that the transaction only creates a new one
            refs.algorithm = find_algorithm(state, conn, principal, refs.algorithm_ref)
        file_ids = [i for i in (body.training_episode_batch, body.training_video) if i]
        found = load_files(conn, file_ids) if file_ids else {}
        if body.training_episode_batch:
            refs.batch = _usable_file(
                state, found, principal, body.training_episode_batch, "episode_batch", BATCH
            )
        if body.training_video:
            refs.video = _usable_file(state, found, principal, body.training_video, "video", VIDEO)
        if body.benchmark_run_id:
            refs.run = own_run(session, principal, body.benchmark_run_id, "benchmark_run_id")
            if refs.run.status == "committed":
                raise Problem(
                    409,
                    f"Benchmark run {refs.run.id} was committed; start a new run to upload more.",
                    "benchmark_run_id",
                )
            if refs.run.algorithm_seq is not None:
                refs.run_algorithm = session.get(Algorithm, refs.run.algorithm_seq)
    return refs


def _check_benchmark_env(env_id: str, refs: _References) -> None:
    """An evaluation of a benchmark run must be of one of its benchmark's envs (else it is junk there)."""
    if refs.run is None:
        return
    spec = benchmarking.benchmark_spec_or_none(refs.run.benchmark_id)
    if spec is not None and env_id not in spec.env_ids:
        raise Problem(
            400,
            f"Benchmark run {refs.run.id} is of {spec.id}, whose envs are {', '.join(sorted(spec.env_ids))}; "
            f"an evaluation of {env_id} does not belong in it.",
            "env",
        )


def _usable_file(
    state: ServerState,
    found: dict[str, FileRecord],
    principal: Principal,
    file_id: str,
    purpose: str,
    param: str,
) -> FileRecord:
    """File ``file_id`` checked for use by a new evaluation: the caller's, of ``purpose``, unused, with content."""
    record = own_file(found.get(file_id), principal, file_id, param)
    if record.purpose != purpose:
        raise Problem(
            400,
            f"{param} must be a file uploaded with purpose {purpose!r}; {file_id} has purpose {record.purpose!r}.",
            param,
        )
    if record.evaluation_id is not None:
        raise Problem(
            409,
            f"File {file_id} already belongs to evaluation {record.evaluation_id}; upload the "
            "data again for a new evaluation.",
            param,
        )
    if record.status == "uploaded":
        return record
    # Pending: on S3 the bytes may have gone straight to the store with a presigned POST.
    size = (
        None
        if record.storage_key is None or isinstance(state.store, FileStore)
        else state.store.size(record.storage_key)
    )
    if size is None:
        raise Problem(
            400,
            f"File {file_id} has no content yet: POST its post_fields and the file to its post_url first.",
            param,
        )
    if size > record.max_bytes:
        raise Problem(
            413, f"File {file_id} is {size} bytes; this server accepts at most {record.max_bytes}.", param
        )
    record.size = size
    return record


@dataclass
class _Content:
    """The episodes and videos an evaluation is made of."""

    batch: EpisodeBatch | None = None
    #: the stored batch the evaluation references, and its sha256
    batch_key: str | None = None
    batch_sha256: str | None = None
    videos: list[StoredVideo] = field(default_factory=list)
    #: the columns of the files validated just now (uploaded straight to the store)
    file_updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: blobs stored for this request (copies of what was uploaded straight to the store)
    stored_keys: list[str] = field(default_factory=list)
    #: where those uploads landed: the client's to write, so never referenced, and removed once copied
    uploaded_keys: list[str] = field(default_factory=list)
    #: the key and sha256 of every blob the evaluation reads, for its entry in the score log
    blobs: list[dict[str, str]] = field(default_factory=list)


def _read_content(state: ServerState, refs: _References, content: _Content) -> None:
    for record, param in ((refs.batch, BATCH), (refs.video, VIDEO)):
        if record is not None and record.status != "uploaded":
            assert record.storage_key is not None
            remote = ingest_remote(state, record, param, content.stored_keys)
            content.uploaded_keys.append(record.storage_key)
            content.file_updates[record.id] = {
                "ingest": remote.ingest,
                "size": record.size,
                "status": "uploaded",
                "storage_key": remote.storage_key,
                "sha256": remote.sha256,
            }
            if record is refs.batch:
                content.batch = remote.batch
                content.batch_key, content.batch_sha256 = remote.storage_key, remote.sha256
            else:
                content.videos = remote.videos
    if refs.batch is not None and content.batch is None:
        content.batch = _stored_batch(state, refs.batch)
        content.batch_key, content.batch_sha256 = refs.batch.storage_key, refs.batch.sha256
    if refs.video is not None and refs.video.id not in content.file_updates:
        content.videos = [StoredVideo.from_stored(v) for v in (refs.video.ingest or {}).get("videos", [])]


def _stored_batch(state: ServerState, record: FileRecord) -> EpisodeBatch:
    """The batch of an uploaded file, as validated when it arrived (its sha256 checked)."""
    assert record.storage_key is not None
    try:
        return read_validated_batch(state.store.get_verified(record.storage_key, record.sha256))
    except BlobNotFound:
        raise Problem(
            400, f"The content of {record.id} is missing from the store; upload it again.", BATCH
        ) from None
    except BlobDamaged as e:
        logger.error("%s (file %s)", e, record.id)
        raise Problem(
            400, f"The stored content of {record.id} is damaged ({e}); upload it again.", BATCH
        ) from None
    except IngestError as e:
        raise e.about(BATCH) from None


def _score(env_id: str, gym_version: str | None, refs: _References, content: _Content) -> EvaluationScoring:
    """Judged by the registry of the gym that recorded the run (:func:`palaestra.catalogue.solving_criteria`)."""
    benchmark_id = refs.run.benchmark_id if refs.run is not None else None
    return derive_evaluation(content.batch, env_id, gym_version, benchmark_id)


@dataclass
class _NewEvaluation:
    """Everything the write transaction needs, prepared before it."""

    id: str
    body: protocol.EvaluationCreate
    principal: Principal
    refs: _References
    content: _Content
    scoring: EvaluationScoring
    base_url: str
    extra: Extra | None = None


def _insert(
    state: ServerState, session: Session, new: _NewEvaluation
) -> tuple[int, protocol.EvaluationCreated]:
    refs, scoring, env_id = new.refs, new.scoring, new.body.env or ""
    if refs.run is None and new.extra is None:  # a self-reported, stand-alone upload (.repeats's rule)
        repeated = repeats.find_repeat(session, new.principal.user_seq, env_id, new.content.batch_sha256)
        if repeated is not None:
            return 200, repeats.repeat_of(repeated.to_object(new.base_url), _asked_details(new.body, refs))
    algorithm = refs.algorithm or resolve_algorithm(state, session, new.principal, refs.algorithm_ref)
    now = utcnow()
    values = {
        "id": new.id,
        "user_seq": new.principal.user_seq,
        "env_id": env_id,
        "env_listed": scoring.listed,
        "algorithm_seq": algorithm.seq if algorithm else None,
        "benchmark_run_seq": refs.run.seq if refs.run else None,
        "writeup": new.body.writeup,
        "gym_version": new.body.gym_version,
        "training_episode_batch": new.body.training_episode_batch,
        "training_video": new.body.training_video,
        # the uploaded batch; its download adds env_id and the first reset time (EpisodeBatch.enriched)
        "episode_batch_key": new.content.batch_key,
        "episode_batch_sha256": new.content.batch_sha256,
        "videos": [v.stored() for v in new.content.videos],
        **scoring.derived_columns(),
        "created": now,
        **_provenance_columns(env_id, new.body.provenance),
        **scoring.columns(),
        **(new.extra.columns if new.extra else {}),
    }
    inserted = session.connection().execute(_INSERT_EVALUATION, values).inserted_primary_key
    assert inserted is not None  # a single-row INSERT
    if new.extra is not None:
        new.extra.within(session, new.id)
    _claim_files(session, refs, new.content.file_updates, new.id)
    if refs.run is not None and session.scalar(_RUN_STATUS, {"run_seq": refs.run.seq}) == "committed":
        raise Problem(409, f"Benchmark run {refs.run.id} was committed meanwhile.", "benchmark_run_id")
    scorelog.append_evaluation(session, values, new.content.blobs)
    upsert_env_stats(
        session, env_id, scoring.group, scoring.listed, scoring.score.mean, scoring.score.solved, new.id, now
    )
    owner = algorithm or refs.run_algorithm
    index_stats.add_evaluation(
        session, inserted[0], new.principal.user_seq, owner.seq if owner else None, env_id, scoring.score.solved
    )
    record = EvaluationRecord.of(
        snapshot(Evaluation, values),
        algorithm or refs.run_algorithm,
        refs.run.id if refs.run else None,
        new.principal.user_name,
    )
    return 201, protocol.EvaluationCreated.of(record.to_object(new.base_url), already_uploaded=False)


def _provenance_columns(env_id: str, provenance: Provenance | None) -> dict[str, Any]:
    """What ran, as uploaded, and the conditions card derived from it (its key NULL: not recorded)."""
    document = provenance.model_dump(mode="json", exclude_none=True) if provenance is not None else None
    card = derive_conditions(env_id, document)
    return {
        "provenance": document,
        "conditions": card,
        "conditions_key": conditions_key(card) if card["recorded"] else None,
    }


def _claim_files(
    session: Session, refs: _References, updates: dict[str, dict[str, Any]], evaluation_id: str
) -> None:
    """Mark the evaluation's files as its own; 409 if another evaluation took one meanwhile."""
    claimed = 0
    for record in refs.files:
        if record.id in updates:
            claim: Any = (
                sa.update(FileRecord)
                .where(FileRecord.id == record.id, FileRecord.evaluation_id.is_(None))
                .values(evaluation_id=evaluation_id, **updates[record.id])
            )
            claimed += session.execute(claim).rowcount  # type: ignore[attr-defined]
    uploaded = [r.id for r in refs.files if r.id not in updates]
    if uploaded:  # one statement for both files: the write lock is held meanwhile
        params = {"file_ids": uploaded, "evaluation_id": evaluation_id}
        claimed += session.connection().execute(_CLAIM_FILES, params).rowcount
    if claimed != len(refs.files):
        taken = _taken_file(session, refs.files, evaluation_id)
        param = VIDEO if taken is refs.video else BATCH
        raise Problem(409, f"File {taken.id} was used by another evaluation meanwhile.", param)


def _taken_file(session: Session, records: list[FileRecord], evaluation_id: str) -> FileRecord:
    """Which of ``records`` another evaluation claimed first (after a claim fell short)."""
    for record in records:
        owner = session.scalar(sa.select(FileRecord.evaluation_id).where(FileRecord.id == record.id))
        if owner != evaluation_id:
            return record
    return records[0]

