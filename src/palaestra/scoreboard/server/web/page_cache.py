"""One process's small LRU of what pages compute from stored rows that never change once stored: the
benchmark page's bootstrap statistics, an env's condition sets, seed groups and rows per algorithm.

A signature names the rows a value was computed from, so a hit is what computing again would give:
a benchmark's scores, or an env's evaluation count (the ``envs`` row, written in the transaction
that adds an evaluation; none is ever deleted or changed, so the count names the set).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.orm import Session

__all__ = ["cached", "of_database", "of_env"]

T = TypeVar("T")
SIZE = 256
_lock = threading.Lock()
_values: OrderedDict[tuple[Any, ...], Any] = OrderedDict()


def cached(signature: tuple[Any, ...], compute: Callable[[], T]) -> T:
    """The value stored under ``signature``, else ``compute()`` (stored for the next request)."""
    with _lock:
        if signature in _values:
            _values.move_to_end(signature)
            hit: T = _values[signature]
            return hit
    value = compute()
    with _lock:
        _values[signature] = value
        while len(_values) > SIZE:
            _values.popitem(last=False)
    return value


def of_database(session: Session, *parts: Any) -> tuple[Any, ...]:
    """A signature of ``parts`` in the database of ``session`` (processes and tests may serve several)."""
    return (str(session.get_bind().engine.url), *parts)


def of_env(session: Session, what: str, env_id: str, evaluations: int, only: Any = None) -> tuple[Any, ...]:
    """The signature of ``what`` computed over the ``evaluations`` evaluations of ``env_id`` (or those
    of them that the SQL condition ``only`` selects, named by its text with its values)."""
    chosen = str(only.compile(compile_kwargs={"literal_binds": True})) if only is not None else None
    return of_database(session, what, env_id, evaluations, chosen)
