"""The queries of the site-wide lists: the home page's recent uploads, the users and algorithms indexes
(paged, sortable) and the one search box over envs, algorithms and users. The pages of one env, user or
algorithm are :mod:`.queries`'."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra import catalogue
from palaestra.scoreboard.server.evaluations.index_stats import AlgorithmEnvStats, AlgorithmStats, UserStats
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.scores import Algorithm, EnvStats, Evaluation
from palaestra.scoreboard.server.web.queries import fetch_rows
from palaestra.scoreboard.server.web.views import (
    PAGE_SIZE,
    AlgorithmCard,
    EvaluationRow,
    Page,
    SearchHit,
    UserCard,
    clamp_page,
)

RECENT_UPLOADS = 10


def recent_evaluations(session: Session, limit: int = RECENT_UPLOADS) -> list[EvaluationRow]:
    """The newest ``limit`` evaluations (the home page's feed), along the primary key."""
    seqs = list(
        session.execute(sa.select(Evaluation.seq).order_by(Evaluation.seq.desc()).limit(limit)).scalars()
    )
    return fetch_rows(session, seqs)


#: ``/users`` orders: key -> (label, ORDER BY of :func:`users_index`'s columns). Ties: by name.
USER_SORTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "evaluations": ("most evaluations", ("n_evaluations DESC", "name")),
    "recent": ("latest upload", ("last_upload_order DESC", "name")),
    "name": ("name", ("name",)),
}
ALGORITHM_SORTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "evaluations": ("most evaluations", ("n_evaluations DESC", "name", "id")),
    "recent": ("latest upload", ("last_upload_order DESC", "name", "id")),
    "name": ("name", ("name", "id")),
}


def _sorted_page(
    sorts: dict[str, tuple[str, tuple[str, ...]]],
    sort: str,
    page_number: int,
    total: int,
    path: str,
    params: dict[str, str] | None = None,
) -> tuple[Page, tuple[Any, ...]]:
    if sort not in sorts:
        sort = next(iter(sorts))
    label, order = sorts[sort]
    number = clamp_page(page_number, total)
    page = Page(
        number=number,
        size=PAGE_SIZE,
        total=total,
        path=path,
        sort=sort,
        sort_label=label,
        params=params or {},
    )
    return page, tuple(sa.text(clause) for clause in order)


def _index_page(
    session: Session,
    listed: sa.Select[Any],
    counted: Any,
    sorts: dict[str, tuple[str, tuple[str, ...]]],
    sort: str,
    page_number: int,
    path: str,
) -> tuple[list[Any], Page, dict[int, Any]]:
    """One page of ``listed`` (every row of ``counted`` with its kept aggregates: ``n_evaluations``,
    ``last_upload_order``, ...) in the order ``sort``, and ``{seq: created}`` of each row's newest
    evaluation."""
    total = int(session.execute(sa.select(sa.func.count()).select_from(counted)).scalar() or 0)
    page, order = _sorted_page(sorts, sort, page_number, total, path)
    rows = list(session.execute(listed.order_by(*order).limit(page.size).offset(page.offset)))
    return rows, page, _created_of(session, [r.last_upload_order for r in rows if r.last_upload_order])


def _counts(stats: Any) -> tuple[Any, ...]:
    """The aggregate columns of a ``user_stats`` or ``algorithm_stats`` row (0 where it has none yet)."""
    return (
        sa.func.coalesce(stats.evaluation_count, 0).label("n_evaluations"),
        sa.func.coalesce(stats.solved_count, 0).label("n_solved"),
        sa.func.coalesce(stats.last_seq, 0).label("last_upload_order"),
    )


def users_index(session: Session, sort: str, page_number: int, path: str) -> tuple[list[UserCard], Page]:
    """One page of every user, with their evaluations' count, solved count and latest upload."""
    listed = (
        sa.select(User.name.label("name"), User.created, *_counts(UserStats))
        .select_from(User)
        .outerjoin(UserStats, UserStats.user_seq == User.seq)
    )
    rows, page, when = _index_page(session, listed, User, USER_SORTS, sort, page_number, path)
    cards = [
        UserCard(r.name, r.created, int(r.n_evaluations), int(r.n_solved), when.get(r.last_upload_order))
        for r in rows
    ]
    return cards, page


def _created_of(session: Session, seqs: list[int]) -> dict[int, Any]:
    """``{seq: created}`` of evaluations ``seqs``."""
    if not seqs:
        return {}
    rows = session.execute(sa.select(Evaluation.seq, Evaluation.created).where(Evaluation.seq.in_(seqs)))
    return {seq: created for seq, created in rows}


def algorithms_index(
    session: Session, sort: str, page_number: int, path: str, name: str | None = None
) -> tuple[list[AlgorithmCard], Page]:
    """One page of every algorithm (of those called ``name`` where given), with its owner,
    evaluations, envs and latest upload."""
    listed = (
        sa.select(
            Algorithm.seq,
            Algorithm.id.label("id"),
            Algorithm.name.label("name"),
            User.name.label("owner"),
            *_counts(AlgorithmStats),
        )
        .select_from(Algorithm)
        .join(User, User.seq == Algorithm.user_seq)
        .outerjoin(AlgorithmStats, AlgorithmStats.algorithm_seq == Algorithm.seq)
    )
    counted: Any = Algorithm
    if name is not None:
        listed = listed.where(Algorithm.name == name)
        counted = sa.select(Algorithm.seq).where(Algorithm.name == name).subquery()
    rows, page, when = _index_page(session, listed, counted, ALGORITHM_SORTS, sort, page_number, path)
    envs = _env_counts(session, [r.seq for r in rows])
    cards = [
        AlgorithmCard(
            r.id, r.name, r.owner, int(r.n_evaluations), envs.get(r.seq, 0), when.get(r.last_upload_order)
        )
        for r in rows
    ]
    return cards, page


