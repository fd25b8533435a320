"""What an entry of the log of scores covers, by entry version: the documents the board hashes.

- **Version 1** (entries made before schema revision ``0013_score_log_coverage``): an evaluation's
  score columns (:data:`EVALUATION_FIELDS`) and a committed benchmark run's score (:data:`RUN_FIELDS`).
  Their hashes never change: such entries are checked against version-1 documents forever.
- **Version 2** (every entry made since): an evaluation's document also holds its curves, its
  provenance and conditions, and the names of its owner and algorithm; a run's, its owner's name;
  and two more kinds are logged: ``ladder_match`` (a match, its owner's name and every game: players,
  result, moves and the sha256 of its record's text), appended when the match is stored, and
  ``ladder_ratings`` (a ladder's whole table of ratings), appended each time the ladder is rated
  again, whose *latest* entry must match the table (:data:`SUPERSEDED`).
- **Version 3** (every entry made since the board evaluates agents itself): an evaluation's document
  also holds whether the board produced it (``verified``) and how (``verification``: the seeds it
  chose, the artifact's sha256, the job), and a ladder match's, whether the server played it (``verified``,
  ``agent_job_id``), so a self-reported score or match cannot be turned into a verified one, nor its
  seeds changed, without verify naming it.

Not covered, and said so in docs/archive.md: a live run before it is sealed (it changes with every
chunk; once sealed, its evaluation is logged), a run's tags and algorithm and an algorithm's
description (their owners may change them), and the per-env counts derived from the evaluations.

:func:`document` builds any kind's document from a mapping (a database row joined with the names,
the values inserted, or an exported line); :func:`current_documents` reads them from a database.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.ladders import LadderGame, LadderMatch, LadderRating
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, Evaluation

__all__ = [
    "CURRENT_VERSION",
    "EVALUATION_FIELDS",
    "FIELDS",
    "GAME_FIELDS",
    "RATING_FIELDS",
    "RUN_FIELDS",
    "SUPERSEDED",
    "canonical_json",
    "changed_fields",
    "current_documents",
    "document",
    "field_digests",
    "game_document",
    "hashed_document",
    "plain",
]

#: The version of the entries this palaestra appends.
CURRENT_VERSION = 3

EVALUATION_FIELDS = (
    "id", "user_seq", "env_id", "env_listed", "algorithm_seq", "benchmark_run_seq", "writeup",
    "gym_version", "training_episode_batch", "training_video", "episode_batch_key",
    "episode_batch_sha256", "trials", "reward_threshold", "solved", "episode_t_value",
    "timestep_t_value", "mean", "error", "number_episodes", "number_timesteps", "seconds_to_solve",
    "seconds_in_total", "episodes_mean", "evaluation_episodes", "evaluation_mean", "ranking_mean",
    "graph_stats", "benchmark_score", "videos", "created",
)  # fmt: skip
#: What version 2 adds to an evaluation's document: what its page shows besides the scores.
EVALUATION_FIELDS_ADDED = ("curves", "provenance", "conditions", "conditions_key", "user_name", "algorithm_name")
#: What version 3 adds: the board's own evaluation of an agent (the verified mark and its seeds).
EVALUATION_FIELDS_VERIFIED = ("verified", "verification")
#: Benchmark runs leave out what the API lets an owner change after the score (tags, algorithm);
#: their document names their evaluations.
RUN_FIELDS = ("id", "user_seq", "benchmark_id", "status", "score", "score_value", "score_evaluations", "created",
              "committed")  # fmt: skip
MATCH_FIELDS = ("id", "user_name", "ladder", "game", "board_size", "komi", "players", "digest", "created")
GAME_FIELDS = ("id", "number", "file_name", "black", "white", "winner", "reason", "result", "score", "moves")
RATING_FIELDS = ("player", "rating", "low", "high", "games", "points", "anchored", "is_anchor")

#: The fields of each kind's document, by entry version.
FIELDS: dict[int, dict[str, tuple[str, ...]]] = {
    1: {"evaluation": EVALUATION_FIELDS, "benchmark_run": RUN_FIELDS},
    2: {
        "evaluation": (*EVALUATION_FIELDS, *EVALUATION_FIELDS_ADDED),
        "benchmark_run": (*RUN_FIELDS, "user_name"),
        "ladder_match": MATCH_FIELDS,
        "ladder_ratings": ("ladder",),
    },
}
FIELDS[3] = {
    **FIELDS[2],
    "evaluation": (*FIELDS[2]["evaluation"], *EVALUATION_FIELDS_VERIFIED),
    "ladder_match": (*MATCH_FIELDS, "verified", "agent_job_id"),  # a match the server played itself
}
#: Kinds whose record is logged again at each change: only the latest entry of a record is held to it.
SUPERSEDED = frozenset({"ladder_ratings"})
_JSON_FIELDS = {"graph_stats", "benchmark_score", "videos", "score", "curves", "provenance", "conditions",
                "players", "moves", "verification"}  # fmt: skip


def plain(value: Any) -> Any:
    """``value`` as the one JSON form it has everywhere: a datetime as UTC ISO 8601, a float with an
    integral value as an int (PostgreSQL's JSONB and SQLite's REAL disagree on ``195`` vs ``195.0``),
    non-finite floats as None."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc).isoformat()
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in sorted(value.items())}  # sorted: one order on every backend
    if isinstance(value, list | tuple):
        if _LEAVES.issuperset(map(type, value)):  # a game's moves: 600 strings, checked in one C loop
            return list(value)
        return [plain(v) for v in value]
    return value


