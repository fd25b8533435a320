"""palaestra.episodes: one episode table read from results, stats files and uploaded batches, and the
one writer of the stats document, byte for byte what the Monitors wrote before."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import orjson
import pytest

import palaestra
from palaestra import curves, solved_stats
from palaestra.benchmarks import Benchmark, ClipTo01ThenAverage, scoring
from palaestra.episodes import AXES, Episodes, EpisodesError, running_mean, trailing_mean
from palaestra.monitoring.journal import RECORD_DTYPE, episodes_of_records
from palaestra.monitoring.sb3_import import SB3MonitorFile, stats_document
from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol.batches import episode_batch_document
from tests.monitoring.monitoring_helpers import play


def record_run(directory: Path) -> Path:
    """A real Monitor's run: 4 training episodes, then 3 evaluation episodes, then 2 training ones."""
    env = palaestra.Monitor(gym.make("CartPole-v1"), directory, video_callable=False, uid="ep")
    play(env, 4, seed=1)
    env.set_monitor_mode("evaluation")
    play(env, 3, seed=2)
    env.set_monitor_mode("training")
    play(env, 2, seed=3)
    env.close()
    (stats,) = directory.glob("*.stats.json")
    return stats


def columns(episodes: Episodes) -> dict[str, list]:
    return {
        "lengths": episodes.lengths.tolist(),
        "rewards": episodes.rewards.tolist(),
        "timestamps": episodes.timestamps.tolist(),
        "types": episodes.types.tolist(),
    }


def test_the_three_readers_agree_on_one_recorded_run(tmp_path: Path) -> None:
    stats = record_run(tmp_path)
    results = palaestra.load_results(tmp_path)
    from_results = Episodes.from_results(results)
    from_stats = Episodes.from_stats_document(json.loads(stats.read_text()))
    uploaded = episode_batch_document(results, str(tmp_path))
    batch = protocol.parse_episode_batch(uploaded)
    from_model = Episodes.from_batch(batch)
    from_stored = Episodes.from_batch(batch.enriched("CartPole-v1"))

    expected = columns(from_results)
    assert expected["types"].count("e") == 3 and len(expected["types"]) >= 9
    for other in (from_stats, from_model, from_stored):
        assert columns(other) == expected
        assert other.first_reset == from_results.first_reset == results["initial_reset_timestamp"]
    assert from_results.total_steps == results["total_steps"]


def test_the_writer_writes_the_monitors_stats_file_byte_for_byte(tmp_path: Path) -> None:
    stats = record_run(tmp_path)
    text = stats.read_text()
    episodes = Episodes.from_stats_document(json.loads(text))
    assert json.dumps(episodes.to_stats_document()) == text
    assert list(json.loads(text)) == [
        "initial_reset_timestamp", "timestamps", "episode_lengths", "episode_rewards", "episode_types",
        "episode_truncated", "abandoned_steps", "abandoned_timestamps",
    ]  # fmt: skip


def test_the_document_of_lists_is_the_one_the_monitor_built_from_its_lists() -> None:
    lists = {
        "initial_reset_timestamp": 1700000000.125,
        "timestamps": [1700000001.1, 1700000002.7, 1700000003.05],
        "episode_lengths": [12, 200, 7],
        "episode_rewards": [12.0, -0.1, 1e-7],
        "episode_types": ["t", "e", "t"],
        "episode_truncated": [False, True, False],
        "abandoned_steps": [3],
        "abandoned_timestamps": [1700000002.9],
    }
    episodes = Episodes.from_columns(
        lists["episode_lengths"], lists["episode_rewards"], lists["timestamps"],
        types=lists["episode_types"], truncated=[np.bool_(x) for x in lists["episode_truncated"]],
        initial_reset_timestamp=lists["initial_reset_timestamp"],
        abandoned_steps=lists["abandoned_steps"], abandoned_timestamps=lists["abandoned_timestamps"],
    )  # fmt: skip
    assert json.dumps(episodes.to_stats_document()) == json.dumps(lists)
    assert Episodes.from_stats_document(lists).to_stats_document() == lists


def test_a_vector_monitors_document_round_trips_with_its_env_index_through_orjson() -> None:
    doc = {
        "initial_reset_timestamp": 10.0,
        "timestamps": [11.0, 11.0, 12.5],
        "episode_lengths": [3, 4, 5],
        "episode_rewards": [1.5, 2.0, -3.25],
        "episode_types": ["t", "t", "t"],
        "episode_truncated": [False, False, True],
        "abandoned_steps": [],
        "abandoned_timestamps": [],
        "env_index": [2, 0, 1],
    }
    episodes = Episodes.from_stats_document(doc)
    assert episodes.env_index.tolist() == [2, 0, 1]
    encoded = orjson.dumps(episodes.to_stats_columns(env_index=True), option=orjson.OPT_SERIALIZE_NUMPY)
    assert encoded == orjson.dumps(doc)
    assert episodes.to_stats_document(env_index=True) == doc


