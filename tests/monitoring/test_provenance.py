"""The Monitor's provenance file: what ran, with which code, arguments and seeds (docs/provenance.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest

import palaestra
from palaestra.monitoring import files
from palaestra.monitoring.provenance import load_provenance, redact_argv
from tests.legacy_gym import run_legacy_gym
from tests.monitoring.monitoring_helpers import play

SCRIPT = textwrap.dedent(
    """
    import sys, gymnasium as gym, palaestra
    env = palaestra.Monitor(gym.make("CartPole-v1", max_episode_steps=20), sys.argv[1],
                            video_callable=False, config={"lr": 0.01, "wandb_token": "abc"})
    for seed in (7, None, 11):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    env.close()
    """
)


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_a_run_in_a_modified_git_tree_records_its_commit_dirty_flag_seeds_and_redacted_command(tmp_path):
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "train.py").write_text(SCRIPT)
    (repo / "agent.py").write_text("LR = 0.01\n")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    (repo / "agent.py").write_text("LR = 0.02\n")  # modified after the commit
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "PALAESTRA_PROVENANCE"}
    subprocess.run(
        [
            sys.executable,
            "train.py",
            str(run_dir),
            "--api-key",
            "pal_0123456789abcdef",
            "--hf=hf_abcdefghijkl",
        ],
        cwd=repo,
        check=True,
        env=env,
        timeout=120,
    )
    [path] = files.detect_provenance_files(run_dir)
    document = json.loads(Path(path).read_text())
    assert document["git"]["commit"] == commit
    assert document["git"]["dirty"] is True
    assert len(document["git"]["diff_sha256"]) == 64
    assert document["seeds"] == [{"reset": 0, "seed": 7}, {"reset": 2, "seed": 11}]
    assert document["resets"] == 3
    argv = document["command"]["argv"]
    assert "pal_0123456789abcdef" not in json.dumps(document) and "hf_abcdefghijkl" not in json.dumps(
        document
    )
    assert argv[2:] == ["--api-key", "[REDACTED]", "--hf=[REDACTED]"]
    assert document["command"]["script"] == "train.py" and len(document["command"]["script_sha256"]) == 64
    assert document["config"] == {"lr": 0.01, "wandb_token": "[REDACTED]"}
    assert document["env"]["id"] == "CartPole-v1"
    assert document["env"]["max_episode_steps"] == 20 and document["env"]["registry_max_episode_steps"] == 500
    assert document["env"]["wrappers"][0] == "TimeLimit"
    assert document["packages"]["gymnasium"] == gym.__version__
    assert document["system"]["cpu_count"] == os.cpu_count()
    # nothing of the environment's variables is recorded
    assert os.environ.get("HOME", "/nonexistent-home") not in json.dumps(document["command"])


def test_a_clean_tree_is_recorded_as_not_dirty_and_outside_git_there_is_no_commit(tmp_path):
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "train.py").write_text(SCRIPT)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    subprocess.run([sys.executable, "train.py", str(tmp_path / "run")], cwd=repo, check=True, timeout=120)
    (repo / ".git").rename(repo / "not-git")
    subprocess.run([sys.executable, "train.py", str(tmp_path / "run2")], cwd=repo, check=True, timeout=120)
    assert load_provenance(tmp_path / "run")["git"]["dirty"] is False
    assert "diff_sha256" not in load_provenance(tmp_path / "run")["git"]
    assert load_provenance(tmp_path / "run2")["git"] is None


def test_resolved_kwargs_merge_constructor_and_registry_defaults_with_what_was_passed(tmp_path):
    ale_py = pytest.importorskip("ale_py", reason="the atari extra (ale-py) is not installed")
    gym.register_envs(ale_py)
    env = palaestra.Monitor(
        gym.make("ALE/Pong-v5", repeat_action_probability=0.0, max_episode_steps=5), tmp_path
    )
    env.reset(seed=1)
    env.close()
    described = load_provenance(tmp_path)["env"]
    assert described["kwargs"]["repeat_action_probability"] == 0.0
    assert described["registry_kwargs"]["repeat_action_probability"] == 0.25
    assert described["kwargs"]["frameskip"] == 4 and described["kwargs"]["full_action_space"] is False
    assert described["kwargs"]["max_num_frames_per_episode"] == 108000  # the constructor's default
    assert described["max_episode_steps"] == 5 and "ale-py" in load_provenance(tmp_path)["packages"]


def test_the_vector_monitor_records_one_document_with_the_seeds_and_the_number_of_envs(tmp_path):
    envs = palaestra.Monitor(gym.make_vec("CartPole-v1", num_envs=3), tmp_path, config={"batch": 3})
    envs.reset(seed=5)
    for _ in range(30):
        envs.step(envs.action_space.sample())
    envs.reset(seed=9)
    envs.close()
    [path] = files.detect_provenance_files(tmp_path)
    document = json.loads(Path(path).read_text())
    assert document["seeds"] == [{"reset": 0, "seed": 5}, {"reset": 1, "seed": 9}]
    assert document["env"]["num_envs"] == 3 and document["env"]["id"] == "CartPole-v1"
    assert "num_envs" not in document["env"]["kwargs"]  # the vector's size, not an argument of the env
    assert document["config"] == {"batch": 3}


def test_provenance_can_be_turned_off_or_fields_left_out(tmp_path):
    env = palaestra.Monitor(gym.make("CartPole-v1"), tmp_path / "off", provenance=False)
    play(env, 1)
    env.close()
    assert files.detect_provenance_files(tmp_path / "off") == []
    env = palaestra.Monitor(
        gym.make("CartPole-v1"), tmp_path / "some", provenance_omit=["system.host", "git"]
    )
    play(env, 1)
    env.close()
    document = load_provenance(tmp_path / "some")
    assert "host" not in document["system"] and "git" not in document and "cpu" in document["system"]
    assert document["omitted"] == ["git", "system.host"]
    with pytest.raises(ValueError, match="provenance_omit names \\['hostname'\\].*system.host"):
        palaestra.Monitor(gym.make("CartPole-v1"), tmp_path / "bad", provenance_omit=["hostname"])


def test_a_killed_run_keeps_the_seeds_it_was_given(tmp_path):
    code = textwrap.dedent(f"""
        import os, gymnasium as gym, palaestra
        env = palaestra.Monitor(gym.make("CartPole-v1"), {str(tmp_path)!r})
        env.reset(seed=1)
        env.reset(seed=2)
        os._exit(9)
    """)
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 9
    assert load_provenance(tmp_path)["seeds"] == [{"reset": 0, "seed": 1}, {"reset": 1, "seed": 2}]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--api-key", "abc"], ["--api-key", "[REDACTED]"]),
        (["--wandb-key=abc"], ["--wandb-key=[REDACTED]"]),
        (["--password", "x", "--lr", "3"], ["--password", "[REDACTED]", "--lr", "3"]),
        (["pal_abcdefghijklmnop"], ["[REDACTED]"]),
        (["--model=hf_abcdefghijk"], ["--model=[REDACTED]"]),
        (["OPENAI=sk-proj-abcdefghijk"], ["OPENAI=[REDACTED]"]),
        (["https://me:hunter2@example.org/x"], ["https://me:[REDACTED]@example.org/x"]),
        (["--env", "CartPole-v1"], ["--env", "CartPole-v1"]),
    ],
)
def test_command_line_secrets_are_redacted(argv, expected):
    assert redact_argv(argv) == expected


@pytest.mark.legacy_gym
def test_gym094_load_results_reads_a_directory_with_a_provenance_file(tmp_path, legacy_gym_python):
    env = palaestra.Monitor(gym.make("FrozenLake-v1"), tmp_path, config={"x": 1})
    lengths = play(env, 3)
    env.close()
    assert files.detect_provenance_files(tmp_path)
    code = textwrap.dedent(f"""
        import json, gym.monitoring
        r = gym.monitoring.load_results({str(tmp_path)!r})
        print(json.dumps({{"lengths": r["episode_lengths"], "env_info": r["env_info"]}}))
    """)
    loaded = json.loads(run_legacy_gym(legacy_gym_python, code).strip().splitlines()[-1])
    assert loaded["lengths"] == lengths and loaded["env_info"]["env_id"] == "FrozenLake-v1"


def test_palaestra_run_records_its_agent_settings_as_config(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "palaestra",
            "run",
            "CartPole-v1",
            "--agent",
            "cem",
            "--episodes",
            "3",
            "--seed",
            "4",
            "--monitor",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    document = load_provenance(tmp_path)
    assert document["config"]["agent"] == "cem" and document["config"]["seed"] == 4
    assert document["config"]["agent_settings"]["population"] == 20
    assert document["command"]["argv"][:2] == ["-m palaestra", "run"]
    assert document["seeds"] == [{"reset": 0, "seed": 4}]


def test_vector_env_fns_monitors_each_write_provenance_and_loading_merges_their_seeds(tmp_path):
    fns = palaestra.monitoring.vector_env_fns(
        [lambda: gym.make("CartPole-v1")] * 2, tmp_path, config={"n": 2}
    )
    envs = gym.vector.SyncVectorEnv(fns)
    envs.reset(seed=10)  # SyncVectorEnv seeds its sub-environments 10 and 11
    envs.close()
    assert len(files.detect_provenance_files(tmp_path)) == 2
    document = load_provenance(tmp_path)
    assert document["sources"] == 2 and document["config"] == {"n": 2}
    assert sorted((s["source"], s["seed"]) for s in document["seeds"]) == [(0, 10), (1, 11)]


def test_a_hand_edited_provenance_file_is_not_sent_and_the_warning_names_the_field(tmp_path, caplog):
    from palaestra.scoreboard.client.preparation import prepare_training_directory

    env = palaestra.Monitor(gym.make("CartPole-v1"), tmp_path)
    play(env, 2)
    env.close()
    [path] = files.detect_provenance_files(tmp_path)
    document = json.loads(Path(path).read_text())
    document["git"] = {"commit": "HEAD~1", "dirty": False}
    Path(path).write_text(json.dumps(document))
    prepared = prepare_training_directory(tmp_path)
    assert prepared.provenance is None and prepared.episodes == 2
    assert "its field git.commit is invalid" in caplog.text
