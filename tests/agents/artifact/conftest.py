"""Fixtures of the agent-artifact tests: the extra and the sandbox they need, and agents on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnx", reason="the 'agents' extra is not installed")
pytest.importorskip("onnxruntime", reason="the 'agents' extra is not installed")


@pytest.fixture
def cartpole_agent(tmp_path: Path) -> tuple[str, str]:
    """The SB3-style CartPole policy and its descriptor, written side by side."""
    from palaestra.agents.artifact import AgentDescriptor
    from palaestra.agents.artifact.examples import sb3_cartpole_model, write_agent

    descriptor = AgentDescriptor(env_id="CartPole-v1", action="index", deterministic=True)
    return write_agent(sb3_cartpole_model(), descriptor, tmp_path / "cartpole.onnx")
