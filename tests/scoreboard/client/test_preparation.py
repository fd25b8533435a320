"""What the upload client checks before it sends anything: bad training directories (none, no
manifests, commingled env_infos, an open monitor, broken or missing videos, no data), the 100-video
cap, and the 2017 video archive format."""

from __future__ import annotations

import json
import logging
import tarfile
from pathlib import Path

import gymnasium as gym
import pytest

import palaestra
from palaestra.errors import MonitorError, ResultsError
from palaestra.monitoring import files
from palaestra.scoreboard import protocol
from palaestra.scoreboard.client import prepare_training_directory, subsample_videos, write_archive
from tests.scoreboard.client.client_helpers import (
    add_fake_videos,
    manifest_of,
    record_cartpole,
    record_frozenlake_videos,
)

# Every check here runs before the first request, so nothing listens on this address.
NOWHERE = {"server": "http://127.0.0.1:9", "api_key": "key_unused"}


def upload(directory: Path, **kwargs: object) -> str:
    return palaestra.upload(str(directory), **NOWHERE, **kwargs)  # type: ignore[arg-type]


def test_a_missing_directory_is_named(tmp_path):
    with pytest.raises(ResultsError, match=f"Training directory {tmp_path / 'nope'} does not exist"):
        upload(tmp_path / "nope")


def test_a_directory_without_manifests_gets_the_2017_hint(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ResultsError, match=f"Could not find any manifest files in {tmp_path}"):
        upload(tmp_path)


def test_commingled_runs_get_the_2017_message(tmp_path):
    record_cartpole(tmp_path, episodes=1)
    env = palaestra.Monitor(gym.make("MountainCar-v0"), tmp_path, video_callable=False, resume=True)
    env.reset(seed=0)
    env.close()
    with pytest.raises(ResultsError) as info:
        upload(tmp_path)
    assert "Found two unequal env_infos" in str(info.value)
    assert f"training directory {tmp_path} has commingled results from multiple runs" in str(info.value)


def test_an_open_monitor_must_be_closed_first(tmp_path):
    env = palaestra.Monitor(gym.make("CartPole-v1"), tmp_path / "open", video_callable=False)
    env.reset(seed=0)
    try:
        with pytest.raises(MonitorError) as info:
            upload(tmp_path / "open")
        assert str(info.value).startswith(f"Still have an open monitor on {tmp_path / 'open'}.")
        assert "You must run 'env.close()' before uploading." in str(info.value)
        # ignore_open_monitors skips the check (and then finds no completed episode)
        with pytest.raises(ResultsError, match="You didn't have any recorded training data"):
            upload(tmp_path / "open", ignore_open_monitors=True)
    finally:
        env.close()


def reset_only(directory: Path, env_id: str) -> None:
    """A closed run that was reset and stepped but never finished an episode."""
    env = palaestra.Monitor(gym.make(env_id), directory, video_callable=False)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    env.close()


def test_a_directory_without_episodes_or_videos_has_no_training_data(tmp_path):
    reset_only(tmp_path, "CartPole-v1")
    with pytest.raises(ResultsError) as info:
        upload(tmp_path)
    assert str(info.value).startswith(
        f"[CartPole-v1] You didn't have any recorded training data in {tmp_path}: it has no completed episodes"
    )


def test_a_directory_with_videos_but_no_completed_episode_has_nothing_to_score(tmp_path):
    """2017 uploaded its videos alone; the scoreboard scores episodes, so such an upload would be junk."""
    reset_only(tmp_path, "FrozenLake-v1")
    add_fake_videos(tmp_path, 2)
    for skip_videos in (False, True):
        with pytest.raises(ResultsError, match="no completed episodes, so there is nothing to score"):
            prepare_training_directory(tmp_path, skip_videos=skip_videos)


def test_a_missing_video_file_is_an_error_naming_it_with_the_way_out(tmp_path):
    record_frozenlake_videos(tmp_path, episodes=2)
    _, manifest = manifest_of(tmp_path)
    missing = tmp_path / manifest["videos"][1][0]
    missing.unlink()
    with pytest.raises(ResultsError) as info:
        upload(tmp_path)
    assert f"The video file {missing} listed in a manifest of {tmp_path} does not exist" in str(info.value)
    assert "skip_videos=True" in str(info.value) and "--skip-videos" in str(info.value)
    assert prepare_training_directory(tmp_path, skip_videos=True).videos == []


def test_a_missing_metadata_file_is_an_error_naming_it(tmp_path):
    record_frozenlake_videos(tmp_path, episodes=1)
    _, manifest = manifest_of(tmp_path)
    (tmp_path / manifest["videos"][0][1]).unlink()
    with pytest.raises(ResultsError, match=r"The video metadata file .*\.meta\.json listed in a manifest"):
        prepare_training_directory(tmp_path)


def test_unreadable_metadata_is_an_error_naming_it(tmp_path):
    record_frozenlake_videos(tmp_path, episodes=1)
    _, manifest = manifest_of(tmp_path)
    meta = tmp_path / manifest["videos"][0][1]
    meta.write_text('{"episode_id": 0, "content_type": "video/x-matroska"}')
    with pytest.raises(ResultsError, match=f"The video metadata file {meta} is unreadable or invalid"):
        prepare_training_directory(tmp_path)


def test_broken_and_empty_videos_are_skipped_with_a_warning(tmp_path, caplog):
    record_frozenlake_videos(tmp_path, episodes=3)
    _, manifest = manifest_of(tmp_path)
    (video0, meta0), (video1, _), (video2, _) = [(tmp_path / v, tmp_path / m) for v, m in manifest["videos"]]
    meta0.write_text(json.dumps({**json.loads(meta0.read_text()), "broken": True}))
    video1.write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        prepared = prepare_training_directory(tmp_path)
    assert [Path(v) for v, _ in prepared.videos] == [video2]
    assert f"Skipping video {video0}: it is marked broken by the recorder" in caplog.text
    assert f"Skipping video {video1}: it is empty" in caplog.text
    assert prepared.episodes == 3 and prepared.batch is not None


