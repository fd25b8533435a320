"""``GET /v1/evaluations.csv`` and ``GET /v1/evaluations.parquet``: the board's results as one table.

One row per evaluation (:data:`palaestra.scoreboard.server.evaluations.results_table.COLUMNS`), oldest first,
narrowed by query parameters (``?env=CartPole-v1&algorithm=alg_...&owner=NAME&solved=true``). The
answer is streamed: the rows are read in keyset batches and written out batch by batch (parquet: a
row group each), so a board of 10^6 evaluations is exported in the memory of one batch
(bench/results_export.py). Like every read it counts against the anonymous read limit, and a
read-only board answers it.

The first batch is read before the answer starts, so that a bad filter or a database outage is an
error answer (400, 503) rather than a cut download.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from palaestra.extras import install_command
from palaestra.scoreboard.server.api.deps import State, query_params
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.evaluations import results_table
from palaestra.scoreboard.server.problems import Problem

__all__ = ["CSV_MEDIA_TYPE", "PARQUET_MEDIA_TYPE", "router"]

router = APIRouter(tags=["exports"])

CSV_MEDIA_TYPE = "text/csv; charset=utf-8"
#: IANA's type for Apache Parquet (registered 2024)
PARQUET_MEDIA_TYPE = "application/vnd.apache.parquet"


def _filters(request: Request) -> dict[str, object]:
    try:
        return results_table.parse_filters(query_params(request))
    except results_table.FilterError as e:
        raise Problem(400, str(e), e.param) from None


async def _rows(state: ServerState, request: Request) -> Iterator[list[results_table.Row]]:
    """The table's batches, the first already read, in a worker thread (not ``run_blocking``'s inline
    path: a batch of 10,000 rows would hold the event loop for a tenth of a second or more)."""
    batches = results_table.batches(state.db, _filters(request))
    first = await run_in_threadpool(next, batches, None)
    return chain([first] if first is not None else [], batches)


def _download(chunks: Iterator[bytes], media_type: str, name: str) -> StreamingResponse:
    # a plain iterator: Starlette advances it in a worker thread, one batch at a time
    return StreamingResponse(
        chunks, media_type=media_type, headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )


@router.get(
    "/evaluations.csv",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/csv": {}}, "description": "One row per evaluation, as CSV"}},
)
async def evaluations_csv(request: Request, state: State) -> Response:
    """Every evaluation as a CSV row (filters: ``env``, ``algorithm``, ``owner``, ``conditions_key``,
    ``solved``, ``verified``)."""
    rows = await _rows(state, request)
    return _download(results_table.csv_chunks(rows), CSV_MEDIA_TYPE, "evaluations.csv")


@router.get(
    "/evaluations.parquet",
    response_class=StreamingResponse,
    responses={
        200: {"content": {PARQUET_MEDIA_TYPE: {}}, "description": "One row per evaluation, as parquet"},
        501: {"description": "The server has no pyarrow (the 'export' extra)"},
    },
)
async def evaluations_parquet(request: Request, state: State) -> Response:
    """Every evaluation as a parquet row, one row group per batch (filters as ``.csv``)."""
    try:
        import pyarrow  # noqa: F401  (the 'export' extra)
    except ImportError:
        raise Problem(
            501,
            "This server cannot write parquet: pyarrow is not installed. Its operator can add it with "
            f"{install_command('export')}; meanwhile GET /v1/evaluations.csv has the same table as CSV.",
        ) from None
    rows = await _rows(state, request)
    return _download(results_table.parquet_chunks(rows), PARQUET_MEDIA_TYPE, "evaluations.parquet")
