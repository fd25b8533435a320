"""``palaestra worker --ray ADDRESS``: each job's episodes as a Ray task on a cluster.

The worker process stays where the database and the store are: it claims the job, renews its lease,
records the progress and stores the result (:mod:`.worker`). Only the run moves: the task gets
the model's and the descriptor's bytes and the seeds, runs :func:`palaestra.agents.artifact.run_sandboxed`
on its node (which needs palaestra with the ``agents`` extra and bubblewrap, as any worker does), sends
each finished episode's return back through a Ray queue as it comes, and returns the training
directory as a tar archive, unpacked here with tarfile's ``data`` filter (plain files, no paths out).
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from palaestra.scoreboard.server.agents.worker import Runner, RunOutcome
from palaestra.scoreboard.server.core.config import ServerConfig

__all__ = ["ray_runner"]

#: Seconds between looks at a running task's queue of finished episodes.
POLL_S = 0.5


def _evaluate_on_node(
    model: bytes, descriptor: bytes, seeds: list[int], limits: dict[str, Any], episodes: Any
) -> tuple[Any, ...]:
    """The Ray task: the sandboxed run in a folder of the node; ``(ok, reason, log, directory as tar)``."""
    from palaestra.agents.artifact import SandboxLimits, run_sandboxed

    with tempfile.TemporaryDirectory(prefix="palaestra-ray-agent-") as tmp:
        folder = Path(tmp)
        (folder / "model.onnx").write_bytes(model)
        (folder / "descriptor.json").write_bytes(descriptor)
        result = run_sandboxed(
            folder / "model.onnx",
            folder / "descriptor.json",
            seeds,
            folder / "run",
            SandboxLimits(**limits),
            on_episode=lambda index, reward: episodes.put((index, reward)),
        )
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w:gz") as tar:
            for path in sorted((folder / "run").iterdir()):
                if path.is_file():
                    tar.add(path, arcname=path.name, recursive=False)
        return bool(result.ok), result.reason, result.log or "", archive.getvalue()


def ray_runner(address: str, config: ServerConfig) -> Runner:
    """A runner sending each job's episodes to the Ray cluster at ``address`` (``local``: start one here)."""
    import ray
    from ray.util.queue import Queue

    ray.init(
        address=None if address == "local" else address,
        ignore_reinit_error=True,
        include_dashboard=False,
        log_to_driver=False,
    )
    task = ray.remote(num_cpus=1)(_evaluate_on_node)

    def run(model: Path, descriptor: Path, seeds: list[int], directory: Path,
            on_episode: Callable[[int, float], None]) -> RunOutcome:  # fmt: skip
        episodes = Queue()
        limits = {"wall_seconds": float(config.agent_wall_s), "allow_unconfined": config.agent_unconfined}
        pending = task.remote(model.read_bytes(), descriptor.read_bytes(), seeds, limits, episodes)

        def drain() -> None:
            for index, reward in episodes.get_nowait_batch(episodes.qsize()):
                on_episode(int(index), float(reward))

        try:
            while not ray.wait([pending], timeout=POLL_S)[0]:
                drain()
            ok, reason, log, archive = ray.get(pending)
            drain()
        except BaseException:
            ray.cancel(pending, force=True)  # a lost lease: the task stops too
            raise
        finally:
            episodes.shutdown()
        directory.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(directory, filter="data")
        return RunOutcome(ok, reason, log)

    return run