def test_more_than_100_videos_are_evenly_subsampled(tmp_path, caplog):
    record_cartpole(tmp_path, episodes=1, env_id="FrozenLake-v1")
    names = add_fake_videos(tmp_path, 250)
    with caplog.at_level(logging.WARNING, logger="palaestra"):
        prepared = prepare_training_directory(tmp_path)
    chosen = [Path(v).name for v, _ in prepared.videos]
    assert len(chosen) == protocol.MAX_VIDEOS
    assert chosen[0] == names[0] and chosen[-1] == names[-1] and len(set(chosen)) == 100
    assert "You recorded videos for 250 episodes, but the scoreboard only supports up to 100" in caplog.text


def test_subsampling_keeps_short_lists_whole():
    videos = [(f"v{i}.json", f"v{i}.meta.json") for i in range(7)]
    assert subsample_videos(videos) == videos
    assert subsample_videos(videos, limit=3) == [videos[0], videos[3], videos[6]]


def test_the_episode_batch_has_exactly_the_2017_keys(tmp_path):
    record_cartpole(tmp_path, episodes=4)
    prepared = prepare_training_directory(tmp_path)
    assert prepared.batch is not None
    doc = json.loads(prepared.batch)
    assert list(doc) == [
        "data_sources",
        "episode_lengths",
        "episode_rewards",
        "episode_types",
        "initial_reset_timestamps",
        "timestamps",
    ]
    assert len(doc["episode_lengths"]) == 4 and doc["data_sources"] == [0] * 4
    results = palaestra.load_results(tmp_path)
    assert doc["episode_rewards"] == results["episode_rewards"]


def test_a_vector_runs_episode_batch_adds_each_episodes_sub_environment(tmp_path):
    envs = palaestra.Monitor(gym.make_vec("CartPole-v1", num_envs=3), tmp_path, video_callable=False)
    envs.reset(seed=0)
    envs.action_space.seed(0)  # (unseeded, a sub-env's first random episode outlasted 60 steps now and then)
    for _ in range(200):
        envs.step(envs.action_space.sample())
    envs.close()
    doc = json.loads(prepare_training_directory(tmp_path).batch or b"")
    results = palaestra.load_results(tmp_path)
    assert list(doc) == [
        "data_sources",
        "episode_lengths",
        "episode_rewards",
        "episode_types",
        "initial_reset_timestamps",
        "timestamps",
        "env_index",
    ]
    assert doc["env_index"] == results["env_index"] and set(doc["env_index"]) == {0, 1, 2}


def test_write_archive_writes_the_2017_layout(tmp_path):
    record_frozenlake_videos(tmp_path / "run", episodes=2)
    prepared = prepare_training_directory(tmp_path / "run")
    archive = tmp_path / "videos.tar.gz"
    write_archive(prepared.videos, archive)
    with tarfile.open(archive, "r:gz") as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        assert {m.uname for m in tar.getmembers()} == {""}
    pairs = [[Path(v).name, Path(m).name] for v, m in prepared.videos]
    assert names == [*[n for pair in pairs for n in pair], "manifest.json"]
    assert manifest == {"version": 0, "videos": pairs}
    protocol.VideoArchiveManifest.model_validate(manifest)


def test_write_archive_refuses_what_the_2017_client_refused(tmp_path):
    record_frozenlake_videos(tmp_path, episodes=1)
    [(video, meta)] = prepare_training_directory(tmp_path).videos
    out = tmp_path / "a.tar.gz"
    with pytest.raises(ResultsError, match="limit of 100"):
        write_archive([(video, meta)] * 101, out)
    with pytest.raises(ResultsError, match="Duplicated video name"):
        write_archive([(video, meta), (video, meta)], out)
    with pytest.raises(ResultsError, match="No such video file"):
        write_archive([(video + ".gone", meta)], out)
    odd = tmp_path / "my video.json"
    odd.write_text("{}")
    with pytest.raises(ResultsError, match=r"Invalid video name my video\.json"):
        write_archive([(str(odd), meta)], out)


def test_video_digest_follows_the_bytes_not_the_mtime(tmp_path):
    import os

    record_frozenlake_videos(tmp_path, episodes=1)
    first = prepare_training_directory(tmp_path).video_digest
    [(video, _)] = prepare_training_directory(tmp_path).videos
    os.utime(video, (1, 1))
    assert prepare_training_directory(tmp_path).video_digest == first
    with open(video, "a") as f:
        f.write(" ")
    assert prepare_training_directory(tmp_path).video_digest != first


def test_benchmark_upload_of_a_directory_without_runs_says_so(tmp_path):
    (tmp_path / "empty-sub").mkdir()
    with pytest.raises(ResultsError, match=f"Could not find any evaluations in {tmp_path}"):
        upload(tmp_path, benchmark_id="ClassicControl2-v0")


def test_env_id_is_required_for_upload(tmp_path):
    from palaestra.monitoring.recording import env_info_for

    record_cartpole(tmp_path, episodes=1)
    path, manifest = manifest_of(tmp_path)
    manifest["env_info"] = {k: v for k, v in env_info_for(gym.make("CartPole-v1")).items() if k != "env_id"}
    files.atomic_write_json(path, manifest)
    with pytest.raises(ResultsError, match="missing required key env_id"):
        upload(tmp_path)
