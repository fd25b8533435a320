"""load_results: merge rules and clear errors for broken directories."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import palaestra
from palaestra.errors import ResultsError
from palaestra.monitoring import merge_stats_files
from tests.monitoring.monitoring_helpers import play


def write_run(directory, infix, stats, env_info=None):
    env_info = env_info or {"env_id": "CartPole-v1", "gym_version": "1.0"}
    stats_name = f"openaigym.episode_batch.{infix}.stats.json"
    (directory / stats_name).write_text(json.dumps(stats))
    manifest = {"stats": stats_name, "videos": [], "env_info": env_info}
    (directory / f"openaigym.manifest.{infix}.manifest.json").write_text(json.dumps(manifest))


def stats(timestamps, lengths=None, rewards=None, types=None, initial=0.0):
    n = len(timestamps)
    doc = {"initial_reset_timestamp": initial, "timestamps": timestamps,
           "episode_lengths": lengths or [10] * n, "episode_rewards": rewards or [1.0] * n}
    if types is not None:
        doc["episode_types"] = types
    return doc


def test_missing_directory(tmp_path):
    with pytest.raises(ResultsError, match=r"Training directory .*nowhere does not exist"):
        palaestra.load_results(tmp_path / "nowhere")


def test_directory_without_manifests(tmp_path):
    (tmp_path / "something.txt").write_text("x")
    with pytest.raises(ResultsError, match="Could not find any manifest files in"):
        palaestra.load_results(tmp_path)


def test_unreadable_manifest_names_the_file(tmp_path):
    write_run(tmp_path, "0.1", stats([1.0]))
    (tmp_path / "openaigym.manifest.0.1.manifest.json").write_text("{not json")
    with pytest.raises(ResultsError, match=r"Manifest .*openaigym\.manifest\.0\.1\.manifest\.json is not valid JSON"):
        palaestra.load_results(tmp_path)


def test_missing_stats_file_names_it(tmp_path):
    write_run(tmp_path, "0.1", stats([1.0]))
    (tmp_path / "openaigym.episode_batch.0.1.stats.json").unlink()
    with pytest.raises(ResultsError, match=r"Stats file .*0\.1\.stats\.json named by a manifest does not exist"):
        palaestra.load_results(tmp_path)


@pytest.mark.parametrize("doc, problem", [
    (stats([1.0, 2.0], lengths=[1]), "1 episode_lengths but 2 timestamps"),
    (stats([1.0], rewards=["x"]), "non-numeric or non-finite value in 'episode_rewards'"),
    ({"timestamps": [1.0], "episode_lengths": [1]}, "has no list 'episode_rewards'"),
    (stats([1.0], types=["q"]), "episode_types other than 't' and 'e'"),
    ([], "must hold a JSON object"),
])
def test_inconsistent_stats_are_named(tmp_path, doc, problem):
    write_run(tmp_path, "0.1", stats([1.0]))
    (tmp_path / "openaigym.episode_batch.0.1.stats.json").write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=problem):
        palaestra.load_results(tmp_path)


def test_non_finite_reward_is_rejected(tmp_path):
    write_run(tmp_path, "0.1", stats([1.0]))
    (tmp_path / "openaigym.episode_batch.0.1.stats.json").write_text(
        '{"timestamps": [1.0], "episode_lengths": [1], "episode_rewards": [NaN]}')
    with pytest.raises(ResultsError, match="non-finite"):
        palaestra.load_results(tmp_path)


def test_commingled_runs_are_refused_with_the_2017_message(tmp_path):
    write_run(tmp_path, "0.1", stats([1.0]))
    write_run(tmp_path, "0.2", stats([2.0]), env_info={"env_id": "Pendulum-v1", "gym_version": "1.0"})
    with pytest.raises(ResultsError, match="Found two unequal env_infos.*commingled results"):
        palaestra.load_results(tmp_path)


def test_merge_sorts_by_time_and_keeps_sources_aligned_with_initial_resets(tmp_path):
    write_run(tmp_path, "0.1", stats([1.0, 5.0], rewards=[1.0, 5.0], initial=0.5))
    write_run(tmp_path, "0.2", stats([], initial=None))  # empty: contributes no source
    write_run(tmp_path, "0.3", stats([3.0], rewards=[3.0], initial=2.5))
    results = palaestra.load_results(tmp_path)
    assert results["episode_rewards"] == [1.0, 3.0, 5.0]
    assert results["initial_reset_timestamps"] == [0.5, 2.5]
    # 2017 numbered the third file 2 although it had only two initial resets; palaestra keeps them aligned
    assert results["data_sources"] == [0, 1, 0]
    assert results["initial_reset_timestamp"] == 0.5
    assert results["episode_types"] is None


def test_extra_2017_episode_type_of_an_unfinished_episode_is_trimmed(tmp_path):
    write_run(tmp_path, "0.1", stats([1.0, 2.0], types=["t", "e", "t"]))
    assert palaestra.load_results(tmp_path)["episode_types"] == ["t", "e"]


def test_merge_of_no_episodes(tmp_path):
    write_run(tmp_path, "0.1", stats([]))
    merged = merge_stats_files([str(tmp_path / "openaigym.episode_batch.0.1.stats.json")])
    assert merged["timestamps"] == [] and merged["initial_reset_timestamp"] == 0


def test_videos_are_absolute_paths(tmp_path):
    env = palaestra.Monitor(gym.make("FrozenLake-v1", render_mode="ansi"), tmp_path)
    play(env, 2)
    env.close()
    results = palaestra.load_results(tmp_path)
    assert results["videos"], "FrozenLake with render_mode='ansi' records episode 0 and 1"
    for video, meta in results["videos"]:
        assert video.startswith(str(tmp_path)) and meta.endswith(".meta.json")


def test_unreadable_journal_names_the_file(tmp_path):
    write_run(tmp_path, "0.1", stats([1.0]))
    (tmp_path / "openaigym.episode_batch.0.1.stats.json.journal").write_bytes(b"not a journal at all")
    with pytest.raises(ResultsError, match=r"Episode journal .*\.journal cannot be read: not a palaestra episode journal"):
        palaestra.load_results(tmp_path)
