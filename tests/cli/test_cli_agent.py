"""``palaestra agent pack`` and ``palaestra agent check``, run as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.cli.cli_helpers import cli_env, palaestra

pytest.importorskip("onnxruntime", reason="the 'agents' extra is not installed")

from palaestra.agents.artifact import AgentDescriptor
from palaestra.agents.artifact.examples import sb3_cartpole_model, write_agent
from palaestra.monitoring.results import load_results
from tests.agents.artifact.hostile import KILLED, REFUSED


@pytest.fixture
def cartpole(tmp_path: Path) -> Path:
    descriptor = AgentDescriptor(env_id="CartPole-v1", action="index", deterministic=True)
    model, _ = write_agent(sb3_cartpole_model(), descriptor, tmp_path / "cartpole.onnx")
    return Path(model)


@pytest.mark.slow
def test_check_evaluates_the_model_in_the_sandbox_and_prints_its_score(
    cartpole: Path, tmp_path: Path, sandbox: None
) -> None:
    done = palaestra("agent", "check", str(cartpole), "--episodes", "2", "--seed", "7", "--no-video")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Static checks passed: ")
    assert "input 'input' [batch, 4] float32, output 'actions' [batch]; acts in Discrete(2)" in lines[0].replace("'batch'", "batch")
    assert lines[1] == f"Evaluating 2 episodes of CartPole-v1 in the sandbox into {tmp_path / 'cartpole.check'}/"
    assert lines[2] == "  episode 1/2 (seed 7): 500"
    assert lines[-1] == "Score: 500 ± 0 (standard error) over 2 episodes, seeds 7..8"
    assert load_results(str(tmp_path / "cartpole.check"))["episode_rewards"] == [500.0, 500.0]


def test_check_refuses_a_hostile_model_in_one_line_naming_the_problem(tmp_path: Path) -> None:
    hostile = next(h for h in REFUSED if h.name == "external_data_relative_traversal")
    model, _ = write_agent(hostile.build(), hostile.descriptor, tmp_path / "agent.onnx")
    done = palaestra("agent", "check", model)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "palaestra agent: error: tensor 'w' (initializer 'w') keeps its data in an external file "
        "'../../etc/passwd'; the board accepts only self-contained models: save with "
        "onnx.save_model(model, path, save_as_external_data=False)"
    ]
    assert not (tmp_path / "agent.check").exists()


@pytest.mark.slow
def test_check_reports_a_run_the_sandbox_stopped_with_its_reason(tmp_path: Path, sandbox: None) -> None:
    hostile = next(h for h in KILLED if h.name == "nan_output_from_zero_over_zero")
    model, _ = write_agent(hostile.build(), hostile.descriptor, tmp_path / "agent.onnx")
    done = palaestra("agent", "check", model, "--episodes", "1", "--no-video")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "palaestra agent: error: the evaluation failed: stopped after 0 of 1 episodes: PolicyError: "
        "the model's output 'logits' holds NaN or infinity"
    )


def test_check_static_only_runs_the_checks_and_evaluates_nothing(cartpole: Path, tmp_path: Path) -> None:
    done = palaestra("agent", "check", str(cartpole), "--static-only")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Static checks passed: ") and "Evaluating" not in done.stdout
    assert not (tmp_path / "cartpole.check").exists()


def test_check_without_a_descriptor_says_how_to_make_one(tmp_path: Path) -> None:
    (tmp_path / "agent.onnx").write_bytes(sb3_cartpole_model())
    done = palaestra("agent", "check", str(tmp_path / "agent.onnx"))
    assert done.returncode == 1
    assert "cannot read the agent descriptor" in done.stderr and "palaestra agent pack` writes one" in done.stderr


def test_pack_without_torch_says_what_to_install(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['torch'] = None\n"  # as if torch were not installed
        "from palaestra.cli import main\n"
        f"sys.exit(main(['agent', 'pack', 'policy.pt', '--env', 'CartPole-v1', '--out', {str(tmp_path / 'a.onnx')!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=cli_env(), timeout=120)
    assert done.returncode == 1
    assert "`palaestra agent pack` exports with PyTorch, which is not installed: pip install torch" in done.stderr


def test_pack_exports_a_torch_module_that_acts_as_the_module_does(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import onnxruntime

    module = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
    torch.save(module, tmp_path / "policy.pt")
    done = palaestra("agent", "pack", str(tmp_path / "policy.pt"), "--env", "CartPole-v1", "--out", str(tmp_path / "policy.onnx"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Wrote {tmp_path / 'policy.onnx'} and its descriptor; checked: ")
    descriptor = AgentDescriptor.from_json((tmp_path / "policy.json").read_text())
    assert (descriptor.env_id, descriptor.action, descriptor.deterministic) == ("CartPole-v1", "argmax", True)
    observations = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    session = onnxruntime.InferenceSession(str(tmp_path / "policy.onnx"))
    exported = session.run(None, {"observation": observations})[0]
    with torch.no_grad():
        expected = module(torch.from_numpy(observations)).numpy()
    np.testing.assert_allclose(exported, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_pack_exports_an_sb3_model_that_takes_sb3s_deterministic_actions(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    sb3 = pytest.importorskip("stable_baselines3")
    import onnxruntime

    model = sb3.PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, seed=0)
    model.learn(64)
    model.save(tmp_path / "ppo.zip")
    done = palaestra("agent", "pack", str(tmp_path / "ppo.zip"), "--sb3", "ppo", "--env", "CartPole-v1", "--out", str(tmp_path / "ppo.onnx"))
    assert done.returncode == 0, done.stderr
    assert AgentDescriptor.from_json((tmp_path / "ppo.json").read_text()).action == "index"
    observations = np.random.default_rng(1).normal(size=(32, 4)).astype(np.float32)
    session = onnxruntime.InferenceSession(str(tmp_path / "ppo.onnx"))
    exported = session.run(None, {"observation": observations})[0]
    expected, _ = model.predict(observations, deterministic=True)
    assert exported.tolist() == expected.tolist()


@pytest.mark.slow
def test_check_plays_a_go_agent_against_the_boards_anchors_and_prints_its_points(
    tmp_path: Path, sandbox: None, gnugo: str
) -> None:
    from palaestra.ladder.match import read_match
    from tests.scoreboard.server.agents.agent_helpers import write_go_agent

    model = write_go_agent(tmp_path / "agent")
    done = palaestra("agent", "check", str(model), "--games", "1", "--seed", "5", "--move-seconds", "10")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    directory = model.with_suffix(".check")
    assert lines[1] == f"Playing 1 game of Go9x9-v0 against each of random, gnugo:0 in the sandbox into {directory}/"
    assert lines[2].startswith("  game 1/2 against random: ") and lines[3].startswith("  game 2/2 against gnugo:0: ")
    against = {line.split(":")[0]: line for line in lines if line.startswith("Against ")}
    assert set(against) == {"Against random", "Against gnugo"} and against["Against gnugo"].endswith("of 1 points")
    # the match folders are palaestra match's, the agent named plainly, each game a replayable record
    folders = sorted(p for p in directory.iterdir() if p.is_dir())
    assert len(folders) == 2
    for folder in folders:
        match = read_match(folder)
        assert "agent" in [p["name"] for p in match["players"]] and len(match["games"]) == 1
