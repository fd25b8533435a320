"""The database queries behind the web pages (SQLAlchemy 2 selects of plain columns, no ORM loads).

Each function takes a read :class:`~sqlalchemy.orm.Session` and returns :mod:`.views` objects. The
env leaderboard is the hot path: it reads only the columns it shows, one page at a time, along the
``(env_id, ...)`` indexes of ``evaluations``, and takes its count from the precomputed ``envs`` row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra import catalogue
from palaestra.benchmarks import registry as benchmark_registry
from palaestra.scoreboard.server.evaluations.conditions import conditions_label
from palaestra.scoreboard.server.evaluations.index_stats import AlgorithmEnvStats, AlgorithmStats, UserStats
from palaestra.scoreboard.server.evaluations.records import (
    RunAlgorithm,  # a benchmark evaluation shows its run's algorithm
    algorithm_evaluation_seqs,
)
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, EnvStats, Evaluation
from palaestra.scoreboard.server.web.page_cache import cached, of_database, of_env
from palaestra.scoreboard.server.web.views import (
    PAGE_SIZE,
    EnvCard,
    EnvHeader,
    EvaluationRow,
    GroupView,
    Page,
    clamp_page,
)

#: Leaderboard orders: key -> (label, ORDER BY clauses). Ties go to the earlier upload.
LEADERBOARD_SORTS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "episodes": (
        "episodes before solve",
        (
            Evaluation.solved.desc(),
            Evaluation.episode_t_value.asc(),
            Evaluation.ranking_mean.desc().nulls_last(),
            Evaluation.seq.asc(),
        ),
    ),
    "mean": ("best 100-episode mean", (Evaluation.mean.desc().nulls_last(), Evaluation.seq.asc())),
    "submitted": ("submission time, newest first", (Evaluation.seq.desc(),)),
    "algorithm": ("algorithm name", (Algorithm.name.asc().nulls_last(), Evaluation.seq.asc())),
}
DEFAULT_SORT = "episodes"
UNLISTED_GROUP = catalogue.Group(
    "unlisted", "Unlisted", "Environments the scoreboard's catalogue does not know."
)


def _row_columns() -> tuple[Any, ...]:
    return (
        Evaluation.id,
        Evaluation.env_id,
        sa.func.coalesce(Algorithm.id, RunAlgorithm.id).label("algorithm_id"),
        sa.func.coalesce(Algorithm.name, RunAlgorithm.name).label("algorithm_name"),
        User.name.label("user"),
        Evaluation.solved,
        Evaluation.episode_t_value,
        Evaluation.mean,
        Evaluation.error,
        Evaluation.number_episodes,
        Evaluation.trials,
        Evaluation.episodes_mean,
        Evaluation.evaluation_episodes,
        Evaluation.evaluation_mean,
        Evaluation.created,
        sa.func.coalesce(Evaluation.writeup, Algorithm.writeup, RunAlgorithm.writeup).label("writeup"),
        Evaluation.conditions,
    )


def _rows_select() -> sa.Select[Any]:
    return (
        sa.select(*_row_columns())
        .select_from(Evaluation)
        .join(User, User.seq == Evaluation.user_seq)
        .outerjoin(Algorithm, Algorithm.seq == Evaluation.algorithm_seq)
        .outerjoin(BenchmarkRun, BenchmarkRun.seq == Evaluation.benchmark_run_seq)
        .outerjoin(RunAlgorithm, RunAlgorithm.seq == BenchmarkRun.algorithm_seq)
    )


def _to_rows(result: Sequence[Any]) -> list[EvaluationRow]:
    return [
        EvaluationRow(
            id=r.id,
            env_id=r.env_id,
            algorithm_id=r.algorithm_id,
            algorithm_name=r.algorithm_name,
            user=r.user,
            solved=bool(r.solved),
            episode_t_value=r.episode_t_value,
            mean=r.mean,
            error=r.error,
            number_episodes=r.number_episodes or 0,
            created=r.created,
            writeup=r.writeup,
            trials=r.trials,
            episodes_mean=r.episodes_mean,
            evaluation_episodes=r.evaluation_episodes or 0,
            evaluation_mean=r.evaluation_mean,
            conditions=conditions_label(r.conditions),
        )
        for r in result
    ]


# -- home page ---------------------------------------------------------------------------------------


def home(session: Session) -> tuple[list[GroupView], int, int]:
    """``(groups, total evaluations, envs with evaluations)`` for ``/``: every catalogue env, grouped
    (a walk of the whole catalogue and a lookup per solved env: kept until an env has another
    evaluation, which adds to the ``envs`` rows' sum)."""
    envs, evaluations = session.execute(
        sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(EnvStats.evaluation_count), 0))
    ).one()
    return cached(session, of_database(session, "home", envs, evaluations), lambda: _home(session))


