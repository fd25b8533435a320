"""The environment catalogue: one source of groups, thresholds and trials."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra import catalogue


def test_gymnasium_envs_carry_their_registry_threshold():
    entry = catalogue.lookup("CartPole-v1")
    assert entry is not None
    assert (entry.group, entry.reward_threshold, entry.trials, entry.available) == ("classic_control", 475.0, 100, True)
    assert entry.solving_rule == (
        "CartPole-v1 defines solving as an average reward of 475.0 over 100 consecutive episodes."
    )


def test_2017_ids_are_registered_with_their_2017_threshold_under_their_2017_group():
    entry = catalogue.lookup("FrozenLake-v0")
    assert entry is not None and (entry.reward_threshold, entry.group, entry.available) == (0.78, "toy_text", True)
    assert entry.legacy is not None and entry.legacy.successor == "FrozenLake-v1"
    assert catalogue.lookup("Copy-v0").group == "algorithmic"  # type: ignore[union-attr]
    assert catalogue.lookup("OffSwitchCartpole-v0").group == "safety"  # type: ignore[union-attr]
    assert catalogue.lookup("OneRoundDeterministicReward-v0").group == "debugging"  # type: ignore[union-attr]
    retired = catalogue.lookup("ConvergenceControl-v0")
    assert retired is not None and retired.group == "parameter_tuning" and not retired.available
    assert "Keras" in str(retired.unavailable_reason)


def test_acrobot_v1_is_judged_by_the_registry_that_recorded_the_run():
    # 2017 had no threshold for Acrobot-v1: a gym 0.9 run is never "solved"; Gymnasium's is -100
    assert catalogue.solving_criteria("Acrobot-v1", "0.9.4") == (100, None)
    assert catalogue.solving_criteria("Acrobot-v1", "0.9.2") == (100, None)
    assert catalogue.solving_criteria("Acrobot-v1", "1.1.1") == (100, -100.0)
    assert catalogue.solving_criteria("Acrobot-v1", "0.26.3") == (100, -100.0)
    assert catalogue.solving_criteria("Acrobot-v1") == (100, -100.0)  # no version: this installation's


def test_a_2017_run_of_an_id_the_2017_registry_lacked_is_judged_by_todays():
    assert catalogue.judged_by_2017_registry("0.9.4") and catalogue.judged_by_2017_registry("0.7.0")
    assert not any(catalogue.judged_by_2017_registry(v) for v in ("0.10.5", "0.21.0", "1.0.0", "", None, "dev"))
    assert catalogue.solving_criteria("FrozenLake-v1", "0.9.4") == (100, 0.7)
    assert catalogue.solving_criteria("FrozenLake-v0", "0.9.4") == (100, 0.78)


def _write_run(directory: Path, gym_version: str, rewards: list[float]) -> None:
    """A training directory in the 2017 format, as the named gym wrote it."""
    from palaestra.monitoring import files

    directory.mkdir()
    stats = "openaigym.episode_batch.0.1.stats.json"
    files.atomic_write_json(directory / stats, {
        "initial_reset_timestamp": 1000.0, "timestamps": [1001.0 + i for i in range(len(rewards))],
        "episode_lengths": [80] * len(rewards), "episode_rewards": rewards, "episode_types": ["t"] * len(rewards),
    })  # fmt: skip
    env_info = {"env_id": "Acrobot-v1", "gym_version": gym_version}
    files.atomic_write_json(directory / "openaigym.manifest.0.1.manifest.json", files.manifest_document(stats, [], env_info))


def test_palaestra_results_judges_acrobot_by_the_gym_that_recorded_it(tmp_path: Path):
    from palaestra.results_report import summarize

    rewards = [-80.0] * 120
    _write_run(tmp_path / "gym094", "0.9.4", rewards)
    _write_run(tmp_path / "gymnasium", "1.1.1", rewards)
    old, new = summarize(tmp_path / "gym094"), summarize(tmp_path / "gymnasium")
    assert (old.reward_threshold, old.solved) == (None, False)
    assert (new.reward_threshold, new.solved) == (-100.0, True)


def test_unknown_env_is_unlisted_and_scored_without_threshold():
    assert catalogue.lookup("MyOwnEnv-v3") is None
    assert catalogue.solving_criteria("MyOwnEnv-v3") == (100, None)


def test_atari_ids_are_grouped_when_ale_py_is_installed():
    pytest.importorskip("ale_py")
    entry = catalogue.lookup("PongNoFrameskip-v4")
    assert entry is not None and entry.group == "atari" and "Pong" in entry.summary
    assert catalogue.lookup("ALE/Pong-v5") is not None


def test_entries_by_group_and_bad_group():
    classic = catalogue.entries("classic_control")
    assert classic and all(e.group == "classic_control" for e in classic)
    with pytest.raises(ValueError, match="Unknown group 'nope'"):
        catalogue.entries("nope")


def test_unsolved_env_says_so():
    entry = catalogue.lookup("Pendulum-v1")
    assert entry is not None and entry.reward_threshold is None
    assert "no reward threshold" in entry.solving_rule


def test_an_id_gymnasium_refuses_on_the_installed_engine_is_not_listed_as_runnable():
    import importlib.metadata

    version = pytest.importorskip("mujoco").__version__
    assert importlib.metadata.version("mujoco") == version
    entry = catalogue.lookup("Pusher-v4")
    assert entry is not None
    if int(version.split(".")[0]) >= 3:  # Gymnasium's Pusher-v4 raises on mujoco 3 and later
        assert not entry.available and "Pusher-v5" in str(entry.unavailable_reason)
    else:
        assert entry.available
    assert catalogue.lookup("Pusher-v5").available  # type: ignore[union-attr]


# Run in a Python where Box2D cannot be imported (as without the box2d extra): each reader's answer
# for LunarLander-v2 (a 2017 id that Gymnasium's LunarLander-v3 makes) and LunarLander-v3, as JSON.
WITHOUT_BOX2D = r"""
import contextlib, io, json, sys
sys.modules["Box2D"] = None  # `import Box2D` raises ModuleNotFoundError, find_spec says None
import gymnasium
from palaestra.benchmarks.registry import Benchmark
from palaestra.cli import main
from palaestra.training import TrainingError, make_env