def test_a_real_vector_monitors_stats_file_reads_back_to_what_it_wrote(tmp_path: Path) -> None:
    envs = palaestra.Monitor(gym.make_vec("CartPole-v1", num_envs=3), tmp_path, video_callable=False, uid="v")
    envs.reset(seed=0)
    envs.action_space.seed(0)
    for _ in range(80):
        envs.step(envs.action_space.sample())
    envs.close()
    (stats,) = tmp_path.glob("*.stats.json")
    raw = stats.read_bytes()
    episodes = Episodes.from_stats_document(json.loads(raw))
    assert set(episodes.env_index.tolist()) == {0, 1, 2}
    assert orjson.dumps(episodes.to_stats_columns(env_index=True), option=orjson.OPT_SERIALIZE_NUMPY) == raw


def test_the_journal_records_become_the_same_episodes() -> None:
    records = np.zeros(4, RECORD_DTYPE)
    records["t"] = [1.0, 2.0, 3.0, 4.0]
    records["r"] = [1.0, 0.0, 5.0, 6.0]
    records["l"] = [10, 4, 30, 40]
    records["kind"] = [0, 2, 1, 0]  # training, abandoned, evaluation, training
    records["source"] = [0, 0, 1, 1]
    episodes = episodes_of_records(0.5, records)
    assert episodes.lengths.tolist() == [10, 30, 40]
    assert episodes.types.tolist() == ["t", "e", "t"]
    assert episodes.env_index.tolist() == [0, 1, 1]
    assert (episodes.abandoned_steps.tolist(), episodes.abandoned_timestamps.tolist()) == ([4], [2.0])
    assert episodes.total_steps == 84


def test_the_sb3_import_writes_only_the_2017_keys() -> None:
    monitor = SB3MonitorFile("m.monitor.csv", 100.0, "CartPole-v1", [9.0, 11.0], [9, 11], [0.5, 1.25])
    assert stats_document(monitor) == {
        "initial_reset_timestamp": 100.0,
        "timestamps": [100.5, 101.25],
        "episode_lengths": [9, 11],
        "episode_rewards": [9.0, 11.0],
        "episode_types": ["t", "t"],
    }


def split_run() -> Episodes:
    return Episodes.from_columns(
        [10, 20, 30, 40, 50], [1.0, 2.0, 3.0, 4.0, 5.0], [101.0, 102.0, 103.0, 104.0, 105.0],
        types=["t", "e", "t", "e", "t"], initial_reset_timestamp=100.0,
        abandoned_steps=[7], abandoned_timestamps=[102.5],
    )  # fmt: skip


def test_the_training_and_evaluation_split() -> None:
    episodes = split_run()
    training, evaluation = episodes.training(), episodes.evaluation()
    assert training.rewards.tolist() == [1.0, 3.0, 5.0]
    assert evaluation.rewards.tolist() == [2.0, 4.0]
    assert (training.timesteps, evaluation.timesteps, episodes.total_steps) == (90, 60, 157)
    assert training.first_reset == evaluation.first_reset == 100.0  # the run's, not the subset's
    assert training.training() is training  # already all training: no copy


def test_the_axes_are_defined_once() -> None:
    training = split_run().training()
    assert list(AXES) == ["episode", "timestep", "seconds"]
    assert training.axis("episode").tolist() == [0.0, 1.0, 2.0]
    assert training.axis("timestep").tolist() == [0.0, 10.0, 40.0]  # the steps before each episode
    assert training.axis("seconds").tolist() == [1.0, 3.0, 5.0]
    with pytest.raises(EpisodesError, match="Unknown x axis 'minutes': the axes are episode, timestep, seconds"):
        training.axis("minutes")
    chart = curves.from_episode_batch(split_run(), trials=2, threshold=None)
    assert chart is not None
    assert [chart[axis] for axis in AXES] == [training.axis(axis).tolist() for axis in AXES]


def test_the_running_mean_lives_in_one_place() -> None:
    assert solved_stats.running_mean is running_mean and solved_stats.trailing_mean is trailing_mean
    assert running_mean([1, 2, 3, 4], 2).tolist() == [1.5, 2.5, 3.5]
    assert trailing_mean([2, 4, 6], 2).tolist() == [2.0, 3.0, 5.0]


