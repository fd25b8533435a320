"""Conditions and seed groups on the env page, the compare page and an algorithm's curve.

* :func:`condition_sets` -- the sets of conditions an env's evaluations ran under (with counts), and
  :func:`condition_filter` -- the ``?conditions=KEY`` switch that shows one of them apart;
* :func:`split_by_conditions` -- evaluations grouped by conditions, for pages that draw several
  runs together: the first group is drawn, the others are named with the fields that differ;
* :func:`rank_entries` -- seed groups: the evaluations of one user, algorithm, env and conditions are
  the seeds of one entry, ranked by how many seeds solved, the median episodes to solve (95 %
  bootstrap interval) and the IQM of the score (:mod:`palaestra.benchmarks.statistics`).

An evaluation's score here is the one its leaderboard row shows (``ranking_mean``: the best
``trials``-episode mean, or the mean of a shorter run's episodes). How the board decides that runs
are comparable is in docs/provenance.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra.benchmarks import statistics
from palaestra.benchmarks.statistics import Interval
from palaestra.scoreboard.server.evaluations.conditions import (
    Difference,
    conditions_label,
    derive_conditions,
    differences,
)
from palaestra.scoreboard.server.evaluations.records import EvaluationRecord, RunAlgorithm
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, Evaluation
from palaestra.scoreboard.server.web import queries
from palaestra.scoreboard.server.web.page_cache import cached, of_env

__all__ = [
    "ALL_CONDITIONS",
    "FEW_SEEDS",
    "NOT_RECORDED",
    "ConditionSet",
    "Entry",
    "Split",
    "condition_filter",
    "condition_sets",
    "pooled_conditions_notice",
    "rank_entries",
    "split_by_conditions",
]

#: ``?conditions=`` values: every set together (mixing on purpose), and the set of unrecorded ones.
ALL_CONDITIONS = "all"
NOT_RECORDED = "none"
#: Fewer seeds than this get a warning (Agarwal et al. 2021: intervals from so few runs are wide).
FEW_SEEDS = 5
BOOTSTRAP_REPS = 2000
#: The most evaluations of one env that the entries ranking reads.
MAX_ENTRY_EVALUATIONS = 20_000


@dataclass(frozen=True)
class ConditionSet:
    key: str  # a conditions key, or NOT_RECORDED
    label: str
    count: int
    card: Mapping[str, Any]


def _param(key: str | None) -> str:
    return key if key is not None else NOT_RECORDED


def condition_sets(session: Session, env_id: str) -> list[ConditionSet]:
    """The sets of conditions of ``env_id``'s evaluations, the largest first (one scan of the env's
    index entries, kept until the env has another evaluation)."""
    signature = of_env(session, "condition sets", env_id, queries.env_total(session, env_id))
    return cached(session, signature, lambda: _condition_sets(session, env_id))


def _condition_sets(session: Session, env_id: str) -> list[ConditionSet]:
    stmt = (
        sa.select(Evaluation.conditions_key, sa.func.count(), sa.func.min(Evaluation.seq))
        .where(Evaluation.env_id == env_id)
        .group_by(Evaluation.conditions_key)
    )
    found = session.execute(stmt).all()
    sets = []
    for key, count, first in found:
        card = session.scalar(sa.select(Evaluation.conditions).where(Evaluation.seq == first))
        card = card or derive_conditions(env_id, None)
        sets.append(ConditionSet(_param(key), conditions_label(card), int(count), card))
    return sorted(sets, key=lambda s: (-s.count, s.key))


def condition_filter(chosen: str) -> Any:
    """The SQL condition of ``?conditions=chosen`` (None: every evaluation)."""
    if not chosen or chosen == ALL_CONDITIONS:
        return None
    if chosen == NOT_RECORDED:
        return Evaluation.conditions_key.is_(None)
    return Evaluation.conditions_key == chosen


def differing_fields(sets: Sequence[ConditionSet]) -> list[Difference]:
    return differences([s.card for s in sets])


@dataclass(frozen=True)
class Split:
    """Evaluations split by conditions: ``shown`` are drawn, ``apart`` (of an env already shown under
    other conditions) are left out; ``differences`` name the fields in which the drawn and the left
    out differ, other than the env id itself."""

    shown: list[EvaluationRecord]
    apart: list[EvaluationRecord]
    differences: list[Difference]
    mixed: bool = False

    @property
    def notice(self) -> str | None:
        if not self.differences:
            return None
        fields = "; ".join(d.text for d in self.differences)
        return f"These evaluations ran under different conditions: {fields}."


#: Fields that differ whenever envs do; the page already shows each evaluation's env.
_ENV_FIELDS = ("env", "version")


def split_by_conditions(records: Sequence[EvaluationRecord], mix: bool = False) -> Split:
    """For each env, the evaluations under its first evaluation's conditions (all of them with
    ``mix``); evaluations of different envs are drawn side by side, their differences named."""
    first: dict[str | None, str | None] = {}
    for r in records:
        first.setdefault(r.env_id, r.conditions_key)
    same = [r for r in records if mix or r.conditions_key == first[r.env_id]]
    other = [r for r in records if r not in same]
    cards = {(r.env_id, _param(r.conditions_key)): r.conditions or {} for r in records}
    found = [d for d in differences(list(cards.values())) if d.field not in _ENV_FIELDS]
    return Split(same, other, found, mixed=mix and len(cards) > 1)


def pooled_conditions_notice(session: Session, where: Any) -> str | None:
    """What a benchmark aggregate pools without saying so otherwise: for the benchmark evaluations that
    ``where`` selects, the tasks (envs) run under more than one set of conditions, each with the fields
    that differ; None when every task ran under one."""
    rows = session.execute(
        sa.select(Evaluation.env_id, sa.func.min(Evaluation.seq))
        .where(where, Evaluation.env_id.is_not(None))
        .group_by(Evaluation.env_id, Evaluation.conditions_key)
    ).all()
    firsts: dict[str, list[int]] = {}
    for env_id, seq in rows:
        firsts.setdefault(str(env_id), []).append(seq)
    parts = []
    for env_id, seqs in sorted(firsts.items()):
        if len(seqs) < 2:
            continue
        stored = session.execute(sa.select(Evaluation.conditions).where(Evaluation.seq.in_(seqs))).scalars()
        cards = [card or derive_conditions(env_id, None) for card in stored]
        fields = "; ".join(d.text for d in differences(cards) if d.field not in _ENV_FIELDS)
        parts.append(f"{env_id} ({fields or 'conditions not recorded for some'})")
    if not parts:
        return None
    return (
        "These scores pool evaluations that ran a task under different conditions: "
        + ", ".join(parts)
        + ". Compare them with care, or score runs of one protocol apart."
    )


# -- seed groups -------------------------------------------------------------------------------------


@dataclass
class Entry:
    """One user's algorithm on one env under one set of conditions: its evaluations are its seeds."""

    user: str | None
    algorithm_id: str | None
    algorithm_name: str | None
    conditions_key: str
    conditions: str
    evaluation_ids: list[str] = field(default_factory=list)
    solved: int = 0
    episodes_to_solve: Interval | None = None
    score: Interval | None = None

    @property
    def seeds(self) -> int:
        return len(self.evaluation_ids)

    @property
    def few_seeds(self) -> bool:
        return self.seeds < FEW_SEEDS

    @property
    def median_never(self) -> bool:
        """Fewer than half the seeds solved: the median episodes before solve is "never"."""
        return self.episodes_to_solve is not None and math.isinf(self.episodes_to_solve.value)

    @property
    def median_high_never(self) -> bool:
        return self.episodes_to_solve is not None and self.episodes_to_solve.high is not None and math.isinf(self.episodes_to_solve.high)