listing = io.StringIO()
with contextlib.redirect_stdout(listing):
    main(["envs", "--all", "--json"])
envs = {e["env_id"]: e["unavailable_reason"] for e in json.loads(listing.getvalue())}
tasks = [{"env_id": i, "trials": 1, "max_timesteps": 10} for i in ("LunarLander-v2", "LunarLander-v3")]
benchmark = Benchmark(id="Box2DOnly-v0", scorer=None, tasks=tasks)
answers = {}
for env_id in ("LunarLander-v2", "LunarLander-v3"):
    try:
        make_env(env_id, video=False)
        training = None
    except TrainingError as exc:
        training = str(exc)
    answers[env_id] = {"envs": envs[env_id], "benchmark": benchmark.unavailable_reasons().get(env_id),
                       "training": training}
try:
    gymnasium.make("LunarLander-v2")
except Exception as exc:
    answers["LunarLander-v2"]["successor"] = [type(exc).__name__, str(exc)]
print(json.dumps(answers))
"""


def test_an_env_whose_extra_is_missing_is_unrunnable_in_the_catalogues_words_everywhere(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from tests.cli.cli_helpers import cli_env

    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_BOX2D], cwd=tmp_path, env=cli_env(), capture_output=True, text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout.splitlines()[-1])
    for env_id in ("LunarLander-v2", "LunarLander-v3"):
        reason = f"{env_id} needs Box2D, which is not installed: pip install 'palaestra[box2d]'"
        answer = answers[env_id]
        assert answer["envs"] == answer["benchmark"] == reason, answer
        assert answer["training"] == f"Cannot make {env_id}: {reason}"
    assert answers["LunarLander-v2"]["successor"] == ["DependencyNotInstalled", answers["LunarLander-v2"]["envs"]]


def test_the_import_probe_names_an_entry_point_that_does_not_import() -> None:
    import gymnasium

    gymnasium.register("BrokenImport-v0", entry_point="palaestra_no_such_module:Env")
    try:
        assert catalogue.unavailable_reason("BrokenImport-v0") is None  # not listed, nothing imported
        reason = catalogue.unavailable_reason("BrokenImport-v0", import_probe=True)
        assert reason is not None and reason.startswith("BrokenImport-v0 cannot be made here: ")
        assert "palaestra_no_such_module" in reason
    finally:
        del gymnasium.registry["BrokenImport-v0"]
    assert catalogue.unavailable_reason("NoSuchEnv-v0") == "not registered in this installation"
