"""Whose an algorithm or a benchmark run is, for whatever names one (an evaluation, a run, a page):

- :func:`find_algorithm`: the caller's algorithm by id, else by name (kept on the state: an upload names
  the same algorithm again and again, and algorithms are never renamed or deleted);
- :func:`resolve_algorithm`: the same, else a new algorithm of that name (2017: naming an algorithm the
  user does not have creates it);
- :func:`own_run`: the caller's benchmark run, else 404.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from palaestra.scoreboard.protocol import NO_PARAM
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.core.ids import new_id
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.problems import not_found
from palaestra.scoreboard.server.tables.base import from_row
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun

__all__ = ["find_algorithm", "own_run", "resolve_algorithm"]

_ALGORITHMS = Algorithm.__table__

_ALGORITHM_BY_ID_OR_NAME = (
    sa.select(_ALGORITHMS)
    .where(
        _ALGORITHMS.c.user_seq == sa.bindparam("user_seq"),
        sa.or_(_ALGORITHMS.c.id == sa.bindparam("ref"), _ALGORITHMS.c.name == sa.bindparam("ref")),
    )
    .order_by((_ALGORITHMS.c.id == sa.bindparam("ref")).desc())
    .limit(1)
)

def find_algorithm(
    state: ServerState, conn: sa.Connection, principal: Principal, ref: str
) -> Algorithm | None:
    """The caller's algorithm with id ``ref``, else named ``ref``, else None."""
    # kept on the state: an upload names the same algorithm again and again, and algorithms are never
    # renamed or deleted, so one found stays right (one not found yet is looked up again)
    key = ("algorithm", principal.user_seq, ref)
    hit, known = state.cache.lookup(key)
    if hit:
        return known
    row = conn.execute(_ALGORITHM_BY_ID_OR_NAME, {"user_seq": principal.user_seq, "ref": ref}).first()
    if row is None:
        return None
    found = from_row(Algorithm, row)
    state.cache.store(key, found)
    return found


def resolve_algorithm(
    state: ServerState, session: Session, principal: Principal, ref: str | None
) -> Algorithm | None:
    """An algorithm of the caller by id, else by name, else a new one named ``ref`` (2017 semantics)."""
    if not ref:
        return None
    found = find_algorithm(state, session.connection(), principal, ref)
    if found is not None:
        return found
    alg = Algorithm(id=new_id("algorithm"), user_seq=principal.user_seq, name=ref)
    session.add(alg)
    session.flush()
    return alg

_RUN_BY_ID = sa.select(BenchmarkRun).where(BenchmarkRun.id == sa.bindparam("run_id"))


def own_run(session: Session, principal: Principal, run_id: str, param: str = NO_PARAM) -> BenchmarkRun:
    """The caller's benchmark run ``run_id`` (404 otherwise)."""
    run = session.scalar(_RUN_BY_ID, {"run_id": run_id})
    if run is None or run.user_seq != principal.user_seq:
        raise not_found("benchmark run", run_id, param)
    return run
