"""The declarative base and the column types every table module of the scoreboard shares.

- :class:`Base`: the one SQLAlchemy metadata of every table (:mod:`.scores`, :mod:`.accounts`,
  :mod:`.service`, :mod:`.ladders`, :mod:`.live`), which the migrations are checked
  against;
- :class:`UTCDateTime` and ``JSONType``: timezone-aware datetimes and JSON (JSONB on PostgreSQL) on
  both backends (a :class:`~..core.database.RawJSON` is stored as it is);
- :func:`snapshot` / :func:`from_row`: read-only plain objects of a row, cheaper than ORM objects;
- :func:`sorted_keys`: a JSON column's value the same on both backends; :func:`utcnow`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase

__all__ = [
    "Base",
    "JSONType",
    "UTCDateTime",
    "from_row",
    "snapshot",
    "sorted_keys",
    "utcnow",
]

_M = TypeVar("_M")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def snapshot(model: type[_M], values: Mapping[Any, Any]) -> _M:
    """A plain object with ``values`` (and None for other columns) as attributes, typed as ``model``,
    for reading (never add it to a session). The hot API paths select with Core and build their answers from these: an ORM
    object costs an instrumented ``setattr`` per column, a snapshot one ``dict`` copy."""
    columns = _COLUMNS.get(model)
    if columns is None:
        columns = _COLUMNS[model] = dict.fromkeys(model.__table__.columns.keys())  # type: ignore[attr-defined]
    return cast(_M, SimpleNamespace(**{**columns, **values}))


#: model -> {column name: None}: what a snapshot holds for the columns its values leave out
_COLUMNS: dict[type, dict[str, None]] = {}


def from_row(model: type[_M], row: sa.Row[Any]) -> _M:
    """A :func:`snapshot` of a Core ``row`` of ``model``'s table."""
    return snapshot(model, row._mapping)


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite forgets the zone; this restores it)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value


JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def sorted_keys(value: Any) -> Any:
    """A JSON column's value with every object's keys sorted, for answers: PostgreSQL's JSONB hands
    keys back in an order of its own (shorter first), SQLite in the order they were written, and a
    board moved from one to the other answers byte for byte the same (``palaestra server import``)."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSONType, list[Any]: JSONType}

