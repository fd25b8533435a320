"""Agent artifacts: a policy as one ONNX file and a JSON descriptor, checked, then evaluated by the
board in a sandbox under a fixed protocol.

* :class:`AgentDescriptor` (:mod:`.descriptor`) -- the descriptor's schema (env id, preprocessing,
  action mapping, determinism), strict; :func:`load_descriptor`, :func:`descriptor_path_for`.
* :func:`check_artifact` / :func:`check_artifact_bytes` (:mod:`.checks`) -- the static checks of a
  hostile model file; :class:`ArtifactError` names what is refused, :class:`ArtifactInfo` what was found.
* :func:`protocol_kwargs` (:mod:`.protocol`) -- how the board makes each env (Atari: Machado et al.).
* :func:`evaluate_agent` (:mod:`.evaluate`) -- one episode per seed under palaestra's Monitor, video
  included, into a training directory.
* :func:`run_sandboxed` (:mod:`.sandbox`) -- the evaluator in its own process under bubblewrap,
  seccomp and rlimits; :class:`SandboxLimits`, :class:`SandboxResult`, :class:`SandboxUnavailable`.
* ``python -m palaestra.agents.artifact`` (:mod:`.__main__`) -- the evaluator's process.
* ``palaestra agent pack`` / ``palaestra agent check`` (:mod:`palaestra.cli.agent`, :mod:`.pack`).

Needs the ``agents`` extra (onnx, onnxruntime, pyseccomp) and the Debian package ``bubblewrap``;
submitting an agent is described in docs/agents.md.
"""

from palaestra.agents.artifact.checks import ArtifactError, ArtifactInfo, check_artifact, check_artifact_bytes
from palaestra.agents.artifact.descriptor import (
    AgentDescriptor,
    DescriptorError,
    descriptor_path_for,
    load_descriptor,
)
from palaestra.agents.artifact.evaluate import evaluate_agent
from palaestra.agents.artifact.policy import PolicyError
from palaestra.agents.artifact.protocol import protocol_kwargs
from palaestra.agents.artifact.sandbox import (
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    run_sandboxed,
    sandbox_unavailable_reason,
)

__all__ = [
    "AgentDescriptor",
    "ArtifactError",
    "ArtifactInfo",
    "DescriptorError",
    "PolicyError",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "check_artifact",
    "check_artifact_bytes",
    "descriptor_path_for",
    "evaluate_agent",
    "load_descriptor",
    "protocol_kwargs",
    "run_sandboxed",
    "sandbox_unavailable_reason",
]