def _home(session: Session) -> tuple[list[GroupView], int, int]:
    stats = {s.env_id: s for s in session.execute(sa.select(EnvStats)).scalars()}
    fewest = _fewest_episodes_per_env(session, [e for e, s in stats.items() if s.solved_count])
    cards_by_group: dict[str, list[EnvCard]] = {g.id: [] for g in catalogue.GROUPS}
    cards_by_group[UNLISTED_GROUP.id] = []
    seen: set[str] = set()
    for entry in catalogue.entries():
        seen.add(entry.env_id)
        s = stats.get(entry.env_id)
        if not entry.available and s is None:
            continue  # a 2017 id nobody uploaded: not worth a row
        cards_by_group[entry.group].append(_card(entry.env_id, entry.summary, entry.available, s, fewest))
    for env_id, s in sorted(stats.items()):
        if env_id not in seen:
            cards_by_group[UNLISTED_GROUP.id].append(_card(env_id, "", False, s, fewest))
    groups = [GroupView.of(g, cards_by_group[g.id]) for g in (*catalogue.GROUPS, UNLISTED_GROUP)]
    groups = [g for g in groups if g.active or g.idle]
    total = sum(s.evaluation_count for s in stats.values())
    active = sum(1 for s in stats.values() if s.evaluation_count)
    return groups, total, active


def _card(
    env_id: str, summary: str, available: bool, s: EnvStats | None, fewest: dict[str, tuple[int, str]]
) -> EnvCard:
    if s is None:
        return EnvCard(env_id=env_id, summary=summary, available=available, n_evaluations=0)
    best = fewest.get(env_id)
    return EnvCard(
        env_id=env_id,
        summary=summary,
        available=available,
        n_evaluations=s.evaluation_count,
        best_episodes=best[0] if best else None,
        best_mean=s.best_mean,
        best_evaluation_id=best[1] if best else s.best_evaluation_id,
    )


def _fewest_episodes_per_env(session: Session, env_ids: list[str]) -> dict[str, tuple[int, str]]:
    """``{env_id: (fewest episodes before solve, evaluation id)}`` of the solved envs.

    One indexed lookup per solved env (``ix_evaluations_env_leaderboard``), so the home page stays cheap
    however many evaluations there are.
    """
    out: dict[str, tuple[int, str]] = {}
    for env_id in env_ids:
        row = session.execute(
            sa.select(Evaluation.episode_t_value, Evaluation.id)
            .where(Evaluation.env_id == env_id, Evaluation.solved.is_(True))
            .order_by(Evaluation.episode_t_value.asc(), Evaluation.seq.asc())
            .limit(1)
        ).first()
        if row is not None and row.episode_t_value is not None:
            out[env_id] = (int(row.episode_t_value), str(row.id))
    return out


# -- env page --------------------------------------------------------------------------------------


def env_header(session: Session, env_id: str) -> EnvHeader | None:
    """The env's description and solving rule, or ``None`` if it is neither catalogued, uploaded nor a
    registered benchmark's task (a benchmark page links each of its tasks' envs, Minecraft's too)."""
    entry = catalogue.lookup(env_id)
    stats = session.get(EnvStats, env_id)
    in_benchmarks = tuple(b.id for b in benchmark_registry.all() if env_id in b.env_ids)
    if entry is None and stats is None and not in_benchmarks:
        return None
    if entry is None:
        if stats is None:
            rule = (
                f"{env_id} is a task of {', '.join(in_benchmarks)}, but it is not installed here "
                f"({catalogue.unavailable_reason(env_id)}), so no run of it can be recorded or scored here."
            )
        else:
            rule = f"{env_id} is not in this scoreboard's catalogue, so it has no solving rule."
        return EnvHeader(
            env_id=env_id,
            group_id=UNLISTED_GROUP.id,
            group_name=UNLISTED_GROUP.name,
            summary="",
            solving_rule=rule,
            trials=catalogue.DEFAULT_TRIALS,
            reward_threshold=None,
            max_episode_steps=None,
            listed=False,
            available=False,
            n_solved=stats.solved_count if stats else None,
            benchmarks=in_benchmarks,
        )
    group = catalogue.group(entry.group)
    return EnvHeader(
        env_id=env_id,
        group_id=group.id,
        group_name=group.name,
        summary=entry.summary,
        solving_rule=entry.solving_rule,
        trials=entry.trials,
        reward_threshold=entry.reward_threshold,
        max_episode_steps=entry.max_episode_steps,
        listed=True,
        available=entry.available,
        n_solved=stats.solved_count if stats else 0,
        benchmarks=in_benchmarks,
    )


