"""Video schedules: which episode ids get a video (spec §3.5)."""

from __future__ import annotations

from collections.abc import Callable

VideoSchedule = Callable[[int], bool]


def capped_cubic_video_schedule(episode_id: int) -> bool:
    """Record episodes 0, 1, 8, 27, ..., 729 (the perfect cubes below 1000), then every 1000th."""
    if episode_id < 1000:
        return round(episode_id ** (1.0 / 3)) ** 3 == episode_id
    return episode_id % 1000 == 0


def disable_videos(episode_id: int) -> bool:
    """Never record a video."""
    return False


def every_episode(episode_id: int) -> bool:
    """Record every episode (handy for short evaluation runs)."""
    return True