def _median_interval(values: np.ndarray) -> Interval:
    """The median over seeds with a 95 % bootstrap interval; an unsolved seed counts as infinitely
    many episodes (so the median is infinite while fewer than half solved)."""
    rng = np.random.default_rng(0)
    # resampled as seed indices: the statistics module takes finite scores only, and "never" is not one
    [picks] = statistics.stratified_bootstrap({"seeds": np.arange(len(values))}, BOOTSTRAP_REPS, rng)
    medians = np.median(values[picks.astype(int)], axis=1)
    low, high = np.quantile(medians, [0.025, 0.975], method="inverted_cdf")
    return Interval(float(np.median(values)), float(low), float(high))


def _score_interval(values: np.ndarray) -> Interval:
    if len(values) == 1:
        return Interval(float(values[0]), float(values[0]), float(values[0]))
    found = statistics.interval_estimates({"seeds": values}, ("iqm",), reps=BOOTSTRAP_REPS, seed=0)["iqm"]
    return Interval(found.value, found.low, found.high)


def rank_entries(session: Session, env_id: str, only: Any = None) -> list[Entry]:
    """The env's seed groups, best first: more seeds solved (as a share), then fewer median episodes
    to solve, then a higher IQM score (a bootstrap per group: kept until the env has another
    evaluation)."""
    signature = of_env(session, "entries", env_id, queries.env_total(session, env_id), only)
    return cached(session, signature, lambda: _rank_entries(session, env_id, only))