def test_the_readers_feed_solved_stats_curves_and_scorers_alike(tmp_path: Path) -> None:
    record_run(tmp_path)
    results = palaestra.load_results(tmp_path)
    episodes = Episodes.from_results(results)
    assert solved_stats.solved_stats(episodes, trials=3) == solved_stats.solved_stats(results, trials=3)
    doc = episode_batch_document(results, str(tmp_path))
    assert curves.from_episode_batch(episodes, 3, None) == curves.from_episode_batch(doc, 3, None)
    bench = Benchmark(
        "EpisodesTable", ClipTo01ThenAverage(num_episodes=2),
        [{"env_id": "CartPole-v1", "trials": 1, "max_timesteps": 10**6, "reward_floor": 0, "reward_ceiling": 500}],
    )  # fmt: skip
    by_table = bench.score_episodes("CartPole-v1", episodes)
    by_columns = scoring.score_results(bench, "CartPole-v1", results)
    assert by_table["scores"] == by_columns["scores"]
    assert by_table["rewards"][0].tolist() == episodes.evaluation().rewards[-2:].tolist()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"episode_rewards": [1.0]}, "1 episode_rewards but 2 episode_lengths"),
        ({"timestamps": [1.0, 2.0, 3.0]}, "3 timestamps but 2 episode_lengths"),
        ({"episode_types": ["t", "x"]}, "unknown episode type 'x': episode_types must be 't' .training. or 'e'"),
        ({"episode_types": ["t"]}, "1 episode_types but 2 episode_lengths"),
        ({"data_sources": [0, 2], "initial_reset_timestamps": [1.0]}, "data_sources up to 2 but only 1"),
        ({"abandoned_steps": [3]}, "abandoned_steps but no abandoned_timestamps"),
        ({"episode_lengths": [1, "two"]}, "non-numeric value in 'episode_lengths'"),
    ],
)
def test_bad_columns_are_refused_naming_the_problem(change: dict, message: str) -> None:
    results = {"episode_lengths": [1, 2], "episode_rewards": [1.0, 2.0], "timestamps": [1.0, 2.0], **change}
    with pytest.raises(EpisodesError, match=f"The upload is inconsistent: {message}|The upload has .*{message}"):
        Episodes.from_results(results, "The upload")


def test_a_stats_document_without_a_list_is_refused() -> None:
    with pytest.raises(EpisodesError, match="Stats file x.stats.json has no list 'episode_rewards'"):
        Episodes.from_stats_document({"timestamps": [], "episode_lengths": []}, "Stats file x.stats.json")


def test_the_table_itself_refuses_columns_of_different_lengths() -> None:
    good = split_run()
    with pytest.raises(EpisodesError, match="Episodes has 4 rewards but 5 lengths"):
        Episodes(**{**good.__dict__, "rewards": good.rewards[:4]})


def test_results_without_a_needed_column_are_refused() -> None:
    with pytest.raises(EpisodesError, match="The results: the column 'timestamps' is missing"):
        Episodes.from_results({"episode_lengths": [1], "episode_rewards": [1.0]})


def test_load_results_names_the_stats_file_whose_columns_disagree(tmp_path: Path) -> None:
    stats = record_run(tmp_path)
    doc = json.loads(stats.read_text())
    stats.write_text(json.dumps({**doc, "abandoned_steps": [5], "abandoned_timestamps": []}))
    with pytest.raises(palaestra.errors.ResultsError, match=f"Stats file {stats}.*1 abandoned_steps but 0"):
        palaestra.load_results(tmp_path)


@pytest.mark.parametrize("types", [["te", ""], ["t", None], ["t", 1], ["é", "t"]])
def test_types_that_are_not_one_letter_each_are_refused(types: list) -> None:
    with pytest.raises(EpisodesError, match="unknown episode type"):
        Episodes.from_columns([1, 2], [1.0, 2.0], [1.0, 2.0], types=types)


def test_a_vector_runs_batch_keeps_each_episodes_sub_environment_both_ways() -> None:
    doc = {
        "episode_lengths": [3, 5, 4], "episode_rewards": [1.0, 2.0, 3.0], "episode_types": ["t", "t", "t"],
        "timestamps": [1.0, 2.0, 3.0], "initial_reset_timestamps": [0.0], "data_sources": [0, 0, 0],
        "env_index": [2, 0, 1],
    }
    batch = protocol.EpisodeBatch.model_validate(doc)
    from_model, from_document = Episodes.from_batch(batch), Episodes.from_batch(batch.enriched("CartPole-v1"))
    assert from_model.env_index.tolist() == from_document.env_index.tolist() == [2, 0, 1]
