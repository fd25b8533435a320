"""The one parser of JSON that a client sent (:func:`parse_json`): depth-capped, NaN refused, never
``RecursionError``. Part of :mod:`palaestra.scoreboard.protocol`."""

from __future__ import annotations

import json
from typing import Any

import orjson

from palaestra.scoreboard.protocol.common import MAX_JSON_DEPTH


class JSONInputError(ValueError):
    """JSON that a client sent and that is malformed, nested too deep or holds NaN/Infinity."""


def parse_json(
    data: bytes | str, what: str, *, max_depth: int = MAX_JSON_DEPTH, allow_nan: bool = False
) -> Any:
    """Decode JSON that came from a client: every parse of client-supplied JSON goes through here.

    Malformed input, nesting deeper than ``max_depth`` and (unless ``allow_nan``) NaN or Infinity
    raise :class:`JSONInputError` whose message starts with ``what`` ("The request body", "tags"...).
    Never ``RecursionError``: orjson stops at 1024 levels and the ``json`` fallback's recursion is
    caught. orjson (a core dependency) decodes; a document it refuses (NaN or Infinity, integers past
    64 bits, bad JSON) goes to ``json``, which decodes the first two and words the error of the last.
    """
    doc: Any = _NOTHING
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        if str(e).startswith("depth limit exceeded"):
            raise JSONInputError(f"{what} is nested deeper than {max_depth} levels.") from None
    if doc is _NOTHING:
        try:
            doc = (
                json.loads(data)
                if allow_nan
                else json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
            )
        except RecursionError:
            raise JSONInputError(f"{what} is nested deeper than {max_depth} levels.") from None
        except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, integers past 4300 digits
            raise JSONInputError(f"{what} is not valid JSON: {e}") from None
    if _brackets(data) > max_depth and _deeper_than(doc, max_depth):
        raise JSONInputError(f"{what} is nested deeper than {max_depth} levels.")
    return doc


def _brackets(data: bytes | str) -> int:
    """How many arrays and objects ``data`` opens at most: no deeper than that (counted at C speed, it
    spares an episode batch, with its seven, the walk through its million numbers)."""
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


_NOTHING = object()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} is too large for a double")
    return value


def _deeper_than(doc: Any, max_depth: int) -> bool:
    """Whether ``doc`` nests arrays/objects more than ``max_depth`` deep (level by level, no recursion;
    an array of numbers costs one C-level pass over its item types)."""
    level = [doc] if isinstance(doc, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        below: list[Any] = []
        for node in level:
            items = node.values() if isinstance(node, dict) else node
            kinds = set(map(type, items))
            if list in kinds or dict in kinds:
                below.extend(item for item in items if isinstance(item, dict | list))
        level = below
    return False
