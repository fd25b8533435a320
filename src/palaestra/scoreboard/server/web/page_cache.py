"""One process's small LRU of what pages compute from stored rows that never change once stored: the
benchmark page's bootstrap statistics, an env's condition sets, seed groups and rows per algorithm,
the home page's catalogue walk, the curve series of evaluations and algorithms.

A signature names the rows a value was computed from, so a hit is what computing again would give:
a benchmark's scores, or an env's evaluation count (the ``envs`` row, written in the transaction
that adds an evaluation; none is ever deleted, so the count names the set). What is derived from an
evaluation changes only when ``palaestra server rescore`` derives it again, from another process;
that starts a new generation in the database (``server_settings``), and every signature holds it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from palaestra.scoreboard.server.tables.service import derived_generation

__all__ = ["cached", "lookup", "of_database", "of_env", "store"]

T = TypeVar("T")
#: values kept (a benchmark's algorithms are one each: a thousand of them is a field-scale benchmark)
SIZE = 4096
_lock = threading.Lock()
_values: OrderedDict[tuple[Any, ...], Any] = OrderedDict()


def cached(signature: tuple[Any, ...], compute: Callable[[], T]) -> T:
    """The value stored under ``signature``, else ``compute()`` (stored for the next request)."""
    hit, value = lookup(signature)
    if hit:
        return value
    value = compute()
    store(signature, value)
    return value


def lookup(signature: tuple[Any, ...]) -> tuple[bool, Any]:
    """``(True, value)`` if a value is stored under ``signature``, else ``(False, None)``."""
    with _lock:
        if signature in _values:
            _values.move_to_end(signature)
            return True, _values[signature]
    return False, None


def store(signature: tuple[Any, ...], value: Any) -> None:
    with _lock:
        _values[signature] = value
        _values.move_to_end(signature)
        while len(_values) > SIZE:
            _values.popitem(last=False)


def of_database(session: Session, *parts: Any) -> tuple[Any, ...]:
    """A signature of ``parts`` in the database of ``session`` (processes and tests may serve several),
    in its generation of derived values."""
    return (str(session.get_bind().engine.url), derived_generation(session), *parts)


def of_env(session: Session, what: str, env_id: str, evaluations: int, only: Any = None) -> tuple[Any, ...]:
    """The signature of ``what`` computed over the ``evaluations`` evaluations of ``env_id`` (or those
    of them that the SQL condition ``only`` selects, named by its text with its values)."""
    chosen = str(only.compile(compile_kwargs={"literal_binds": True})) if only is not None else None
    return of_database(session, what, env_id, evaluations, chosen)
