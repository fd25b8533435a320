"""The worker that evaluates uploaded agents: ``palaestra worker``, and the one ``palaestra server`` runs.

One job at a time (:meth:`AgentWorker.run_once`):

1. claim the oldest queued job (:func:`.jobs.claim_next`: atomic, with a lease);
2. fetch its artifact from the store (its sha256 checked) and write its descriptor beside it;
3. run it with :func:`palaestra.agents.artifact.run_sandboxed` on the job's seeds (a Go or Hex agent:
   its matches against the anchors instead, stored as verified ladder matches by :mod:`.matches`), into a training
   directory recorded by palaestra's own Monitor (with video). Meanwhile a heartbeat renews the lease
   every quarter of it, and each finished episode's return is recorded (the job's page shows them);
4. a failed run (refused, killed at a limit, crashed) fails the job with its reason and log tail;
   a finished one is uploaded *as an upload is*: the directory's documents made by the writers the
   upload client uses (:mod:`palaestra.scoreboard.protocol.batches`, :mod:`~palaestra.scoreboard.protocol.directories`),
   its episode batch and video archive validated and stored by the upload path
   (:mod:`..evaluations.ingest`, :func:`..evaluations.uploads.store_videos`) and the evaluation made by
   ``POST /v1/evaluations``'s own code (:func:`..evaluations.create.create_evaluation`), marked verified,
   with the job turned ``done`` in the same transaction only if its lease is still this worker's
   (:func:`.jobs.finish_in`, through :class:`..evaluations.create.Extra`).

A worker killed at any point loses that job's progress only: its lease runs out, the next claim puts
the job back in the queue, and it runs again; what the killed worker stored without an evaluation
(files) is what ``palaestra server gc`` removes. The ``--ray`` form runs step 3 as a Ray task
(:mod:`.ray`); everything else stays here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from starlette.requests import Request

from palaestra._version import __version__
from palaestra.errors import ResultsError
from palaestra.monitoring.results import load_results
from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol.batches import encode_episode_batch
from palaestra.scoreboard.protocol.directories import (
    checked_provenance,
    subsample_videos,
    usable_videos,
    write_archive,
)
from palaestra.scoreboard.protocol.provenance import Provenance
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.agents import jobs as agent_jobs
from palaestra.scoreboard.server.agents.jobs import Claim, LeaseLost
from palaestra.scoreboard.server.agents.matches import match_games, match_plan, store_agent_matches
from palaestra.scoreboard.server.core.clock import SYSTEM_CLOCK
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.outages import database_unavailable
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.core.storage import BlobDamaged, BlobNotFound, sha256_of
from palaestra.scoreboard.server.evaluations.create import Extra, create_evaluation
from palaestra.scoreboard.server.evaluations.ingest import IngestError, validate_episode_batch
from palaestra.scoreboard.server.evaluations.uploads import store_videos
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.scores import Evaluation
from palaestra.scoreboard.server.tables.service import FileRecord

__all__ = [
    "AgentWorker",
    "EmbeddedWorkers",
    "MatchRunner",
    "RunOutcome",
    "Runner",
    "cannot_evaluate",
    "sandboxed_match_runner",
    "sandboxed_runner",
    "worker_state",
]

logger = logging.getLogger("palaestra.scoreboard.worker")

#: Seconds between looks at an empty queue.
POLL_S = 1.0


@dataclass
class RunOutcome:
    """What running a job's episodes gave: ``ok``, else ``reason``; the run's ``log``."""

    ok: bool
    reason: str | None = None
    log: str = ""


#: ``(model_path, descriptor_path, seeds, directory, on_episode) -> RunOutcome``: plays the episodes
#: into ``directory``, calling ``on_episode(index, episode_return)`` as each one ends.
Runner = Callable[[Path, Path, list[int], Path, Callable[[int, float], None]], RunOutcome]


def sandboxed_runner(config: ServerConfig) -> Runner:
    """The board's evaluator: the episodes in the sandbox of :func:`palaestra.agents.artifact.run_sandboxed`
    (bubblewrap, seccomp, rlimits); unconfined only where the operator allowed it (``agent_unconfined``).
    The ``agents`` extra is imported when a job runs: a server without it serves all the same."""

    def run(model: Path, descriptor: Path, seeds: list[int], directory: Path,
            on_episode: Callable[[int, float], None]) -> RunOutcome:  # fmt: skip
        from palaestra.agents.artifact import SandboxLimits, run_sandboxed

        limits = SandboxLimits(
            wall_seconds=float(config.agent_wall_s), allow_unconfined=config.agent_unconfined
        )
        result = run_sandboxed(model, descriptor, seeds, directory, limits, on_episode=on_episode)
        return RunOutcome(bool(result.ok), result.reason, result.log or "")

    return run


#: ``(model_path, descriptor_path, plan, directory, on_game) -> RunOutcome``: plays a board-game
#: agent's :class:`~palaestra.agents.artifact.board.MatchPlan` into match folders under ``directory``,
#: calling ``on_game(index, points)`` as each game ends.
MatchRunner = Callable[[Path, Path, Any, Path, Callable[[int, float], None]], RunOutcome]


def sandboxed_match_runner(config: ServerConfig) -> MatchRunner:
    """A Go or Hex agent's matches against the anchors in the sandbox of
    :func:`palaestra.agents.artifact.run_sandboxed` (the anchors' engines run inside it too)."""

    def run(model: Path, descriptor: Path, plan: Any, directory: Path,
            on_game: Callable[[int, float], None]) -> RunOutcome:  # fmt: skip
        from palaestra.agents.artifact import SandboxLimits, run_sandboxed

        limits = SandboxLimits(wall_seconds=float(config.agent_wall_s), allow_unconfined=config.agent_unconfined)
        seeds = list(plan.seeds)
        result = run_sandboxed(model, descriptor, seeds, directory, limits, on_episode=on_game, plan=plan)
        return RunOutcome(bool(result.ok), result.reason, result.log or "")

    return run


def cannot_evaluate(config: ServerConfig) -> str | None:
    """Why this machine cannot run agents (the ``agents`` extra missing, no sandbox and no operator's
    leave to run unconfined), or None."""
    try:
        from palaestra.agents.artifact import SandboxLimits, sandbox_unavailable_reason
    except ImportError as e:
        return f"the agents extra is not installed ({e}; pip install 'palaestra[agents]')"
    reason = sandbox_unavailable_reason(SandboxLimits())
    if reason is not None and not config.agent_unconfined:
        return (
            f"the agent sandbox is unavailable ({reason}); the board runs no agent unconfined unless its "
            "operator sets PALAESTRA_AGENT_UNCONFINED=1"
        )
    return None


def sandbox_unavailable() -> type[BaseException]:
    """The exception of a machine that cannot confine an evaluation (the worker stops on it)."""
    from palaestra.agents.artifact import SandboxUnavailable

    return SandboxUnavailable


def _first_line(exc: BaseException) -> str:
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


@dataclass
class _Progress:
    """A running job's returns so far, shared by the run's callback and the heartbeat thread."""

    returns: list[float] = field(default_factory=list)
    lost: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class AgentWorker:
    """Claims and runs agent jobs against ``state``'s database and store."""

    def __init__(
        self, state: ServerState, runner: Runner | None = None, name: str | None = None,
        match_runner: MatchRunner | None = None,
    ) -> None:  # fmt: skip
        self.state = state
        self.runner = runner or sandboxed_runner(state.config)
        #: a Go or Hex agent's matches: always in this machine's sandbox (a Ray runner runs episodes only)
        self.match_runner = match_runner or sandboxed_match_runner(state.config)
        self.name = name or agent_jobs.worker_name()

    # -- the loop ----------------------------------------------------------------------------------------

    def run_forever(self, stop: threading.Event, poll_s: float = POLL_S) -> None:
        """Run jobs until ``stop`` is set (between jobs)."""
        logger.info("Agent worker %s waiting for jobs", self.name)
        waiting_out_outage = False
        while not stop.is_set():
            try:
                ran = self.run_once()
            except sandbox_unavailable() as e:
                logger.error("Agent worker %s stops: %s", self.name, e)
                return
            except Exception as e:
                if not database_unavailable(e):
                    logger.exception("Agent worker %s: a job's run broke; the next claim retries it", self.name)
                elif not waiting_out_outage:  # one line per outage, not a traceback a second
                    logger.warning("Agent worker %s: the database is unavailable (%s); it waits", self.name, _first_line(e))
                waiting_out_outage = database_unavailable(e)
                ran = None
            else:
                waiting_out_outage = False
            if ran is None:
                stop.wait(poll_s)

    def run_once(self) -> str | None:
        """Claim and run one job; its id, or None when the queue was empty."""
        cfg = self.state.config
        claim = agent_jobs.claim_next(
            self.state.db, self.state.clock, self.name, cfg.agent_lease_s, cfg.agent_max_attempts
        )
        if claim is None:
            return None
        logger.info("Agent worker %s runs job %s (attempt %d)", self.name, claim.id, claim.attempts)
        try:
            self._run(claim)
        except sandbox_unavailable():
            self._release(claim)
            raise
        return claim.id

    def _run(self, claim: Claim) -> None:
        with tempfile.TemporaryDirectory(prefix="palaestra-agent-") as tmp:
            folder = Path(tmp)
            model, descriptor = folder / "model.onnx", folder / "descriptor.json"
            try:
                model.write_bytes(self.state.store.get_verified(claim.artifact_key, claim.artifact_sha256))
            except (BlobNotFound, BlobDamaged) as e:
                self._fail(claim, f"The agent's stored artifact cannot be read ({e}); upload it again.")
                return
            descriptor.write_text(json.dumps(claim.descriptor))
            if match_games(self.state.config, claim.env_id) is not None:
                self._run_matches(claim, model, descriptor, folder / "run")
                return
            progress = _Progress()
            outcome = self._play(
                claim, progress, lambda on_episode: self.runner(model, descriptor, list(claim.seeds), folder / "run", on_episode)
            )
            if progress.lost:
                logger.warning("Job %s was given to another worker meanwhile; this run is dropped", claim.id)
                return
            if not outcome.ok:
                self._fail(claim, outcome.reason or "The evaluation failed.", outcome.log)
                return
            try:
                evaluation_id = self._store(claim, folder / "run", list(progress.returns))
            except LeaseLost as e:
                logger.warning("%s", e)
                return
            except (IngestError, protocol.EpisodeBatchError) as e:
                self._fail(claim, f"The evaluator's recording was refused by ingest: {e}", outcome.log)
                return
            except Exception:
                if self._stored_by_another(claim):  # the unique index on agent_job_id refused a second one
                    logger.warning("Job %s was stored by another worker; nothing stored twice", claim.id)
                    return
                raise
            logger.info("Job %s done: evaluation %s", claim.id, evaluation_id)

    def _run_matches(self, claim: Claim, model: Path, descriptor: Path, directory: Path) -> None:
        """A Go or Hex agent's job: its matches against the anchors, played in the sandbox
        (:attr:`match_runner`), stored as the board's verified ladder matches (:mod:`.matches`)."""
        principal = self._owner(claim)
        plan = match_plan(self.state.config, claim, principal.user_name)
        progress = _Progress()
        outcome = self._play(
            claim, progress, lambda on_game: self.match_runner(model, descriptor, plan, directory, on_game)
        )
        if progress.lost:
            logger.warning("Job %s was given to another worker meanwhile; this run is dropped", claim.id)
            return
        if not outcome.ok:
            self._fail(claim, outcome.reason or "The matches failed.", outcome.log)
            return
        try:
            ids = store_agent_matches(self.state, claim, principal, directory, list(progress.returns))
        except LeaseLost as e:
            logger.warning("%s", e)
            return
        except Problem as e:
            self._fail(claim, f"The agent's games were refused by the ladder's check: {e.detail}", outcome.log)
            return
        logger.info("Job %s done: verified ladder matches %s", claim.id, ", ".join(ids))

    def _owner(self, claim: Claim) -> Principal:
        """The job's owner, as whom its results are stored."""
        with self.state.db.connect() as conn:
            owner = conn.scalar(sa.select(User.name).where(User.seq == claim.user_seq))
        return Principal(user_seq=claim.user_seq, user_name=owner or "", key_id="agent-worker")

    def _play(self, claim: Claim, progress: _Progress, run: Callable[[Callable[[int, float], None]], RunOutcome]) -> RunOutcome:
        """``run(on_episode)``: the episodes (or games), the lease renewed meanwhile and each return
        (a game's points) recorded as it comes."""
        state, stop = self.state, threading.Event()

        def beat() -> None:
            while not stop.wait(max(state.config.agent_lease_s / 4, 0.05)):
                with progress.lock:
                    returns = list(progress.returns)
                if not agent_jobs.heartbeat(state.db, state.clock, claim, returns):
                    progress.lost = True
                    return

        def on_episode(index: int, episode_return: float) -> None:
            with progress.lock:
                progress.returns.append(float(episode_return))
                returns = list(progress.returns)
            if not agent_jobs.heartbeat(state.db, state.clock, claim, returns):
                progress.lost = True
                raise LeaseLost(f"Job {claim.id} was given to another worker; this run stops.")

        beating = threading.Thread(target=beat, name=f"palaestra-heartbeat-{claim.id}", daemon=True)
        beating.start()
        try:
            return run(on_episode)
        except LeaseLost:
            return RunOutcome(False, "lease lost")
        finally:
            stop.set()
            beating.join(timeout=30)

    # -- storing the result --------------------------------------------------------------------------------

    def _store(self, claim: Claim, directory: Path, returns: list[float]) -> str:
        """The run's directory, uploaded as an upload is, as the job's verified evaluation; its id."""
        state = self.state
        prepared = _prepare(directory)
        principal = self._owner(claim)
        batch_id = self._store_batch(principal, prepared.batch)
        video_id = None
        if prepared.videos:
            with _temporary_archive(prepared) as archive:
                video_id = self._store_archive(principal, archive)
        body = protocol.EvaluationCreate(
            training_episode_batch=batch_id,
            training_video=video_id,
            env=claim.env_id,
            algorithm=protocol.AlgorithmRef(id=claim.algorithm_ref) if claim.algorithm_ref else None,
            writeup=claim.writeup,
            provenance=prepared.provenance,
        )
        verification = {
            "job_id": claim.id,
            "seeds": list(claim.seeds),
            "artifact_sha256": claim.artifact_sha256,
            "descriptor": claim.descriptor,
            "evaluator": {"palaestra": __version__, "worker": self.name, "attempt": claim.attempts},
        }

        def finish(session: Any, evaluation_id: str) -> None:
            agent_jobs.finish_in(session, claim, evaluation_id, returns, state.clock.now())

        extra = Extra({"verified": True, "verification": verification, "agent_job_id": claim.id}, finish)
        response = create_evaluation(body, _internal_request(state), principal, state, extra=extra)
        return str(json.loads(bytes(response.body))["id"])

    def _store_batch(self, principal: Principal, data: bytes) -> str:
        """The episode batch, validated as an upload's is (:func:`..evaluations.ingest.validate_episode_batch`), stored
        as an uploaded file of the agent's owner."""
        cap = self.state.config.max_episode_batch_bytes
        batch = validate_episode_batch(data, cap)
        file_id = new_id("file")
        key = f"files/{file_id}.agent"
        self.state.store.put_bytes(key, data)
        self._add_file(principal, file_id, "episode_batch", key, len(data), cap,
                       {"episodes": len(batch.episode_lengths)}, sha256_of(data))  # fmt: skip
        return file_id

    def _store_archive(self, principal: Principal, archive: Path) -> str:
        """The video archive, validated and unpacked as an upload's is (:func:`..evaluations.uploads.store_videos`)."""
        file_id = new_id("file")
        keys: list[str] = []
        try:
            videos = store_videos(self.state, archive, f"videos/{file_id}.agent", keys)
        except BaseException:
            for key in keys:
                self.state.store.delete(key)
            raise
        self._add_file(principal, file_id, "video", None, archive.stat().st_size,
                       self.state.config.max_video_archive_bytes, {"videos": [v.stored() for v in videos]})  # fmt: skip
        return file_id

    def _add_file(self, principal: Principal, file_id: str, purpose: str, key: str | None, size: int,
                  max_bytes: int, ingest: dict[str, Any], sha256: str | None = None) -> None:  # fmt: skip
        now = self.state.clock.now()
        with self.state.db.write() as session:
            session.add(
                FileRecord(
                    id=file_id,
                    user_seq=principal.user_seq,
                    purpose=purpose,
                    content_type=protocol.default_content_type(purpose),
                    status="uploaded",
                    storage_key=key,
                    size=size,
                    max_bytes=max_bytes,
                    expires=now,
                    created=now,
                    uploaded=now,
                    ingest=ingest,
                    sha256=sha256,
                )
            )

    def _stored_by_another(self, claim: Claim) -> bool:
        with self.state.db.connect() as conn:
            query = sa.select(Evaluation.id).where(Evaluation.agent_job_id == claim.id)
            return conn.execute(query).first() is not None

    # -- giving up -------------------------------------------------------------------------------------------

    def _fail(self, claim: Claim, reason: str, log: str | None = None) -> None:
        if agent_jobs.fail(self.state.db, self.state.clock, claim, reason, log):
            logger.info("Job %s failed: %s", claim.id, reason)

    def _release(self, claim: Claim) -> None:
        """Give the job back untried (this machine cannot run it), its attempt not counted."""
        agent_jobs.release(self.state.db, claim)


@dataclass
class _Prepared:
    """What goes up from the run's directory, as the upload client makes it."""

    env_id: str
    batch: bytes
    videos: list[tuple[str, str]]
    provenance: Provenance | None


def _prepare(directory: Path) -> _Prepared:
    """The run's episode batch, videos and provenance, made by the writers the upload client's
    :func:`~palaestra.scoreboard.client.preparation.prepare_training_directory` uses (the server imports
    nothing of the client); a run without a completed episode is refused (:class:`ResultsError`)."""
    where = os.path.abspath(directory)
    results = load_results(where)
    env_id = str(results["env_info"]["env_id"])
    if not results["episode_lengths"]:
        raise ResultsError(f"[{env_id}] The evaluator recorded no completed episode in {where}.")
    batch = encode_episode_batch(results, where)
    videos = subsample_videos(usable_videos(results["videos"], where)) if results["videos"] else []
    return _Prepared(env_id, batch, videos, checked_provenance(where))


@contextlib.contextmanager
def _temporary_archive(prepared: _Prepared) -> Iterator[Path]:
    """The video archive of ``prepared`` in a temporary file (removed afterwards)."""
    fd, name = tempfile.mkstemp(prefix="palaestra-videos-", suffix=".tar.gz")
    try:
        with os.fdopen(fd, "wb") as f:
            write_archive(prepared.videos, f, env_id=prepared.env_id)
        yield Path(name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _internal_request(state: ServerState) -> Request:
    """The request a worker's evaluation is created under: no headers (no idempotency key), the
    configured public URL for its links."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": f"{protocol.API_PREFIX}/evaluations",
        "raw_path": f"{protocol.API_PREFIX}/evaluations".encode(),
        "root_path": "",
        "scheme": "http",
        "query_string": b"",
        "headers": [],
        "server": (state.config.host, state.config.port),
        "client": ("127.0.0.1", 0),
    }
    return Request(scope)


def worker_state(config: ServerConfig) -> ServerState:
    """What a ``palaestra worker`` needs of a board: its database (never migrated here: that is the
    server's to do) and its store. It signs no upload form, so it needs no copy of the servers'
    upload secret: a key of its own process stands in."""
    import secrets

    from palaestra.scoreboard.server.core.signing import SigningKeys, UploadSecret, secret_path
    from palaestra.scoreboard.server.core.state import open_database
    from palaestra.scoreboard.server.core.storage import open_store

    db = open_database(config, migrate_now=False)
    store = open_store(config.storage_url, config.s3_endpoint_url)
    store.check()
    signing = UploadSecret(secret_path(config), SigningKeys(secrets.token_bytes(32)), SYSTEM_CLOCK)
    return ServerState(config=config, db=db, store=store, signing=signing)


class EmbeddedWorkers:
    """The workers ``palaestra server`` runs in its own process (``embedded_workers`` threads). Each
    first asks whether this machine can run agents at all (:func:`cannot_evaluate`: a sandbox probe,
    done in the thread so that the server's start does not wait on it) and says once why not."""

    def __init__(self, state: ServerState, count: int, runner: Runner | None = None) -> None:
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(
                target=self._run,
                args=(AgentWorker(state, runner, f"{agent_jobs.worker_name()}/embedded-{i}"),),
                name=f"palaestra-agent-worker-{i}",
                daemon=True,
            )
            for i in range(count)
        ]

    def _run(self, worker: AgentWorker) -> None:
        why = cannot_evaluate(worker.state.config)
        if why is not None:
            logger.warning(
                "No agent worker runs in this server: %s. Uploaded agents wait for a `palaestra worker`.", why
            )
            return
        worker.run_forever(self._stop)

    def start(self) -> EmbeddedWorkers:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        """Stop taking jobs; a job in progress is left to its lease (it runs again elsewhere)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
