"""Following a training directory live: ``palaestra upload --follow DIR``.

- :class:`Follower`: every :data:`DEFAULT_INTERVAL_S` seconds it reads each manifest's episodes (its
  journal while the Monitor is open, its stats file once closed: :func:`~palaestra.monitoring.results.read_stats_file`,
  the reader ``load_results`` uses) and sends the episodes the server does not have yet, in chunks of
  at most :data:`CHUNK_EPISODES`, each with its source's sequence number (the index of its first
  episode). Where it resumes from is the server's answer (each source's position), never its own
  memory, so a server restart, a network outage or a restart of the follower neither drops nor
  repeats an episode: a chunk that went through but whose answer was lost is acknowledged as already
  applied. Requests retry through the client's transport; past its budget the follower waits for the
  next poll and asks the server where it is.
- When every manifest is final (its Monitor closed: no journal left), it sends the rest and seals the
  live evaluation with what an upload of the finished directory carries besides the episodes (its
  video archive, uploaded as an upload uploads it, and its provenance: :func:`seal_body`), so the
  server makes the very evaluation an upload of that directory would make.
- The run is named from its env id and algorithm (else its directory's name), and its page's URL is
  printed once, on stderr, when the run is created.
- The live evaluation's id is kept in ``.palaestra-live.json`` in the directory (a name the 2017
  loader ignores), so a follower started again on the same directory continues the same one.
- :func:`follow_in_background`: the same in a daemon thread of the calling process, for a training
  script that starts its follower itself (``Monitor(live=True)`` starts the command line's follower
  in a process of its own instead, so that recording never imports this package).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any

from palaestra.errors import APIConnectionError, InvalidRequestError, ResultsError, RetriesExceededError
from palaestra.monitoring import files
from palaestra.monitoring.results import collapse_env_infos, read_stats_file
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client.keys import idempotency_key
from palaestra.scoreboard.client.preparation import prepare_training_directory, temporary_archive
from palaestra.scoreboard.client.session import ScoreboardClient
from palaestra.scoreboard.protocol.live import (
    LiveChunk,
    LiveChunkAnswer,
    LiveEvaluationCreate,
    LiveEvaluationObject,
    LiveSeal,
)

__all__ = [
    "CHUNK_EPISODES",
    "DEFAULT_INTERVAL_S",
    "STATE_FILE",
    "Follower",
    "follow_in_background",
    "run_name",
    "seal_body",
]

logger = logging.getLogger("palaestra.upload")

#: Seconds between two reads of the directory: what TensorBoard's reloader waits by default, and a
#: follower at this interval costs well under 1 % of a core (bench/live_follow.py).
DEFAULT_INTERVAL_S = 5.0
#: Episodes per chunk: about 70 KB of JSON, at most 96 KB however the numbers are spelt: a fifth of the
#: protocol's largest chunk (MAX_CHUNK_EPISODES), which the server's body cap fits (MAX_CHUNK_BODY_BYTES).
CHUNK_EPISODES = 1000
#: Which live evaluation a directory feeds (server and id), so that a restarted follower continues it.
STATE_FILE = ".palaestra-live.json"


class _AlreadySealed(Exception):
    """The live evaluation this directory feeds was sealed already (a follower run again after the end)."""

    def __init__(self, live: LiveEvaluationObject) -> None:
        self.live = live


@dataclass(frozen=True)
class _Source:
    """One manifest of the directory: its name (the source's name on the server) and where its episodes are."""

    name: str
    stats_path: str
    journal: tuple[str, int] | None
    #: the Monitor that writes it has closed (its journal was folded into the stats file)
    final: bool


def _read_sources(directory: str) -> tuple[dict[str, Any], list[_Source]]:
    manifests = files.detect_training_manifests(directory)
    env_infos, sources = [], []
    for path in manifests:
        try:
            manifest = files.read_json(path)
        except (OSError, ValueError) as e:
            raise ResultsError(f"Manifest {path} cannot be read: {e}") from None
        env_infos.append(manifest.get("env_info"))
        stats = os.path.join(directory, manifest["stats"])
        named = manifest.get("journal")
        journal = (
            (os.path.join(directory, named["file"]), int(named["source"]))
            if isinstance(named, dict)
            else None
        )
        journal_file = journal[0] if journal else files.journal_path(stats)
        sources.append(_Source(os.path.basename(path), stats, journal, not os.path.exists(journal_file)))
    if not manifests:
        return {}, []
    return collapse_env_infos(env_infos, directory), sources


class Follower:
    """Follows one training directory into one live evaluation (see the module's docstring)."""

    def __init__(
        self,
        client: ScoreboardClient,
        directory: str | os.PathLike[str],
        *,
        interval: float = DEFAULT_INTERVAL_S,
        algorithm: str | None = None,
        writeup: str | None = None,
        skip_videos: bool = False,
        send_provenance: bool = True,
    ) -> None:
        self.client = client
        self.directory = os.path.abspath(os.fspath(directory))
        self.interval = interval
        self.algorithm = algorithm
        self.writeup = writeup
        self.skip_videos = skip_videos
        self.send_provenance = send_provenance
        self.live_id: str | None = None
        self.positions: dict[str, int] = {}
        self.sent_chunks = 0
        self._stop = threading.Event()

    # -- the loop ------------------------------------------------------------------------------------
    def follow(self) -> LiveEvaluationObject | None:
        """Poll until every Monitor of the directory closed, then seal; the sealed live evaluation (after
        :meth:`stop`: the live evaluation as it stands, or None where nothing was sent yet)."""
        while not self._stop.is_set():
            try:
                if self.poll_once():
                    return self.seal()
            except (APIConnectionError, RetriesExceededError) as e:
                logger.warning("The scoreboard is unreachable (%s); trying again in %.0f s", e, self.interval)
                self.positions = {}  # asked again from the server once it answers
            except ResultsError as e:  # a manifest being written, a stats file not there yet
                logger.info(
                    "Cannot read %s yet (%s); trying again in %.0f s", self.directory, e, self.interval
                )
            except _AlreadySealed as done:
                return done.live
            self._stop.wait(self.interval)
        return self.status() if self.live_id is not None else None

    def stop(self) -> None:
        self._stop.set()

    def poll_once(self) -> bool:
        """Send what is new; True when every Monitor has closed and everything was sent."""
        env_info, sources = _read_sources(self.directory)  # finality is read before the episodes
        if not sources:
            return False
        if self.live_id is None:
            self._start(env_info)
        if not self.positions:
            current = self.status()
            if current.status == "sealed":
                raise _AlreadySealed(current)
            self.positions = dict(current.sources)
        cache: dict[str, Any] = {}
        for source in sources:
            self._send(source.name, read_stats_file(source.stats_path, source.journal, cache))
        return all(s.final for s in sources)

    def status(self) -> LiveEvaluationObject:
        assert self.live_id is not None
        return self.client.http.call(LiveEvaluationObject, "GET", f"{_LIVE}/{self.live_id}")

    def seal(self) -> LiveEvaluationObject:
        """Seal with the directory's videos and provenance: the evaluation its upload would make."""
        assert self.live_id is not None
        body = seal_body(self.client, self.directory, self.live_id, self.skip_videos, self.send_provenance)
        sealed = self.client.http.call(LiveEvaluationObject, "POST", f"{_LIVE}/{self.live_id}/seal", body=body)
        logger.info("Sealed live evaluation %s as evaluation %s", sealed.id, sealed.evaluation_id)
        return sealed

    # -- pieces --------------------------------------------------------------------------------------
    def _start(self, env_info: dict[str, Any]) -> None:
        """Continue the live evaluation this directory feeds (``STATE_FILE``), or create one."""
        known = self._known_live()
        if known is not None:
            self.live_id = known
            return
        body = LiveEvaluationCreate(
            env=str(env_info["env_id"]),
            gym_version=env_info.get("gym_version"),
            algorithm=protocol.AlgorithmRef(id=self.algorithm) if self.algorithm else None,
            writeup=self.writeup,
            name=run_name(str(env_info["env_id"]), self.algorithm, self.directory),
        )
        key = idempotency_key("live", self.client.server, self.directory, body.model_dump())
        made = self.client.http.call(LiveEvaluationObject, "POST", _LIVE, body=body, idempotency_key=key)
        self.live_id = made.id
        files.atomic_write_json(
            os.path.join(self.directory, STATE_FILE), {"server": self.client.server, "id": made.id}
        )
        # printed, not logged: a training script has no logging set up, and this is the one line
        # that tells where to watch the run (stderr: `upload --follow --json` keeps stdout JSON)
        url = made.web_url or self.client.server + f"/live/{made.id}"
        print(f"Following {self.directory} live at {url}", file=sys.stderr, flush=True)

    def _known_live(self) -> str | None:
        try:
            state = files.read_json(os.path.join(self.directory, STATE_FILE))
        except (OSError, ValueError):
            return None
        if not isinstance(state, dict) or state.get("server") != self.client.server:
            return None
        return str(state["id"]) if state.get("id") else None

    def _send(self, name: str, doc: dict[str, Any]) -> None:
        position = self.positions.get(name, 0)
        total = len(doc["timestamps"])
        types, truncated = doc.get("episode_types"), doc.get("episode_truncated")
        while position < total:
            end = min(total, position + CHUNK_EPISODES)
            chunk = LiveChunk(
                source=name,
                start=position,
                initial_reset_timestamp=doc.get("initial_reset_timestamp"),
                timestamps=doc["timestamps"][position:end],
                episode_lengths=doc["episode_lengths"][position:end],
                episode_rewards=doc["episode_rewards"][position:end],
                episode_types=types[position:end] if types else None,
                episode_truncated=[bool(x) for x in truncated[position:end]] if truncated else None,
            )
            try:
                answer = self.client.http.call(
                    LiveChunkAnswer, "POST", f"{_LIVE}/{self.live_id}/chunks", body=chunk
                )
            except InvalidRequestError as e:
                if e.http_status == 409 and e.param == "start":  # the server is elsewhere: ask it where
                    self.positions = dict(self.status().sources)
                    position = self.positions.get(name, 0)
                    continue
                raise
            self.sent_chunks += 1
            position = self.positions[name] = answer.position


_LIVE = f"{protocol.API_PREFIX}/live_evaluations"


def run_name(env_id: str, algorithm: str | None, directory: str) -> str:
    """A live run's name: ``CartPole-v1 · cem`` with an algorithm, else ``CartPole-v1 · DIRNAME``."""
    return f"{env_id} · {algorithm or os.path.basename(os.path.normpath(directory))}"[:300]


def seal_body(
    client: ScoreboardClient, directory: str, live_id: str, skip_videos: bool = False, send_provenance: bool = True
) -> LiveSeal:
    """What the seal of ``directory``'s live run sends besides the episodes (the server has those): its
    video archive, uploaded as :meth:`ScoreboardClient.upload` uploads it, and its provenance."""
    prepared = prepare_training_directory(directory, skip_videos, send_provenance)
    video = None
    if prepared.videos:
        logger.info("[%s] Uploading videos of %d training episodes", prepared.env_id, len(prepared.videos))
        video = client.upload_content(
            "video",
            idempotency_key("file", "video", prepared.video_digest, {"live": live_id}),
            lambda: temporary_archive(prepared),
        )
    return LiveSeal(training_video=video.id if video else None, provenance=prepared.provenance)


def follow_in_background(
    directory: str | os.PathLike[str],
    *,
    server: str | None = None,
    api_key: str | None = None,
    interval: float = DEFAULT_INTERVAL_S,
    algorithm: str | None = None,
    writeup: str | None = None,
) -> Follower:
    """Follow ``directory`` from a daemon thread of this process (``palaestra upload --follow`` in the
    training process itself). Start it after creating the Monitor; when the Monitor is closed the thread
    seals the live evaluation, and the interpreter waits for that at exit (at most a few polls)."""
    client = ScoreboardClient.from_config(server, api_key)
    follower = Follower(client, directory, interval=interval, algorithm=algorithm, writeup=writeup)
    thread = threading.Thread(target=_follow_quietly, args=(follower,), name="palaestra-follow", daemon=True)
    thread.start()
    atexit.register(thread.join, 3 * interval + 60)
    return follower


def _follow_quietly(follower: Follower) -> None:
    try:
        follower.follow()
    except Exception as e:  # a thread's exception would only be printed; say what it means
        logger.error("Following %s live stopped: %s", follower.directory, e)
    finally:
        follower.client.close()


def dump_state(directory: str) -> dict[str, Any] | None:
    """The live evaluation a directory feeds (``STATE_FILE``), or None."""
    try:
        with open(os.path.join(directory, STATE_FILE), encoding="utf-8") as f:
            return dict(json.load(f))
    except (OSError, ValueError):
        return None
