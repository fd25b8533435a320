"""``palaestra import sb3``: Stable-Baselines3 ``monitor.csv`` files become a training directory that
``load_results`` merges and ``palaestra.upload`` uploads like any other."""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import palaestra
from palaestra.cli import main
from palaestra.errors import ResultsError
from palaestra.monitoring import files
from palaestra.monitoring.sb3_import import import_sb3, read_sb3_monitor
from palaestra.scoreboard.client import prepare_training_directory


@pytest.fixture(autouse=True)
def _restore_cli_logging() -> Iterator[None]:
    logger = logging.getLogger("palaestra")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


def write_sb3_monitor(
    path: Path,
    t_start: float,
    env_id: str | None,
    episodes: list[tuple[float, int, float]],
    extra: dict[str, list[object]] | None = None,
) -> Path:
    """Write a file the way SB3's ``ResultsWriter`` does: a ``#`` JSON header, then ``r,l,t[,extra]``."""
    extra = extra or {}
    with open(path, "w", newline="") as f:
        f.write("#" + json.dumps({"t_start": t_start, "env_id": env_id}) + "\n")
        writer = csv.DictWriter(f, fieldnames=("r", "l", "t", *extra))
        writer.writeheader()
        for i, (r, length, t) in enumerate(episodes):
            row = {"r": round(r, 6), "l": length, "t": round(t, 6)}
            row.update({k: v[i] for k, v in extra.items()})
            writer.writerow(row)
            f.flush()
    return path


@pytest.fixture
def two_envs(tmp_path: Path) -> list[Path]:
    """Two sub-environments of one vectorised CartPole run, as ``make_vec_env(monitor_dir=...)`` writes."""
    logs = tmp_path / "logs"
    logs.mkdir()
    return [
        write_sb3_monitor(
            logs / "0.monitor.csv",
            1700000000.5,
            "CartPole-v1",
            [(12.0, 12, 0.25), (30.0, 30, 0.9), (9.0, 9, 1.1)],
            extra={"is_success": [0, 0, 1]},
        ),
        write_sb3_monitor(
            logs / "1.monitor.csv", 1700000000.7, "CartPole-v1", [(20.0, 20, 0.5), (44.0, 44, 1.5)]
        ),
    ]


def test_files_become_one_directory_that_load_results_merges(two_envs, tmp_path):
    summary = import_sb3(two_envs, tmp_path / "run")
    assert summary.env_id == "CartPole-v1" and summary.episodes == 5 and len(summary.manifests) == 2
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert names == [
        files.stats_name("0.sb3"),
        files.stats_name("1.sb3"),
        files.manifest_name("0.sb3"),
        files.manifest_name("1.sb3"),
    ]
    results = palaestra.load_results(tmp_path / "run")
    assert results["env_info"]["env_id"] == "CartPole-v1" and "gym_version" in results["env_info"]
    # merged in the order the episodes ended: t_start + t
    assert results["episode_rewards"] == [12.0, 20.0, 30.0, 9.0, 44.0]
    assert results["episode_lengths"] == [12, 20, 30, 9, 44]
    assert results["timestamps"] == pytest.approx(
        [1700000000.75, 1700000001.2, 1700000001.4, 1700000001.6, 1700000002.2]
    )
    assert results["data_sources"] == [0, 1, 0, 0, 1]
    assert results["initial_reset_timestamps"] == [1700000000.5, 1700000000.7]
    assert results["initial_reset_timestamp"] == 1700000000.5
    assert results["episode_types"] == ["t"] * 5


def test_the_imported_directory_is_ready_to_upload(two_envs, tmp_path):
    import_sb3(two_envs, tmp_path / "run")
    prepared = prepare_training_directory(tmp_path / "run")
    assert prepared.env_id == "CartPole-v1" and prepared.episodes == 5 and prepared.videos == []
    assert prepared.batch is not None and json.loads(prepared.batch)["data_sources"] == [0, 1, 0, 0, 1]


def test_a_directory_argument_means_its_monitor_files(two_envs, tmp_path):
    assert import_sb3([two_envs[0].parent], tmp_path / "run").episodes == 5


def test_env_id_comes_from_the_option_when_the_header_has_none(tmp_path):
    f = write_sb3_monitor(tmp_path / "monitor.csv", 1.0, None, [(1.0, 1, 0.1)])
    with pytest.raises(ResultsError, match="pass it with --env-id"):
        import_sb3([f], tmp_path / "run")
    assert import_sb3([f], tmp_path / "run", env_id="Acrobot-v1").env_id == "Acrobot-v1"
    assert palaestra.load_results(tmp_path / "run")["env_info"]["env_id"] == "Acrobot-v1"


