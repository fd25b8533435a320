"""A board's results as one table: a row per evaluation, read in batches, written as CSV or parquet.

* :data:`COLUMNS` -- the table's columns, their types and meaning (docs/export.md shows them);
* :func:`parse_filters` -- the filters a request asks for (``env``, ``algorithm``, ``owner``,
  ``conditions_key``, ``solved``, ``verified``), checked, with an error that names a wrong one;
* :func:`batches` -- the rows, oldest evaluation first, in batches of :data:`BATCH_ROWS`: keyset
  pagination on ``evaluations.seq``, each batch one short query on its own connection, so a table of
  10^6 rows is never held in memory, nor a read transaction open while a client downloads;
* :func:`csv_chunks` and :func:`parquet_chunks` -- the bytes of each encoding, batch by batch
  (parquet: one row group per batch, through pyarrow, the ``export`` extra).

The ``/v1/evaluations.csv`` and ``.parquet`` routes (:mod:`.api.exports`) stream these chunks.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa

from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.evaluations.records import RunAlgorithm
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun, Evaluation

__all__ = [
    "BATCH_ROWS",
    "COLUMNS",
    "FILTERS",
    "Column",
    "FilterError",
    "batches",
    "csv_chunks",
    "parquet_chunks",
    "parse_filters",
]

#: Rows per batch (and per parquet row group): large enough that a query's round trip is a small
#: share of its cost, small enough to keep the server's memory flat (bench/results_export.py).
BATCH_ROWS = 10_000


@dataclass(frozen=True)
class Column:
    name: str
    #: ``string``, ``float64``, ``int64``, ``bool`` or ``timestamp`` (UTC)
    type: str
    meaning: str


COLUMNS: tuple[Column, ...] = (
    Column("id", "string", "the evaluation's id (its page is /evaluations/ID)"),
    Column("env", "string", "the env id"),
    Column("algorithm", "string", "the algorithm's id (its own, else its benchmark run's); empty if none"),
    Column("algorithm_name", "string", "that algorithm's name"),
    Column("owner", "string", "the name of the user who uploaded it"),
    Column("conditions_key", "string", "the digest of its conditions card; empty for a 2017 upload"),
    Column(
        "score",
        "float64",
        "what its leaderboard ranks it by: the best 100-episode mean (the env's trials), else the mean "
        "of its episodes when it has fewer",
    ),
    Column("solved", "bool", "whether it reached the env's reward threshold over the trials window"),
    Column("episodes", "int64", "its training episodes"),
    Column("steps", "int64", "its training timesteps"),
    Column("seeds", "string", "the seeds passed to reset, each once, in order, as JSON; empty if none recorded"),
    Column("created", "timestamp", "when it was uploaded (UTC; ISO 8601 in CSV)"),
    Column("verified", "bool", "whether the board verified it"),
    Column("commit", "string", "the git commit of the code that ran, from its provenance; empty if unknown"),
)

#: Whether the board ran the evaluation itself (an uploaded agent, :mod:`..agents.jobs`).
_VERIFIED = Evaluation.verified


def _bool(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise FilterError(f"The filter {name}={value!r} must be true or false.", name)


def _where_bool(column: Any) -> Any:
    return lambda value: column.is_(True) if value else column.is_(False)


#: filter name -> (how its text becomes a value, the condition on the rows)
FILTERS: dict[str, tuple[Any, Any]] = {
    "env": (None, lambda value: Evaluation.env_id == value),
    # the algorithm an evaluation belongs to (records.of_algorithm's rule): its own, else its run's
    # (by id, or by name as the pages open algorithms)
    "algorithm": (
        None,
        lambda value: sa.or_(
            sa.func.coalesce(Algorithm.id, RunAlgorithm.id) == value,
            sa.func.coalesce(Algorithm.name, RunAlgorithm.name) == value,
        ),
    ),
    "owner": (None, lambda value: User.name == value),
    "conditions_key": (None, lambda value: Evaluation.conditions_key == value),
    "solved": (_bool, _where_bool(Evaluation.solved)),
    "verified": (_bool, _where_bool(_VERIFIED)),
}


class FilterError(ValueError):
    """A filter the table does not have, or a value it cannot take; ``param`` names it."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


