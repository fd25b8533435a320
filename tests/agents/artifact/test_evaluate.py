"""Agents evaluated as the board evaluates them: in the sandbox (real bubblewrap, a real evaluator
process), under the protocol, into a training directory that ``load_results`` reads, with video."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from palaestra.agents.artifact import (
    AgentDescriptor,
    SandboxLimits,
    SandboxUnavailable,
    evaluate_agent,
    load_descriptor,
    run_sandboxed,
)
from palaestra.agents.artifact.examples import cleanrl_atari_model, write_agent
from palaestra.monitoring.provenance import load_provenance
from palaestra.monitoring.results import load_results
from tests.agents.artifact.hostile import REFUSED

pytestmark = pytest.mark.slow


def test_an_sb3_style_cartpole_policy_is_evaluated_in_the_sandbox_into_a_training_directory_with_video(
    cartpole_agent: tuple[str, str], tmp_path: Path, sandbox: None
) -> None:
    model, descriptor = cartpole_agent
    seeds = [11, 12, 13]
    progress: list[tuple[int, float]] = []
    result = run_sandboxed(
        model, descriptor, seeds, tmp_path / "run", SandboxLimits(), on_episode=lambda i, r: progress.append((i, r))
    )
    assert result.ok, result.reason + result.log
    assert (result.reason, result.confined, result.episodes) == ("", True, 3)
    results = load_results(str(tmp_path / "run"))
    assert results["episode_rewards"] == list(result.rewards) == [r for _, r in progress]
    assert [i for i, _ in progress] == [0, 1, 2]
    assert min(results["episode_rewards"]) > 100  # the example policy balances the pole
    assert len(results["videos"]) == 2  # episodes 0 and 1, on the Monitor's schedule
    assert all(os.path.getsize(video) > 0 for video, _ in results["videos"])
    provenance = load_provenance(tmp_path / "run")
    assert provenance is not None
    evaluation = provenance["config"]["agent_evaluation"]
    assert evaluation["sha256"] == hashlib.sha256(Path(model).read_bytes()).hexdigest()
    assert evaluation["seeds"] == seeds
    assert evaluation["descriptor"] == json.loads(Path(descriptor).read_text())
    assert [s["seed"] for s in provenance["seeds"]] == seeds


def test_the_sandboxed_evaluation_scores_what_the_same_evaluation_in_process_scores(
    cartpole_agent: tuple[str, str], tmp_path: Path, sandbox: None
) -> None:
    model, descriptor = cartpole_agent
    seeds = [3, 4]
    inside = run_sandboxed(model, descriptor, seeds, tmp_path / "inside", SandboxLimits(video=False))
    rewards: list[float] = []
    evaluate_agent(
        model, load_descriptor(descriptor), seeds, tmp_path / "outside", video=False,
        on_episode=lambda i, r: rewards.append(r),
    )
    assert inside.ok, inside.reason + inside.log
    assert list(inside.rewards) == rewards == load_results(str(tmp_path / "outside"))["episode_rewards"]


def test_a_cleanrl_style_atari_policy_is_evaluated_under_machado_et_al_s_protocol(tmp_path: Path, sandbox: None) -> None:
    from palaestra.scoreboard.server.evaluations.conditions import derive_conditions

    descriptor = AgentDescriptor.from_document(
        {
            "env_id": "ALE/Breakout-v5",
            "preprocessing": {"name": "atari", "frame_skip": 1},  # v5 skips 4 frames itself
            "action": "sample",  # as CleanRL's PPO acts (a random CNN's argmax never serves the ball)
            "deterministic": False,
        }
    )
    model, descriptor_path = write_agent(cleanrl_atari_model(), descriptor, tmp_path / "breakout.onnx")
    result = run_sandboxed(model, descriptor_path, [1, 2], tmp_path / "run", SandboxLimits())
    assert result.ok, result.reason + result.log
    results = load_results(str(tmp_path / "run"))
    assert results["episode_rewards"] == list(result.rewards)
    assert len(results["videos"]) == 2
    provenance = load_provenance(tmp_path / "run")
    assert provenance is not None
    card = derive_conditions("ALE/Breakout-v5", provenance)
    assert card["atari"] == {
        "family": "v5",
        "repeat_action_probability": 0.25,
        "frameskip": 4,
        "full_action_space": True,
        "max_num_frames_per_episode": 108_000,
        "obs_type": "rgb",
    }


def test_a_refused_model_given_to_the_sandbox_is_refused_before_anything_runs(tmp_path: Path, sandbox: None) -> None:
    hostile = next(h for h in REFUSED if h.name == "external_data_absolute_path")
    model, descriptor = write_agent(hostile.build(), hostile.descriptor, tmp_path / "agent.onnx")
    result = run_sandboxed(model, descriptor, [1], tmp_path / "run", SandboxLimits(video=False))
    assert not result.ok
    assert result.error_kind == "ArtifactError"
    assert result.reason.startswith("refused: tensor 'w' (initializer 'w') keeps its data in an external file '/etc/passwd'")
    assert result.returncode is None and not (tmp_path / "run").exists()


def test_the_evaluator_refuses_a_model_other_than_the_one_checked(
    cartpole_agent: tuple[str, str], tmp_path: Path
) -> None:
    # the sandbox hands the evaluator its caller's findings; a file swapped after the check is caught
    from palaestra.agents.artifact import ArtifactError, check_artifact

    model, descriptor = cartpole_agent
    info = check_artifact(model, load_descriptor(descriptor))
    Path(model).write_bytes(Path(model).read_bytes() + b"\0")
    with pytest.raises(ArtifactError, match="is not the one that was checked"):
        evaluate_agent(model, load_descriptor(descriptor), [1], tmp_path / "run", checked=info)


def test_an_error_in_the_progress_callback_stops_the_sandbox_and_reaches_the_caller(
    cartpole_agent: tuple[str, str], tmp_path: Path, sandbox: None
) -> None:
    model, descriptor = cartpole_agent

    def cancel(index: int, reward: float) -> None:
        raise KeyboardInterrupt  # a worker told to stop

    with pytest.raises(KeyboardInterrupt):
        run_sandboxed(model, descriptor, list(range(50)), tmp_path / "run", SandboxLimits(video=False), on_episode=cancel)
    # what finished before the stop loads (the Monitor's journal)
    assert len(load_results(str(tmp_path / "run"))["episode_rewards"]) >= 1


def test_without_bubblewrap_the_board_refuses_to_evaluate_and_writes_nothing(
    cartpole_agent: tuple[str, str], tmp_path: Path
) -> None:
    model, descriptor = cartpole_agent
    limits = SandboxLimits(bwrap=str(tmp_path / "no-such-bwrap"))
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap \(.*no-such-bwrap'\) is not installed: apt-get install bubblewrap"):
        run_sandboxed(model, descriptor, [1], tmp_path / "run", limits)
    assert not (tmp_path / "run").exists()


def test_the_operator_may_allow_unconfined_evaluations_and_the_result_says_so(
    cartpole_agent: tuple[str, str], tmp_path: Path
) -> None:
    model, descriptor = cartpole_agent
    limits = SandboxLimits(bwrap=str(tmp_path / "no-such-bwrap"), allow_unconfined=True, video=False)
    result = run_sandboxed(model, descriptor, [1], tmp_path / "run", limits)
    assert result.ok, result.reason + result.log
    assert result.confined is False
    assert result.log.startswith("palaestra agent sandbox: UNCONFINED (bubblewrap")
    assert load_results(str(tmp_path / "run"))["episode_rewards"] == list(result.rewards)


def test_where_the_kernel_forbids_user_namespaces_the_evaluator_refuses_to_start(
    cartpole_agent: tuple[str, str], tmp_path: Path, sandbox: None
) -> None:
    # the whole call runs inside an outer bubblewrap that forbids further user namespaces, as a
    # container or a hardened kernel does
    model, descriptor = cartpole_agent
    script = (
        "import sys\n"
        "from palaestra.agents.artifact import SandboxLimits, SandboxUnavailable, run_sandboxed\n"
        "try:\n"
        f"    run_sandboxed({model!r}, {descriptor!r}, [1], {str(tmp_path / 'run')!r}, SandboxLimits())\n"
        "except SandboxUnavailable as exc:\n"
        "    print(exc); sys.exit(0)\n"
        "sys.exit(1)\n"
    )
    outer = ["bwrap", "--unshare-user", "--disable-userns", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    done = subprocess.run(
        [*outer, sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env={**os.environ},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bubblewrap cannot create the sandbox's namespaces here" in done.stdout
    assert "does not run agents unconfined unless the operator allows it" in done.stdout
    assert not (tmp_path / "run").exists()