def test_conflicting_env_ids_are_refused(two_envs, tmp_path):
    with pytest.raises(ResultsError, match="--env-id Pendulum-v1 conflicts with env_id CartPole-v1"):
        import_sb3(two_envs, tmp_path / "run", env_id="Pendulum-v1")
    other = write_sb3_monitor(tmp_path / "other.monitor.csv", 1.0, "Pendulum-v1", [(1.0, 1, 0.1)])
    with pytest.raises(ResultsError, match=r"different environments \(CartPole-v1, Pendulum-v1\)"):
        import_sb3([*two_envs, other], tmp_path / "run")
    assert not (tmp_path / "run").exists() or not list((tmp_path / "run").iterdir())


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("r,l,t\n1,1,1\n", "line 1 must be '#' followed by a JSON header"),
        ("#{not json}\nr,l,t\n", "header on line 1 is not valid JSON"),
        ('#{"env_id": "CartPole-v1"}\nr,l,t\n', "no numeric t_start"),
        ('#{"t_start": 1}\nreward,length\n', "line 2 must be the CSV header 'r,l,t'"),
        ('#{"t_start": 1}\nr,l,t\n1.0,2,0.5\n1.0,two,0.7\n', "line 4: r, l and t must be numbers"),
        ('#{"t_start": 1}\nr,l,t\nnan,2,0.5\n', "line 3: r and t must be finite"),
        ('#{"t_start": 1}\nr,l,t\n1.0,2.5,0.5\n', "line 3: l must be a non-negative integer"),
    ],
)
def test_malformed_files_are_named_with_the_line(tmp_path, content, message):
    path = tmp_path / "bad.monitor.csv"
    path.write_text(content)
    with pytest.raises(ResultsError) as info:
        read_sb3_monitor(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_missing_input_is_an_error(tmp_path):
    with pytest.raises(ResultsError, match="Cannot read SB3 monitor file"):
        import_sb3([tmp_path / "nope.monitor.csv"], tmp_path / "run", env_id="CartPole-v1")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsError, match=r"No SB3 monitor files \(\*monitor.csv\)"):
        import_sb3([tmp_path / "empty"], tmp_path / "run")


def test_an_occupied_output_directory_needs_force(two_envs, tmp_path):
    import_sb3(two_envs[:1], tmp_path / "run")
    with pytest.raises(ResultsError, match="already holds a training run.*--force"):
        import_sb3(two_envs, tmp_path / "run")
    assert import_sb3(two_envs[1:], tmp_path / "run", force=True).episodes == 2
    assert len(files.detect_training_manifests(tmp_path / "run")) == 1


def test_a_file_with_no_episodes_is_imported_with_a_warning(tmp_path, caplog):
    f = write_sb3_monitor(tmp_path / "monitor.csv", 5.0, "CartPole-v1", [])
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        assert import_sb3([f], tmp_path / "run").episodes == 0
    assert "has no completed episodes" in caplog.text
    with pytest.raises(ResultsError, match="You didn't have any recorded training data"):
        prepare_training_directory(tmp_path / "run")


def test_cli_import_sb3(two_envs, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["import", "sb3", *map(str, two_envs), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert f"Imported 5 episodes of CartPole-v1 from 2 file(s) into {out}" in captured.out
    assert (captured.out + captured.err).count("Imported 5 episodes") == 1  # the summary once, not also logged
    assert main(["import", "sb3", str(two_envs[0]), "--out", str(out), "--env-id", "Other-v0"]) == 1
    assert "conflicts with env_id CartPole-v1" in capsys.readouterr().err


def test_files_written_by_stable_baselines3_itself(tmp_path):
    """Only where SB3 is installed (it is not a dependency): its own Monitor writes the input."""
    sb3_monitor = pytest.importorskip("stable_baselines3.common.monitor")
    import gymnasium as gym

    env = sb3_monitor.Monitor(gym.make("CartPole-v1"), str(tmp_path / "sb3"))
    for seed in range(3):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    env.close()
    summary = import_sb3([tmp_path / "sb3.monitor.csv"], tmp_path / "run")
    assert summary.episodes == 3
    assert palaestra.load_results(tmp_path / "run")["episode_lengths"] == env.get_episode_lengths()


@pytest.mark.legacy_gym
def test_gym_094_loads_an_imported_directory(two_envs, tmp_path, legacy_gym_python):
    import os
    import subprocess

    import_sb3(two_envs, tmp_path / "run")
    code = (
        "import json, gym.monitoring as m\n"
        f"r = m.load_results({str(tmp_path / 'run')!r})\n"
        "print(json.dumps([r['env_info']['env_id'], list(r['episode_rewards'])]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [legacy_gym_python, "-c", code],
        capture_output=True,
        text=True,
        env={**env, "GYM_NO_LOGGER_SETUP": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["CartPole-v1", [12.0, 20.0, 30.0, 9.0, 44.0]]
