"""The evaluator: an agent artifact's episodes, one per seed, recorded as an ordinary training directory.

:func:`evaluate_agent` checks the model (:func:`~palaestra.agents.artifact.checks.check_artifact_bytes`),
or, given its caller's findings (``checked``, as the sandbox passes them), checks that the bytes it
loads are the ones checked (their sha256); then it makes the env under the board's
protocol (:mod:`palaestra.agents.artifact.protocol`), records it with palaestra's own Monitor (video
on the Monitor's schedule: episodes 0, 1, 8, 27, ...), puts the descriptor's preprocessing on top and
runs one episode per seed (``reset(seed=seed)``; ``sample`` draws from a generator seeded with it
too). The Monitor's provenance carries the evaluation's facts under ``config["agent_evaluation"]``:
the artifact's sha256, the descriptor, the seeds and the evaluator's versions. A run stopped at any
point leaves a directory that loads, with every finished episode (the Monitor's journal).

It runs in whatever process calls it; the board calls it inside the sandbox
(:func:`~palaestra.agents.artifact.sandbox.run_sandboxed`, through ``python -m
palaestra.agents.artifact``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from typing import Any

from palaestra.agents.artifact import preprocessing, protocol
from palaestra.agents.artifact.checks import (
    MAX_MODEL_BYTES,
    ArtifactError,
    ArtifactInfo,
    check_artifact_bytes,
)
from palaestra.agents.artifact.descriptor import AgentDescriptor
from palaestra.agents.artifact.policy import OnnxPolicy

__all__ = ["EVALUATOR", "evaluate_agent", "evaluation_config", "load_checked"]

#: The evaluator's name in the provenance (``config["agent_evaluation"]["evaluator"]``).
EVALUATOR = "palaestra.agents.artifact"


def evaluation_config(descriptor: AgentDescriptor, sha256: str, seeds: Sequence[int]) -> dict[str, Any]:
    """What the Monitor's provenance records of an evaluation (under ``config["agent_evaluation"]``)."""
    import onnxruntime

    from palaestra._version import __version__

    return {
        "agent_evaluation": {
            "evaluator": EVALUATOR,
            "palaestra": __version__,
            "onnxruntime": onnxruntime.__version__,
            "sha256": sha256,
            "descriptor": descriptor.model_dump(mode="json", exclude_none=True),
            "protocol": protocol.protocol_kwargs(descriptor.env_id),
            "seeds": list(seeds),
        }
    }


def load_checked(
    model_path: str | os.PathLike[str], descriptor: AgentDescriptor, checked: ArtifactInfo | None = None
) -> tuple[bytes, ArtifactInfo]:
    """The model's bytes and their check: :func:`~palaestra.agents.artifact.checks.check_artifact_bytes`'s,
    or ``checked`` (a caller's check of this very file) once the bytes' sha256 matches it."""
    path = os.fspath(model_path)
    with open(path, "rb") as f:
        data = f.read(MAX_MODEL_BYTES + 1)
    if checked is None:
        return data, check_artifact_bytes(data, descriptor)
    if hashlib.sha256(data).hexdigest() != checked.sha256:
        raise ArtifactError(
            f"the model {path!r} is not the one that was checked (its sha256 differs): check it again"
        )
    return data, checked


def evaluate_agent(
    model_path: str | os.PathLike[str],
    descriptor: AgentDescriptor,
    seeds: list[int],
    directory: str | os.PathLike[str],
    *,
    video: bool = True,
    on_episode: Callable[[int, float], None] | None = None,
    checked: ArtifactInfo | None = None,
) -> None:
    """Run one episode of the model per seed into the training directory ``directory``.

    ``directory`` is emptied of earlier Monitor files first (a retried job starts afresh).
    ``on_episode(index, total_reward)`` is called after each episode. Raises
    :class:`~palaestra.agents.artifact.checks.ArtifactError` for a refused model and
    :class:`~palaestra.agents.artifact.policy.PolicyError` for an output that is no action.

    ``checked``: the findings of :func:`~palaestra.agents.artifact.checks.check_artifact` on this very
    file, by a caller that ran it (the sandbox's: its evaluator then need not import ``onnx``, which
    costs it a second or more at start-up, bench/agent_eval.py); the file's sha256 must match them.
    """
    from palaestra.monitoring import Monitor

    if not seeds:
        raise ValueError("evaluate_agent needs at least one seed")
    data, info = load_checked(model_path, descriptor, checked)
    env = protocol.make_protocol_env(descriptor.env_id, render_mode="rgb_array" if video else None)
    monitor = Monitor(
        env,
        directory,
        video_callable=None if video else False,
        force=True,
        config=evaluation_config(descriptor, info.sha256, seeds),
        # the sandbox has no git and the command line is the evaluator's own: neither says anything
        provenance_omit=("git", "command"),
    )
    wrapped = preprocessing.wrap(monitor, descriptor)
    try:
        policy = OnnxPolicy(data, descriptor, info, wrapped.action_space)
        act, step = policy.act, wrapped.step
        for index, seed in enumerate(seeds):
            observation, _ = wrapped.reset(seed=int(seed))
            policy.seed(int(seed))
            done = False
            while not done:
                observation, _, terminated, truncated, _ = step(act(observation))
                done = terminated or truncated
            if on_episode is not None:
                on_episode(index, float(monitor.get_episode_rewards()[-1]))
    finally:
        wrapped.close()