def parse_filters(params: Mapping[str, Any]) -> dict[str, Any]:
    """The filters of a request's parameters (empty values are no filter); :class:`FilterError`
    names an unknown one and lists those there are."""
    filters: dict[str, Any] = {}
    for name, raw in params.items():
        if name not in FILTERS:
            raise FilterError(
                f"The results table has no filter {name!r}; filter on {', '.join(FILTERS)} "
                "(e.g. ?env=CartPole-v1&solved=true).",
                name,
            )
        text = str(raw)
        if not text:
            continue
        parse = FILTERS[name][0]
        filters[name] = parse(name, text) if parse else text
    return filters


# the seeds' JSON as text (SQLite's json_extract, PostgreSQL's #>>), parsed here by orjson: the JSON
# type's own result processing (json.loads per row) was a third of the export's time
_SEEDS = Evaluation.provenance[("seeds",)].as_string()
_COMMIT = Evaluation.provenance[("git", "commit")].as_string()
_SELECT = (
    sa.select(
        Evaluation.seq,
        Evaluation.id,
        Evaluation.env_id,
        sa.func.coalesce(Algorithm.id, RunAlgorithm.id),
        sa.func.coalesce(Algorithm.name, RunAlgorithm.name),
        User.name,
        Evaluation.conditions_key,
        Evaluation.ranking_mean,
        Evaluation.solved,
        Evaluation.number_episodes,
        Evaluation.number_timesteps,
        _SEEDS,
        Evaluation.created,
        _VERIFIED,
        _COMMIT,
    )
    .join(User, User.seq == Evaluation.user_seq)
    .outerjoin(Algorithm, Algorithm.seq == Evaluation.algorithm_seq)
    .outerjoin(BenchmarkRun, BenchmarkRun.seq == Evaluation.benchmark_run_seq)
    .outerjoin(RunAlgorithm, RunAlgorithm.seq == BenchmarkRun.algorithm_seq)
)


def _seeds_text(text: str | None) -> str | None:
    """The seeds a run passed to reset (provenance ``seeds``: one record per seeded reset), each once."""
    if not text:
        return None
    try:
        seeds = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(seeds, list):
        return None
    distinct: list[Any] = []
    for record in seeds:
        seed = record.get("seed") if isinstance(record, dict) else None
        if seed is not None and seed not in distinct:
            distinct.append(seed)
    return orjson.dumps(distinct).decode() if distinct else None


Row = tuple[Any, ...]


def batches(db: Database, filters: Mapping[str, Any], batch_rows: int = BATCH_ROWS) -> Iterator[list[Row]]:
    """The table's rows (in :data:`COLUMNS` order), oldest evaluation first, ``batch_rows`` at a time."""
    query = _SELECT.where(*(FILTERS[name][1](value) for name, value in filters.items()))
    after = 0
    while True:
        with db.connect() as conn:
            rows = conn.execute(query.where(Evaluation.seq > after).order_by(Evaluation.seq).limit(batch_rows)).all()
        if not rows:
            return
        after = rows[-1][0]
        yield [(*row[1:11], _seeds_text(row[11]), row[12], bool(row[13]), row[14]) for row in rows]
        if len(rows) < batch_rows:
            return


#: booleans as CSV cells: what pandas and polars read back as booleans
_TEXT = {True: "true", False: "false"}


def csv_chunks(rows: Iterable[list[Row]]) -> Iterator[bytes]:
    """The table as UTF-8 CSV with a header line, one chunk per batch (an empty cell is a missing value)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([c.name for c in COLUMNS])
    for batch in rows:
        # id, env, algorithm, algorithm_name, owner, conditions_key, score, SOLVED, episodes, steps, seeds,
        # CREATED, VERIFIED, commit
        writer.writerows(
            (*r[:7], _TEXT[r[7]], r[8], r[9], r[10], r[11].isoformat() if r[11] else None, _TEXT[r[12]], r[13])
            for r in batch
        )
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


def arrow_schema() -> Any:
    """The table's pyarrow schema."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "float64": pa.float64(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([pa.field(c.name, types[c.type]) for c in COLUMNS])


class _Drain(io.RawIOBase):
    """A write-only file whose bytes are taken out as they come (pyarrow's writer needs a file)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._written = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._written += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._written

    def take(self) -> bytes:
        data, self._parts = b"".join(self._parts), []
        return data


def parquet_chunks(rows: Iterable[list[Row]]) -> Iterator[bytes]:
    """The table as a parquet file, one row group per batch, yielded as it is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema()
    sink = _Drain()
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for batch in rows:
            columns: list[Any] = list(zip(*batch)) if batch else [() for _ in COLUMNS]
            writer.write_table(pa.Table.from_arrays([pa.array(c, t) for c, t in zip(columns, schema.types)], schema=schema))
            yield sink.take()
    yield sink.take()
