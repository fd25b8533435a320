"""What pages compute from stored rows that never change once stored, kept in the server's one cache
(:mod:`..core.cache`, under ``"page"``): the benchmark page's bootstrap statistics, an env's condition
sets, seed groups and rows per algorithm, the home page's catalogue walk, the curve series of
evaluations and algorithms.

A signature names the rows a value was computed from, so a hit is what computing again would give:
a benchmark's scores, or an env's evaluation count (the ``envs`` row, written in the transaction
that adds an evaluation; none is ever deleted, so the count names the set). What is derived from an
evaluation changes only when ``palaestra server rescore`` derives it again, from another process;
that starts a new generation in the database (``server_settings``), and every signature holds it.

The cache is the one of the database the session reads (``session.info["cache"]``); a session of
another making computes every time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from palaestra.scoreboard.server.core.cache import Cache
from palaestra.scoreboard.server.tables.service import derived_generation

__all__ = ["cached", "lookup", "of_database", "of_env", "store"]

T = TypeVar("T")


def _cache(owner: Session | Cache) -> Cache | None:
    """The cache itself, or the one of the session's database."""
    found = owner if isinstance(owner, Cache) else owner.info.get("cache")
    return found if isinstance(found, Cache) else None


def cached(session: Session, signature: tuple[Any, ...], compute: Callable[[], T]) -> T:
    """The value kept under ``signature``, else ``compute()`` (kept for the next request)."""
    cache = _cache(session)
    return compute() if cache is None else cache.get(("page", *signature), compute)


def lookup(owner: Session | Cache, signature: tuple[Any, ...]) -> tuple[bool, Any]:
    """``(True, value)`` if a value is kept under ``signature``, else ``(False, None)``."""
    cache = _cache(owner)
    return (False, None) if cache is None else cache.lookup(("page", *signature))


def store(owner: Session | Cache, signature: tuple[Any, ...], value: Any) -> None:
    cache = _cache(owner)
    if cache is not None:
        cache.store(("page", *signature), value)


def of_database(session: Session, *parts: Any) -> tuple[Any, ...]:
    """A signature of ``parts`` in the database of ``session``, in its generation of derived values."""
    return (derived_generation(session), *parts)


def of_env(session: Session, what: str, env_id: str, evaluations: int, only: Any = None) -> tuple[Any, ...]:
    """The signature of ``what`` computed over the ``evaluations`` evaluations of ``env_id`` (or those
    of them that the SQL condition ``only`` selects, named by its text with its values)."""
    chosen = str(only.compile(compile_kwargs={"literal_binds": True})) if only is not None else None
    return of_database(session, what, env_id, evaluations, chosen)
