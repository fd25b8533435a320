"""Recording: the Monitor (of one env or of a vector env), its statistics, videos, schedules and
loading (spec §3)."""

from palaestra.monitoring.files import (
    clear_monitor_files,
    detect_monitor_files,
    detect_training_manifests,
)
from palaestra.monitoring.monitor import Monitor, vector_env_fns
from palaestra.monitoring.open_monitors import open_monitors
from palaestra.monitoring.results import (
    Results,
    collapse_env_infos,
    load_env_info_from_manifests,
    load_results,
    merge_stats_files,
)
from palaestra.monitoring.schedules import capped_cubic_video_schedule, disable_videos, every_episode
from palaestra.monitoring.stats import StatsRecorder, VectorStatsRecorder
from palaestra.monitoring.vector import VectorMonitor


def __getattr__(name: str) -> object:
    # The video recorder pulls in subprocess/ffmpeg machinery: import it only when asked for.
    if name == "VideoRecorder":
        from palaestra.monitoring.video import VideoRecorder

        return VideoRecorder
    raise AttributeError(name)


__all__ = [
    "Monitor",
    "Results",
    "StatsRecorder",
    "VectorMonitor",
    "VectorStatsRecorder",
    "VideoRecorder",
    "capped_cubic_video_schedule",
    "clear_monitor_files",
    "collapse_env_infos",
    "detect_monitor_files",
    "detect_training_manifests",
    "disable_videos",
    "every_episode",
    "load_env_info_from_manifests",
    "load_results",
    "merge_stats_files",
    "open_monitors",
    "vector_env_fns",
]
