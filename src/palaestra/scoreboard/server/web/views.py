"""What the templates show: plain data classes filled by :mod:`.queries` (no ORM objects in templates).

An evaluation's page shows its :class:`~palaestra.scoreboard.server.evaluations.records.EvaluationRecord`, the
record the API answers with too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from palaestra.benchmarks.statistics import Interval
from palaestra.catalogue import Group
from palaestra.scoreboard.server.evaluations.records import StoredVideo

PAGE_SIZE = 25


@dataclass(frozen=True)
class Page:
    """One page of a sorted table: ``number`` (1-based) of ``pages``, and how to link to others."""

    number: int
    size: int
    total: int
    path: str
    sort: str = ""
    sort_label: str = ""
    params: Mapping[str, str] = field(default_factory=dict)

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.size

    def url(self, **changes: Any) -> str:
        """This page's URL with ``changes`` (e.g. ``page=2`` or ``sort="mean"``) applied."""
        query: dict[str, str] = dict(self.params)
        if self.sort:
            query["sort"] = self.sort
        query["page"] = str(self.number)
        query.update({k: str(v) for k, v in changes.items()})
        if query.get("page") == "1":
            del query["page"]
        return self.path + ("?" + urlencode(query) if query else "")


def clamp_page(number: int, total: int, size: int = PAGE_SIZE) -> int:
    """A requested page number brought into ``1..pages``."""
    pages = max(1, -(-total // size))
    return min(max(1, number), pages)


@dataclass(frozen=True)
class EnvCard:
    """One env on the home page."""

    env_id: str
    summary: str
    available: bool
    n_evaluations: int
    best_episodes: int | None = None
    best_mean: float | None = None
    best_evaluation_id: str | None = None


@dataclass(frozen=True)
class GroupView:
    id: str
    name: str
    description: str
    active: list[EnvCard]
    idle: list[EnvCard]

    @classmethod
    def of(cls, group: Group, cards: list[EnvCard]) -> GroupView:
        return cls(
            id=group.id,
            name=group.name,
            description=group.description,
            active=[c for c in cards if c.n_evaluations],
            idle=[c for c in cards if not c.n_evaluations],
        )


@dataclass(frozen=True)
class EnvHeader:
    """The top of an env page."""

    env_id: str
    group_id: str
    group_name: str
    summary: str
    solving_rule: str
    trials: int
    reward_threshold: float | None
    max_episode_steps: int | None
    listed: bool
    available: bool
    n_solved: int | None
    #: the registered benchmarks that have a task of this env
    benchmarks: tuple[str, ...] = ()


@dataclass(frozen=True)
class EvaluationRow:
    """One evaluation in a table (leaderboard, user's, algorithm's)."""

    id: str
    env_id: str | None
    algorithm_id: str | None
    algorithm_name: str | None
    user: str | None
    solved: bool
    episode_t_value: int | None
    mean: float | None
    error: float | None
    number_episodes: int
    created: datetime | None
    writeup: str | None
    #: the solving window; a run shorter than it shows ``episodes_mean`` (``solved_stats``) instead of ``mean``
    trials: int = 100
    episodes_mean: float | None = None
    evaluation_episodes: int = 0
    evaluation_mean: float | None = None
    #: the label of its conditions (server/conditions.py): "as registered", what differs, "not recorded"
    conditions: str = "not recorded"


@dataclass(frozen=True)
class UserCard:
    """One user on ``/users``."""

    name: str
    created: datetime | None
    n_evaluations: int
    n_solved: int
    last_upload: datetime | None


@dataclass(frozen=True)
class AlgorithmCard:
    """One algorithm on ``/algorithms``: its evaluations are its own and its benchmark runs'."""

    id: str
    name: str
    owner: str
    n_evaluations: int
    n_envs: int
    last_upload: datetime | None


@dataclass(frozen=True)
class SearchHit:
    """One search result: what it is (``env``, ``algorithm``, ``user``), its name, page and a detail."""

    kind: str
    label: str
    url: str
    detail: str


@dataclass(frozen=True)
class VideoView:
    """A stored video on the evaluation page: where the browser gets it and its metadata, and a
    terminal recording's last frame as plain text (shown without JavaScript)."""

    video: StoredVideo
    url: str
    meta_url: str
    text_frame: str | None = None
    #: the card's title: ``Episode 3``, and which Monitor recorded it where several share the episode id
    title: str = ""


# the Monitor's video names: openaigym.video.{monitor id}.{uid}.video{episode:06}.{ext} (uid: the pid
# by default; a vector Monitor's sub-environment adds -{index})
_VIDEO_NAME_RE = re.compile(r"^openaigym\.video\.(?P<monitor>\d+)\.(?P<uid>.+)\.video\d+\.")


def video_titles(videos: Sequence[StoredVideo]) -> list[str]:
    """The title of each video's card: ``Episode 3``. A run recorded by several processes or
    sub-environments has several videos of each episode id, so there each title also says which
    Monitor recorded it (``Episode 0 · uid 4242, monitor 0``, from the file name)."""
    counts = Counter(v.episode_id for v in videos)
    titles = []
    for v in videos:
        title = f"Episode {'?' if v.episode_id is None else v.episode_id}"
        if counts[v.episode_id] > 1:
            match = _VIDEO_NAME_RE.match(v.name)
            title += f" · uid {match['uid']}, monitor {match['monitor']}" if match else f" · {v.name}"
        titles.append(title)
    return titles


@dataclass(frozen=True)
class Download:
    label: str
    url: str
    note: str = ""


@dataclass(frozen=True)
class AggregateRow:
    """One algorithm on a benchmark page: its runs' trial scores pooled per task, and the rliable set."""

    label: str
    run_id: str | None
    n: int
    iqm: Interval | None
    mean: Interval | None
    median: Interval | None = None
    optimality_gap: Interval | None = None
    #: task key -> the mean of the task's scores with its interval
    per_task: dict[str, Interval] = field(default_factory=dict)
    #: the performance profile: taus, fraction, low, high (lists), has_interval
    profile: dict[str, Any] | None = None
    color: str = ""


@dataclass(frozen=True)
class Improvement:
    """P(X > Y) of one benchmark run over another, overall and per task."""

    x: RunRow
    y: RunRow
    overall: Interval
    per_task: list[tuple[str, Interval]]


@dataclass(frozen=True)
class BenchmarkSummary:
    id: str
    name: str
    description: str
    n_tasks: int | None
    n_runs: int
    best_run_id: str | None
    best_score: float | None


@dataclass(frozen=True)
class TaskView:
    env_id: str
    trials: int | None
    max_timesteps: int | None
    floor: float | None
    ceiling: float | None


@dataclass(frozen=True)
class BenchmarkDetail:
    id: str
    name: str
    description: str
    scorer: str
    tasks: list[TaskView]
    #: the score table of a human-normalised benchmark ("atari57 v1: <citation>"), else None
    normalisation: str | None = None


@dataclass(frozen=True)
class RunRow:
    id: str
    status: str
    algorithm_id: str | None
    algorithm_name: str | None
    user: str | None
    score: float | None
    num_envs_solved: int | None
    task_scores: dict[str, float]
    created: datetime | None


@dataclass(frozen=True)
class RunEvaluation:
    id: str
    score: float | None


@dataclass(frozen=True)
class RunTask:
    env_id: str
    score: float | None
    evaluations: list[RunEvaluation]


@dataclass(frozen=True)
class RunDetail:
    id: str
    benchmark_id: str
    benchmark_name: str
    status: str
    algorithm_id: str | None
    algorithm_name: str | None
    user: str | None
    created: datetime | None
    tags: dict[str, Any]
    score: float | None
    num_envs_solved: int | None
    iqm: Interval | None
    mean: Interval | None
    extra_stats: list[tuple[str, float]]
    tasks: list[RunTask]
    #: the bootstrap of the run's current trial scores is running (after the upload that changed them)
    computing: bool = False