def best_evaluation_id(session: Session, env_id: str) -> str | None:
    """The id of the evaluation of ``env_id`` with the best mean (the precomputed one)."""
    found = session.execute(sa.select(EnvStats.best_evaluation_id).where(EnvStats.env_id == env_id)).scalar()
    return str(found) if found else None


def env_total(session: Session, env_id: str) -> int:
    """How many evaluations ``env_id`` has (the precomputed count)."""
    count = session.execute(sa.select(EnvStats.evaluation_count).where(EnvStats.env_id == env_id)).scalar()
    return int(count or 0)


def leaderboard(
    session: Session,
    env_id: str,
    sort: str,
    page_number: int,
    path: str,
    size: int = PAGE_SIZE,
    only: Any = None,
) -> tuple[list[EvaluationRow], Page]:
    """One page of ``env_id``'s leaderboard in the order ``sort`` (a key of :data:`LEADERBOARD_SORTS`);
    ``only``: a further condition on the evaluations (one set of conditions, ``web/entries.py``)."""
    if sort not in LEADERBOARD_SORTS:
        sort = DEFAULT_SORT
    label, order = LEADERBOARD_SORTS[sort]
    where = Evaluation.env_id == env_id if only is None else sa.and_(Evaluation.env_id == env_id, only)
    total = (
        env_total(session, env_id)
        if only is None
        else int(session.scalar(sa.select(sa.func.count()).select_from(Evaluation).where(where)) or 0)
    )
    number = clamp_page(page_number, total, size)
    page = Page(number=number, size=size, total=total, path=path, sort=sort, sort_label=label)
    if not total:
        return [], page
    if sort == "algorithm":
        signature = of_env(session, "per algorithm", env_id, env_total(session, env_id), only)
        groups = cached(session, signature, lambda: _name_groups(session, where))
        return fetch_rows(session, _seqs_by_algorithm_name(session, where, groups, page)), page
    return _page_rows(session, where, order, page), page


def _page_rows(session: Session, where: Any, order: tuple[Any, ...], page: Page) -> list[EvaluationRow]:
    """The rows of one page in two steps: the page's ``seq`` values along an index, then their columns.

    Sorting and skipping then touch only the narrow index entries, and the joins run for the page's
    rows alone, not for every evaluation of the env.
    """
    keys = sa.select(Evaluation.seq).where(where).order_by(*order).limit(page.size).offset(page.offset)
    return fetch_rows(session, list(session.execute(keys).scalars()))


#: ``(algorithm name, its algorithms, their rows)`` in the order of ``LEADERBOARD_SORTS["algorithm"]``
NameGroups = list[tuple[str | None, list[int], int]]


def _name_groups(session: Session, where: Any) -> NameGroups:
    """The rows of ``where`` counted per algorithm along ``ix_evaluations_env_algorithm``, grouped by
    the algorithm's name and sorted by it (in the database's collation; no algorithm last)."""
    per_algorithm = (
        sa.select(Evaluation.algorithm_seq, sa.func.count().label("n"))
        .where(where)
        .group_by(Evaluation.algorithm_seq)
        .subquery()
    )
    ordered = session.execute(
        sa.select(per_algorithm.c.algorithm_seq, per_algorithm.c.n, Algorithm.name)
        .outerjoin(Algorithm, Algorithm.seq == per_algorithm.c.algorithm_seq)
        .order_by(Algorithm.name.asc().nulls_last(), per_algorithm.c.algorithm_seq)
    ).all()
    groups: NameGroups = []
    for algorithm_seq, n, name in ordered:
        if groups and name is not None and groups[-1][0] == name:
            _, members, count = groups[-1]
            groups[-1] = (name, [*members, algorithm_seq], count + int(n))
        else:
            groups.append((name, [algorithm_seq] if algorithm_seq is not None else [], int(n)))
    return groups


