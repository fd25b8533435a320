"""``palaestra import tensorboard``: a CleanRL or Stable-Baselines3 run's TensorBoard event files become a
training directory that ``palaestra results`` scores and ``palaestra upload`` uploads.

The event files are real: written by tensorboardX's ``SummaryWriter`` (the API of
``torch.utils.tensorboard`` that CleanRL and SB3 log through) from a real vectorised CartPole run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import palaestra
from palaestra.cli import main
from palaestra.errors import ResultsError
from palaestra.monitoring import files
from palaestra.monitoring.provenance import load_provenance
from palaestra.monitoring.tensorboard_import import SB3_NOTE, import_tensorboard
from palaestra.scoreboard.client import prepare_training_directory
from palaestra.scoreboard.protocol.provenance import Provenance

tensorboardX = pytest.importorskip("tensorboardX")
pytest.importorskip("tensorboard")

from tests.monitoring.tensorboard_runs import cleanrl_run, sb3_run  # noqa: E402  (needs tensorboardX)


@pytest.fixture(autouse=True)
def _restore_cli_logging() -> Iterator[None]:
    logger = logging.getLogger("palaestra")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


@pytest.fixture
def cleanrl(tmp_path: Path) -> tuple[Path, list[tuple[float, int, int]]]:
    run_dir = tmp_path / "runs" / "CartPole-v1__ppo__1__1700000000"
    return run_dir, cleanrl_run(run_dir)


def test_a_cleanrl_run_round_trips_episode_for_episode(cleanrl, tmp_path):
    run_dir, logged = cleanrl
    done = import_tensorboard(run_dir, tmp_path / "out")
    assert (done.env_id, done.episodes, done.notes) == ("CartPole-v1", len(logged), [])  # env id: the run's name
    results = palaestra.load_results(str(tmp_path / "out"))
    # TensorBoard stores scalars as 32-bit floats: the returns come back as TensorBoard holds them
    assert results["episode_rewards"] == [float(np.float32(r)) for r, _, _ in logged]
    assert results["episode_lengths"] == [length for _, length, _ in logged]
    stamps = results["timestamps"]
    assert stamps == sorted(stamps) and results["initial_reset_timestamp"] <= stamps[0]
    provenance = load_provenance(tmp_path / "out")
    Provenance.model_validate(provenance)  # what the server accepts
    assert provenance["env"] == {"id": "CartPole-v1"} and provenance["seeds"] == [{"reset": 0, "seed": 1}]
    assert "import_note" not in provenance["config"]


def test_the_imported_directory_is_scored_and_ready_to_upload(cleanrl, tmp_path, capsys):
    run_dir, logged = cleanrl
    assert main(["import", "tensorboard", str(run_dir), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"Imported {len(logged)} episodes of CartPole-v1 from" in out and "Note:" not in out
    assert main(["results", str(tmp_path / "out")]) == 0
    assert f"Episodes:            {len(logged)} ({len(logged)} training, 0 evaluation)" in capsys.readouterr().out
    prepared = prepare_training_directory(tmp_path / "out")
    assert prepared.env_id == "CartPole-v1" and prepared.episodes == len(logged)
    assert prepared.provenance is not None
    assert (prepared.provenance.recorded_by or "").endswith("import tensorboard")


def test_an_event_file_can_be_named_alone_with_its_env_id(cleanrl, tmp_path):
    run_dir, logged = cleanrl
    (event_file,) = run_dir.glob("events.out.tfevents.*")
    assert import_tensorboard(event_file, tmp_path / "out", env_id="CartPole-v1").episodes == len(logged)


def test_a_run_folder_without_a_cleanrl_name_needs_the_env_id(tmp_path):
    cleanrl_run(tmp_path / "my-run", episodes=3)
    with pytest.raises(ResultsError, match=r"do not record the environment.*--env-id ID"):
        import_tensorboard(tmp_path / "my-run", tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written before the input was checked
    assert import_tensorboard(tmp_path / "my-run", tmp_path / "out", env_id="CartPole-v1").episodes == 3


def test_sb3_rolling_means_become_approximate_episodes_and_say_so(tmp_path, capsys):
    points = [(2048, 20.0, 20.0), (4096, 40.0, 40.5), (6144, 100.0, 102.4)]
    sb3_run(tmp_path / "tb" / "PPO_1", points)
    out = tmp_path / "out"
    assert main(["import", "tensorboard", str(tmp_path / "tb"), "--env-id", "CartPole-v1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Note: the episodes are approximate:" in printed and "rollout/ep_rew_mean" in printed
    results = palaestra.load_results(str(out))
    # 2048 / 20 = 102.4 -> 102 episodes of 20; the 8 steps left over count toward the next point
    assert results["episode_lengths"][:102] == [20] * 102 and results["episode_rewards"][:102] == [20.0] * 102
    assert sum(results["episode_lengths"]) == pytest.approx(6144, abs=110)  # every step, to within an episode
    assert set(results["episode_rewards"]) == {20.0, 40.0, 100.0}
    assert load_provenance(out)["config"]["import_note"] == SB3_NOTE  # the evaluation page lists it
    manifest = files.read_json(files.detect_training_manifests(out)[0])
    assert manifest["env_info"]["import_note"] == SB3_NOTE


def test_per_episode_scalars_win_over_sb3_means(cleanrl, tmp_path):
    run_dir, logged = cleanrl
    sb3_run(run_dir, [(100, 5.0, 5.0)], filename_suffix=".2")  # a second event file in the run folder
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 2
    done = import_tensorboard(run_dir, tmp_path / "out")
    assert done.tags == ("charts/episodic_return", "charts/episodic_length") and done.notes == []
    assert done.episodes == len(logged)


def test_no_episode_scalars_is_an_error_that_lists_the_tags_found(tmp_path, capsys):
    writer = tensorboardX.SummaryWriter(str(tmp_path / "run"))
    writer.add_scalar("losses/policy_loss", 0.1, 1)
    writer.add_scalar("charts/learning_rate", 3e-4, 1)
    writer.close()
    (event_file,) = (tmp_path / "run").glob("events.out.tfevents.*")
    argv = ["import", "tensorboard", str(tmp_path / "run"), "--env-id", "CartPole-v1", "--out", str(tmp_path / "o")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert str(event_file) in err and "charts/episodic_return and charts/episodic_length" in err
    assert "Scalar tags found: charts/learning_rate, losses/policy_loss" in err
    assert not files.detect_training_manifests(tmp_path / "o") if (tmp_path / "o").exists() else True


def test_a_return_series_without_its_lengths_names_the_missing_tag(tmp_path):
    writer = tensorboardX.SummaryWriter(str(tmp_path / "run"))
    writer.add_scalar("charts/episodic_return", 10.0, 4)
    writer.close()
    with pytest.raises(ResultsError, match=r"no scalar tag charts/episodic_length.*Scalar tags found: charts/episodic_return"):
        import_tensorboard(tmp_path / "run", tmp_path / "out", env_id="CartPole-v1")


def test_a_folder_of_several_runs_is_refused_naming_them(tmp_path):
    for name in ("CartPole-v1__ppo__1__1", "CartPole-v1__ppo__2__2"):
        cleanrl_run(tmp_path / "runs" / name, episodes=2)
    with pytest.raises(ResultsError, match=r"holds 2 TensorBoard runs \(CartPole-v1__ppo__1__1, CartPole-v1__ppo__2__2\)"):
        import_tensorboard(tmp_path / "runs", tmp_path / "out")
    # one run inside a folder is found
    assert import_tensorboard(tmp_path / "runs" / "CartPole-v1__ppo__2__2", tmp_path / "out").episodes == 2


def test_a_folder_without_event_files_and_a_file_that_is_not_one_are_named(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsError, match=r"No TensorBoard event files \(events.out.tfevents.\*\) in .*empty"):
        import_tensorboard(tmp_path / "empty", tmp_path / "out", env_id="CartPole-v1")
    junk = tmp_path / "events.out.tfevents.123.host"
    junk.write_bytes(b"this is not a TFRecord file at all, it is text")
    with pytest.raises(ResultsError, match=rf"{junk} is not a TensorBoard event file: not one record in it could be read"):
        import_tensorboard(junk, tmp_path / "out", env_id="CartPole-v1")


def test_an_occupied_output_directory_needs_force(cleanrl, tmp_path):
    run_dir, logged = cleanrl
    import_tensorboard(run_dir, tmp_path / "out")
    with pytest.raises(ResultsError, match="already holds a training run"):
        import_tensorboard(run_dir, tmp_path / "out")
    assert import_tensorboard(run_dir, tmp_path / "out", force=True).episodes == len(logged)
    assert len(files.detect_training_manifests(tmp_path / "out")) == 1
    assert json.loads((tmp_path / "out" / files.stats_name("0.tensorboard")).read_text())["episode_lengths"] == [
        length for _, length, _ in logged
    ]
