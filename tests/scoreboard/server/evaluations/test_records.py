"""The scoreboard's records: the "solved" statistics spelt once, and the stored video typed once."""

from __future__ import annotations

import typing

import pytest

from palaestra.monitoring.files import CONTENT_TYPE_ANSI, CONTENT_TYPE_MP4
from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.evaluations.records import SCORE_FIELDS, StoredVideo, score_of, stored_videos
from palaestra.scoreboard.server.tables.scores import Evaluation
from palaestra.solved_stats import SolvedStats


def test_the_score_is_the_solved_stats_plus_what_they_were_scored_against_each_in_its_own_column() -> None:
    assert (*typing.get_type_hints(SolvedStats), "trials", "reward_threshold", "solved") == SCORE_FIELDS
    columns = set(Evaluation.__table__.columns.keys())
    assert set(SCORE_FIELDS) <= columns, set(SCORE_FIELDS) - columns


def test_score_of_reads_the_columns_by_name() -> None:
    given = {"trials": 100, "solved": True, "number_episodes": 3, "number_timesteps": 40, "mean": 1.5,
             "evaluation_episodes": 0}
    row = Evaluation(**{**dict.fromkeys(SCORE_FIELDS), **given})
    score = score_of(row)
    assert score == protocol.EvaluationScore(trials=100, solved=True, number_episodes=3, number_timesteps=40, mean=1.5)


def video(name: str, episode_id: int | None, content_type: str = CONTENT_TYPE_MP4) -> StoredVideo:
    meta = name.rsplit(".", 1)[0] + ".meta.json"
    return StoredVideo(name, meta, episode_id, content_type, 10, f"videos/x.{name}", f"videos/x.{meta}")


def test_a_stored_video_reads_back_and_shows_no_blob_keys() -> None:
    v = video("openaigym.video.0.1.video000003.mp4", 3)
    assert StoredVideo.from_stored(v.stored()) == v
    assert set(v.summary().model_dump()) == set(protocol.VideoSummary.model_fields)
    assert (v.kind, v.media_type) == ("mp4", "video/mp4")
    ansi = video("openaigym.video.0.1.video000004.json", 4, CONTENT_TYPE_ANSI)
    assert (ansi.kind, ansi.media_type) == ("terminal", "application/json")
    assert video("openaigym.video.0.1.video000005.avi", 5).media_type == "video/x-msvideo"


def test_stored_videos_are_in_episode_order_with_unnumbered_ones_last() -> None:
    videos = [video("c.mp4", None), video("b.mp4", 10), video("a.mp4", 2)]
    assert [v.name for v in stored_videos([v.stored() for v in videos])] == ["a.mp4", "b.mp4", "c.mp4"]
    assert stored_videos(None) == ()


def test_a_stored_video_without_its_blob_key_is_refused() -> None:
    doc = video("a.mp4", 1).stored()
    del doc["key"]
    with pytest.raises(KeyError, match="key"):
        StoredVideo.from_stored(doc)
