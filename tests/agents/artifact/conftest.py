"""Fixtures of the agent-artifact tests: the extra and the sandbox they need, and agents on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnx", reason="the 'agents' extra is not installed")
pytest.importorskip("onnxruntime", reason="the 'agents' extra is not installed")


@pytest.fixture(scope="session")
def sandbox() -> None:
    """Skip where the machine cannot make the sandbox (the set-up installs bubblewrap; a kernel may
    forbid user namespaces, as some containers do)."""
    from palaestra.agents.artifact import sandbox_unavailable_reason

    reason = sandbox_unavailable_reason()
    if reason is not None:
        pytest.skip(f"the agent sandbox is unavailable here: {reason}")


@pytest.fixture
def cartpole_agent(tmp_path: Path) -> tuple[str, str]:
    """The SB3-style CartPole policy and its descriptor, written side by side."""
    from palaestra.agents.artifact import AgentDescriptor
    from palaestra.agents.artifact.examples import sb3_cartpole_model, write_agent

    descriptor = AgentDescriptor(env_id="CartPole-v1", action="index", deterministic=True)
    return write_agent(sb3_cartpole_model(), descriptor, tmp_path / "cartpole.onnx")