def _env_counts(session: Session, algorithm_seqs: list[int]) -> dict[int, int]:
    """``{algorithm seq: envs it has evaluations of}``."""
    if not algorithm_seqs:
        return {}
    rows = session.execute(
        sa.select(AlgorithmEnvStats.algorithm_seq, sa.func.count())
        .where(AlgorithmEnvStats.algorithm_seq.in_(algorithm_seqs))
        .group_by(AlgorithmEnvStats.algorithm_seq)
    )
    return {seq: int(n) for seq, n in rows}


SEARCH_KINDS = ("env", "algorithm", "user")
MAX_QUERY_LENGTH = 100


def _contains(column: Any, text: str) -> Any:
    """``column`` contains ``text``, case-insensitively, with ``%`` and ``_`` in it taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return column.ilike(f"%{escaped}%", escape="\\")


def _env_hits(session: Session, text: str) -> list[SearchHit]:
    """The env ids that contain ``text``: the catalogue's (runnable or uploaded) and any uploaded one."""
    needle = text.lower()
    rows = session.execute(
        sa.select(EnvStats.env_id, EnvStats.evaluation_count).where(_contains(EnvStats.env_id, text))
    )
    counts: dict[str, int] = {env_id: count for env_id, count in rows}
    hits: dict[str, str] = {}
    for entry in catalogue.entries():
        if needle in entry.env_id.lower() and (entry.available or entry.env_id in counts):
            hits[entry.env_id] = entry.summary
    for env_id in counts:
        hits.setdefault(env_id, "")
    out = []
    # the id typed in full first, then the most evaluated
    for env_id in sorted(hits, key=lambda e: (e.lower() != needle, -counts.get(e, 0), e.lower())):
        n = counts.get(env_id, 0)
        detail = f"{n} evaluation{'' if n == 1 else 's'}" + (f" · {hits[env_id]}" if hits[env_id] else "")
        out.append(SearchHit("env", env_id, f"/envs/{quote(env_id)}", detail))
    return out


def search(
    session: Session, text: str, kind: str, page_number: int, path: str
) -> tuple[list[SearchHit], Page, dict[str, int]]:
    """Envs, algorithms and users whose id or name contains ``text`` (of one ``kind``, or all): one
    page of hits, in that order, and the number of hits of each kind."""
    envs = _env_hits(session, text)
    algorithm_match = _contains(Algorithm.name, text) | _contains(Algorithm.id, text)
    counts = {
        "env": len(envs),
        "algorithm": int(
            session.execute(sa.select(sa.func.count()).select_from(Algorithm).where(algorithm_match)).scalar()
            or 0
        ),
        "user": int(
            session.execute(
                sa.select(sa.func.count()).select_from(User).where(_contains(User.name, text))
            ).scalar()
            or 0
        ),
    }
    kinds = (kind,) if kind in SEARCH_KINDS else SEARCH_KINDS
    total = sum(counts[k] for k in kinds)
    params = {"q": text, **({"kind": kind} if kind in SEARCH_KINDS else {})}
    page = Page(number=clamp_page(page_number, total), size=PAGE_SIZE, total=total, path=path, params=params)
    hits: list[SearchHit] = []
    skip, room = page.offset, page.size
    for k in kinds:
        if room <= 0:
            break
        if skip >= counts[k]:
            skip -= counts[k]
            continue
        if k == "env":
            found = envs[skip : skip + room]
        elif k == "algorithm":
            found = _algorithm_hits(session, algorithm_match, skip, room)
        else:
            found = _user_hits(session, text, skip, room)
        hits += found
        skip, room = 0, room - len(found)
    return hits, page, counts


def _algorithm_hits(session: Session, match: Any, offset: int, limit: int) -> list[SearchHit]:
    rows = session.execute(
        sa.select(Algorithm.id, Algorithm.name, User.name.label("owner"))
        .join(User, User.seq == Algorithm.user_seq)
        .where(match)
        .order_by(Algorithm.name, Algorithm.id)
        .offset(offset)
        .limit(limit)
    ).all()
    return [
        SearchHit("algorithm", r.name, f"/algorithms/{quote(r.id)}", f"by {r.owner} · {r.id}") for r in rows
    ]


def _user_hits(session: Session, text: str, offset: int, limit: int) -> list[SearchHit]:
    rows = session.execute(
        sa.select(User.name, sa.func.coalesce(UserStats.evaluation_count, 0).label("n"))
        .outerjoin(UserStats, UserStats.user_seq == User.seq)
        .where(_contains(User.name, text))
        .order_by(User.name)
        .offset(offset)
        .limit(limit)
    ).all()
    return [
        SearchHit("user", r.name, f"/users/{quote(r.name)}", f"{r.n} evaluation{'' if r.n == 1 else 's'}")
        for r in rows
    ]