def _seqs_by_algorithm_name(session: Session, where: Any, groups: NameGroups, page: Page) -> list[int]:
    """The ``seq`` values of one page in the order ``LEADERBOARD_SORTS["algorithm"]`` (the algorithm's
    name, none last, ties by upload), without sorting every row by a joined name: only the name
    groups the page overlaps are read, each in upload order along ``ix_evaluations_env_algorithm``.
    Algorithms of one name are one group, as in the ORDER BY."""
    seqs: list[int] = []
    position = 0
    for name, members, n in groups:
        if position + n > page.offset and len(seqs) < page.size:
            of_group = (
                Evaluation.algorithm_seq.in_(members) if name is not None else Evaluation.algorithm_seq.is_(None)
            )
            keys = (
                sa.select(Evaluation.seq)
                .where(where, of_group)
                .order_by(Evaluation.seq)
                .limit(page.size - len(seqs))
                .offset(max(0, page.offset - position))
            )
            seqs += session.execute(keys).scalars()
        position += n
    return seqs


def fetch_rows(session: Session, seqs: list[int]) -> list[EvaluationRow]:
    """The table rows of evaluations ``seqs``, in that order."""
    if not seqs:
        return []
    stmt = _rows_select().add_columns(Evaluation.seq).where(Evaluation.seq.in_(seqs))
    rows = {r.seq: r for r in session.execute(stmt)}
    return _to_rows([rows[seq] for seq in seqs if seq in rows])


# -- user and algorithm pages ------------------------------------------------------------------------


def _newest_first(
    session: Session, of: Any, kept_count: Any, page_number: int, path: str
) -> tuple[list[EvaluationRow], Page]:
    """One page, newest first, of the evaluations whose ``seq`` the subquery ``of`` selects; their
    count is the kept one that ``kept_count`` selects (none kept: none yet)."""
    total = int(session.scalar(kept_count) or 0)
    page = Page(number=clamp_page(page_number, total), size=PAGE_SIZE, total=total, path=path)
    keys = sa.select(of.c.seq).order_by(of.c.seq.desc()).limit(page.size).offset(page.offset)
    return fetch_rows(session, list(session.execute(keys).scalars())), page


def user(session: Session, name: str) -> User | None:
    return session.execute(sa.select(User).where(User.name == name)).scalar_one_or_none()


def user_evaluations(
    session: Session, user_row: User, page_number: int, path: str
) -> tuple[list[EvaluationRow], Page]:
    of = sa.select(Evaluation.seq).where(Evaluation.user_seq == user_row.seq).subquery()
    kept = sa.select(UserStats.evaluation_count).where(UserStats.user_seq == user_row.seq)
    return _newest_first(session, of, kept, page_number, path)


def algorithm(session: Session, algorithm_id: str) -> tuple[Algorithm, str] | None:
    """The algorithm with id ``algorithm_id`` and its owner's name."""
    row = session.execute(
        sa.select(Algorithm, User.name)
        .join(User, User.seq == Algorithm.user_seq)
        .where(Algorithm.id == algorithm_id)
    ).first()
    return (row[0], row[1]) if row is not None else None


def algorithm_evaluations(
    session: Session, algorithm_row: Algorithm, page_number: int, path: str
) -> tuple[list[EvaluationRow], Page]:
    kept = sa.select(AlgorithmStats.evaluation_count).where(AlgorithmStats.algorithm_seq == algorithm_row.seq)
    return _newest_first(session, algorithm_evaluation_seqs(algorithm_row.seq), kept, page_number, path)


def algorithm_envs(session: Session, algorithm_row: Algorithm) -> list[tuple[str, int]]:
    """``[(env id, evaluations)]`` of an algorithm, the env with most evaluations first."""
    rows = session.execute(
        sa.select(AlgorithmEnvStats.env_id, AlgorithmEnvStats.evaluation_count)
        .where(AlgorithmEnvStats.algorithm_seq == algorithm_row.seq)
        .order_by(AlgorithmEnvStats.evaluation_count.desc(), AlgorithmEnvStats.env_id.asc())
    )
    return [(str(env_id), int(n)) for env_id, n in rows]


def algorithm_evaluation_ids(
    session: Session, algorithm_row: Algorithm, env_id: str, limit: int
) -> list[str]:
    """The ids of an algorithm's most recent ``limit`` evaluations of ``env_id``."""
    of = algorithm_evaluation_seqs(algorithm_row.seq, Evaluation.env_id == env_id)
    newest = sa.select(of.c.seq).order_by(of.c.seq.desc()).limit(limit).subquery()
    stmt = sa.select(Evaluation.id).join(newest, newest.c.seq == Evaluation.seq).order_by(Evaluation.seq.desc())
    return [str(i) for i in session.execute(stmt).scalars()]