#: The types :func:`plain` keeps as they are.
_LEAVES = frozenset({str, int, bool, type(None)})


def canonical_json(doc: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the bytes that are hashed."""
    return _dumps(plain(doc))


def _dumps(value: Any) -> bytes:
    """The canonical bytes of an already plain ``value``."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def hashed_document(doc: Mapping[str, Any]) -> tuple[bytes, dict[str, str]]:
    """``(canonical_json(doc), field_digests(doc))``, each item serialised once. A 1,000-game match is
    4 MB of moves: serialising it item by item (the whole made by joining the parts, the bytes
    ``json.dumps`` would write) keeps each call that holds the interpreter short, so a large upload
    does not stall the requests served beside it."""
    doc = plain(doc)
    digests, parts = {}, []
    for name in sorted(doc):
        value = doc[name]
        if isinstance(value, list) and not _LEAVES.issuperset(map(type, value)):  # a match's games
            items = [_dumps(item) for item in value]
            encoded = b"[" + b",".join(items) + b"]"
            for item, item_bytes in zip(value, items, strict=True):
                if isinstance(item, Mapping) and ("id" in item or "player" in item):
                    key = item.get("id", item.get("player"))
                    digests[f"{name}.{key}"] = hashlib.sha256(item_bytes).hexdigest()
        else:
            encoded = _dumps(value)
        digests[name] = hashlib.sha256(encoded).hexdigest()
        parts.append(_dumps(name) + b":" + encoded)
    return b"{" + b",".join(parts) + b"}", digests


def field_digests(doc: Mapping[str, Any]) -> dict[str, str]:
    """The sha256 of each field of a document, and of each item of a list of named items (a match's
    ``games.<id>``, a ladder's ``ratings.<player>``): kept in a version-2 entry so that verify names
    what was changed, not only that something was."""
    return hashed_document(doc)[1]


def changed_fields(expected: Mapping[str, str], doc: Mapping[str, Any]) -> list[str]:
    """The fields (and named items) of ``doc`` whose digests differ from ``expected``: the most precise
    names first (``games.game_12`` before ``games``)."""
    found = field_digests(doc)
    changed = sorted(k for k in set(expected) | set(found) if expected.get(k) != found.get(k))
    items = [k for k in changed if "." in k]
    return items + [k for k in changed if "." not in k and not any(i.startswith(f"{k}.") for i in items)]


def _value(name: str, value: Any) -> Any:
    if name == "verified":  # a column default: absent from the values of a self-reported upload or match
        return bool(value)
    if name in _JSON_FIELDS and isinstance(value, str):
        value = json.loads(value)  # a RawJSON value, serialised before the write transaction
    if name in ("created", "committed") and isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value


def game_document(game: Mapping[Any, Any]) -> dict[str, Any]:
    """One game of a ladder match: what its page shows, and the sha256 of its record's text."""
    doc = {name: _value(name, game.get(name)) for name in GAME_FIELDS}
    doc["record_sha256"] = hashlib.sha256(str(game.get("record") or "").encode("utf-8")).hexdigest()
    return doc


def document(
    kind: str,
    row: Mapping[Any, Any],
    evaluation_ids: Sequence[str] = (),
    version: int = 1,
    games: Sequence[Mapping[Any, Any]] = (),
    ratings: Sequence[Mapping[Any, Any]] = (),
) -> dict[str, Any]:
    """The document of a record of ``kind`` in entries of ``version``: ``row``'s fields of that
    version (JSON columns may come as text, datetimes as ISO strings), a run's ``evaluation_ids``, a
    match's ``games`` (in their order), a ladder's ``ratings``."""
    doc: dict[str, Any] = {"kind": kind}
    for name in FIELDS[version][kind]:
        doc[name] = _value(name, row.get(name))
    if kind == "benchmark_run":
        doc["evaluations"] = list(evaluation_ids)
    if kind == "ladder_match":
        doc["games"] = [game_document(g) for g in games]
    if kind == "ladder_ratings":
        doc["ratings"] = sorted(({n: r.get(n) for n in RATING_FIELDS} for r in ratings), key=lambda r: r["player"])
    out: dict[str, Any] = plain(doc)
    return out


# -- from a database ------------------------------------------------------------------------------------


def evaluation_rows(conn: sa.Connection, ids: Iterable[str]) -> dict[str, Mapping[Any, Any]]:
    """Evaluations by id, with ``user_name`` and ``algorithm_name``."""
    evaluations: Any = Evaluation.__table__
    query = (
        sa.select(evaluations, User.name.label("user_name"), Algorithm.name.label("algorithm_name"))
        .join(User, User.seq == evaluations.c.user_seq)
        .outerjoin(Algorithm, Algorithm.seq == evaluations.c.algorithm_seq)
        .where(evaluations.c.id.in_(sorted(set(ids))))
    )
    return {row.id: row._mapping for row in conn.execute(query)}


def run_rows(conn: sa.Connection, ids: Iterable[str]) -> dict[str, Mapping[Any, Any]]:
    """Benchmark runs by id, with ``user_name``."""
    runs: Any = BenchmarkRun.__table__
    query = (
        sa.select(runs, User.name.label("user_name"))
        .join(User, User.seq == runs.c.user_seq)
        .where(runs.c.id.in_(sorted(set(ids))))
    )
    return {row.id: row._mapping for row in conn.execute(query)}


def run_evaluations(conn: sa.Connection, run_seq: int) -> list[str]:
    """The ids of a run's evaluations, in upload order (what its document names)."""
    query = sa.select(Evaluation.id).where(Evaluation.benchmark_run_seq == run_seq).order_by(Evaluation.seq)
    return list(conn.scalars(query))


def match_documents(
    conn: sa.Connection, ids: Iterable[str], version: int = CURRENT_VERSION
) -> dict[str, dict[str, Any]]:
    """The documents of ladder matches in entries of ``version`` (2 or later), by id."""
    matches: Any = LadderMatch.__table__
    games: Any = LadderGame.__table__
    query = (
        sa.select(matches, User.name.label("user_name"))
        .join(User, User.seq == matches.c.user_seq)
        .where(matches.c.id.in_(sorted(set(ids))))
    )
    rows = {row.seq: row._mapping for row in conn.execute(query)}
    their_games: dict[int, list[Mapping[Any, Any]]] = {seq: [] for seq in rows}
    if rows:
        game_query = sa.select(games).where(games.c.match_seq.in_(list(rows))).order_by(games.c.number, games.c.seq)
        for game in conn.execute(game_query):
            their_games[game.match_seq].append(game._mapping)
    return {
        row["id"]: document("ladder_match", row, version=version, games=their_games[seq]) for seq, row in rows.items()
    }


def ratings_documents(
    conn: sa.Connection, ladders: Iterable[str], version: int = CURRENT_VERSION
) -> dict[str, dict[str, Any]]:
    """The documents of ladders' ratings in entries of ``version`` (2 or later), by ladder (a ladder
    without ratings has none)."""
    table: Any = LadderRating.__table__
    found: dict[str, list[Mapping[Any, Any]]] = {}
    for row in conn.execute(sa.select(table).where(table.c.ladder.in_(sorted(set(ladders))))):
        found.setdefault(row.ladder, []).append(row._mapping)
    return {
        ladder: document("ladder_ratings", {"ladder": ladder}, version=version, ratings=rows)
        for ladder, rows in found.items()
    }


def current_documents(conn: sa.Connection, entries: Iterable[Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The documents of the records of ``entries`` as the board holds them now, by ``(kind,
    record_id, version)`` (a record that is gone has none)."""
    wanted: dict[tuple[str, int], set[str]] = {}
    for entry in entries:
        wanted.setdefault((entry.kind, getattr(entry, "version", 1) or 1), set()).add(entry.record_id)
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for (kind, version), ids in wanted.items():
        if kind == "evaluation":
            for record_id, row in evaluation_rows(conn, ids).items():
                out[kind, record_id, version] = document(kind, row, version=version)
        elif kind == "benchmark_run":
            for record_id, row in run_rows(conn, ids).items():
                evaluations = run_evaluations(conn, row["seq"])
                out[kind, record_id, version] = document(kind, row, evaluations, version=version)
        elif kind == "ladder_match":
            for record_id, doc in match_documents(conn, ids, version).items():
                out[kind, record_id, version] = doc
        elif kind == "ladder_ratings":
            for record_id, doc in ratings_documents(conn, ids, version).items():
                out[kind, record_id, version] = doc
    return out