def _rank_entries(session: Session, env_id: str, only: Any) -> list[Entry]:
    stmt = (
        sa.select(
            Evaluation.id,
            Evaluation.conditions_key,
            Evaluation.conditions,
            Evaluation.solved,
            Evaluation.episode_t_value,
            Evaluation.ranking_mean,
            User.name.label("user"),
            sa.func.coalesce(Algorithm.id, RunAlgorithm.id).label("algorithm_id"),
            sa.func.coalesce(Algorithm.name, RunAlgorithm.name).label("algorithm_name"),
        )
        .join(User, User.seq == Evaluation.user_seq)
        .outerjoin(Algorithm, Algorithm.seq == Evaluation.algorithm_seq)
        .outerjoin(BenchmarkRun, BenchmarkRun.seq == Evaluation.benchmark_run_seq)
        .outerjoin(RunAlgorithm, RunAlgorithm.seq == BenchmarkRun.algorithm_seq)
        .where(Evaluation.env_id == env_id if only is None else sa.and_(Evaluation.env_id == env_id, only))
        .order_by(Evaluation.seq)
        .limit(MAX_ENTRY_EVALUATIONS)
    )
    groups: dict[tuple[Any, ...], tuple[Entry, list[float], list[float]]] = {}
    for r in session.execute(stmt):
        key = (r.user, r.algorithm_id, r.conditions_key)
        if key not in groups:
            card = r.conditions or derive_conditions(env_id, None)
            entry = Entry(
                r.user, r.algorithm_id, r.algorithm_name, _param(r.conditions_key), conditions_label(card)
            )
            groups[key] = (entry, [], [])
        entry, episodes, scores = groups[key]
        entry.evaluation_ids.append(r.id)
        entry.solved += bool(r.solved)
        episodes.append(float(r.episode_t_value) if r.solved and r.episode_t_value is not None else math.inf)
        if r.ranking_mean is not None:
            scores.append(float(r.ranking_mean))
    entries = []
    for entry, episodes, scores in groups.values():
        entry.episodes_to_solve = _median_interval(np.asarray(episodes)) if entry.solved else None
        entry.score = _score_interval(np.asarray(scores)) if scores else None
        entries.append(entry)
    return sorted(entries, key=_rank)


def _rank(entry: Entry) -> tuple[float, float, float, str]:
    to_solve = entry.episodes_to_solve.value if entry.episodes_to_solve else math.inf
    score = entry.score.value if entry.score else -math.inf
    return (-entry.solved / entry.seeds, to_solve, -score, entry.evaluation_ids[0])
