"""Every artifact of the hostile corpus (tests/agents/artifact/hostile.py) ends in a refusal by the
static checks, or in a run the sandbox stops, with a reason that names what was wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.agents.artifact import (
    ArtifactError,
    SandboxLimits,
    check_artifact,
    load_descriptor,
    run_sandboxed,
)
from palaestra.agents.artifact.checks import MAX_MODEL_BYTES
from palaestra.agents.artifact.examples import write_agent
from palaestra.monitoring.results import load_results
from tests.agents.artifact.hostile import CARTPOLE, KILLED, REFUSED, Hostile, good_model

#: Small enough to stop the hostile runs soon, large enough for an honest CartPole evaluation.
LIMITS = SandboxLimits(cpu_seconds=10, wall_seconds=120, memory_bytes=3 * 1024**3, video=False)


def test_the_corpus_has_at_least_thirty_artifacts_with_distinct_names() -> None:
    names = [h.name for h in REFUSED + KILLED]
    assert len(names) >= 30
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("hostile", REFUSED, ids=[h.name for h in REFUSED])
def test_a_hostile_artifact_is_refused_by_the_static_checks_with_its_reason(hostile: Hostile, tmp_path: Path) -> None:
    model, _ = write_agent(hostile.build(), hostile.descriptor, tmp_path / "agent.onnx")
    with pytest.raises(ArtifactError) as refused:
        check_artifact(model, load_descriptor(tmp_path / "agent.json"))
    assert hostile.reason in str(refused.value)


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    model = tmp_path / "big.onnx"
    with open(model, "wb") as f:
        f.truncate(MAX_MODEL_BYTES + 1)  # sparse: no 64 MiB written
    with pytest.raises(ArtifactError, match=f"the agent model is {MAX_MODEL_BYTES + 1:,} bytes; the limit is"):
        check_artifact(model, CARTPOLE)


def test_a_model_whose_external_data_file_is_really_there_is_refused_all_the_same(tmp_path: Path) -> None:
    # onnx.load and onnxruntime would read weights.bin; the board reads nothing but the model's own bytes
    import onnx

    onnx.save_model(
        good_model(), str(tmp_path / "agent.onnx"), save_as_external_data=True, location="weights.bin",
        size_threshold=0,
    )
    assert (tmp_path / "weights.bin").stat().st_size > 0
    with pytest.raises(ArtifactError, match="keeps its data in an external file 'weights.bin'"):
        check_artifact(tmp_path / "agent.onnx", CARTPOLE)


@pytest.mark.slow
@pytest.mark.parametrize("hostile", KILLED, ids=[h.name for h in KILLED])
def test_a_hostile_artifact_that_passes_the_checks_is_stopped_in_the_sandbox_with_its_reason(
    hostile: Hostile, tmp_path: Path, sandbox: None
) -> None:
    model, descriptor = write_agent(hostile.build(), hostile.descriptor, tmp_path / "agent.onnx")
    check_artifact(model, hostile.descriptor)  # nothing static gives it away
    result = run_sandboxed(model, descriptor, [1, 2], tmp_path / "out", LIMITS)
    assert not result.ok
    assert hostile.reason in result.reason
    assert "after 0 of 2 episodes" in result.reason
    assert result.log.startswith("palaestra agent sandbox: bubblewrap + seccomp")


@pytest.mark.slow
def test_a_model_that_loops_is_killed_at_the_wall_clock_limit_when_that_comes_first(
    tmp_path: Path, sandbox: None
) -> None:
    hostile = next(h for h in KILLED if h.name == "loop_of_two_to_the_62_turns")
    model, descriptor = write_agent(hostile.build(), hostile.descriptor, tmp_path / "agent.onnx")
    limits = SandboxLimits(cpu_seconds=600, wall_seconds=8, video=False)
    result = run_sandboxed(model, descriptor, [1], tmp_path / "out", limits)
    assert not result.ok
    assert result.reason == "killed: the wall-clock limit of 8 s was reached after 0 of 1 episodes"


@pytest.mark.slow
def test_an_honest_model_passes_under_the_limits_the_hostile_ones_are_stopped_by(
    tmp_path: Path, sandbox: None
) -> None:
    model, descriptor = write_agent(good_model().SerializeToString(), CARTPOLE, tmp_path / "agent.onnx")
    result = run_sandboxed(model, descriptor, [1, 2], tmp_path / "out", LIMITS)
    assert result.ok, result.reason + result.log
    assert load_results(str(tmp_path / "out"))["episode_rewards"] == list(result.rewards)
