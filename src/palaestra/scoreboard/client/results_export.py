"""The board's results as a table on this machine: ``palaestra export results``.

* :func:`parse_where` -- ``env=CartPole-v1,algorithm=alg_x`` as the filters of the table;
* :func:`export_results` -- ``GET /v1/evaluations.csv`` (or ``.parquet``) streamed into a file, written
  whole or not at all (a cut download leaves no half table), or CSV onto a stream.

The table's columns are the server's (:mod:`palaestra.scoreboard.server.evaluations.results_table`,
docs/export.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import BinaryIO

import httpx

from palaestra.durable import write_atomically
from palaestra.errors import APIConnectionError, ConfigurationError
from palaestra.scoreboard.client.config import resolve_api_key, resolve_server
from palaestra.scoreboard.client.transport import Transport
from palaestra.scoreboard.protocol import API_PREFIX

__all__ = ["FORMATS", "ResultsDownload", "export_results", "format_of", "parse_where"]

FORMATS = ("csv", "parquet")


@dataclass
class ResultsDownload:
    """What :func:`export_results` fetched."""

    url: str
    format: str
    output: str | None
    bytes: int


def parse_where(text: str | None) -> dict[str, str]:
    """``name=value[,name=value...]`` as a mapping; the server says which names it filters on."""
    where: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise ConfigurationError(
                f"--where takes name=value pairs separated by commas (env=CartPole-v1,algorithm=ID); "
                f"{part.strip()!r} is not one"
            )
        where[name.strip()] = value.strip()
    return where


def format_of(fmt: str | None, output: str | None) -> str:
    """The format asked for, else the output file's suffix (``.parquet``), else CSV."""
    if fmt is not None:
        return fmt
    return "parquet" if output and output.lower().endswith((".parquet", ".pq")) else "csv"


def export_results(
    output: str | os.PathLike[str] | BinaryIO,
    where: Mapping[str, str] | None = None,
    fmt: str = "csv",
    server: str | None = None,
    api_key: str | None = None,
) -> ResultsDownload:
    """Fetch the board's results table (one row per evaluation, narrowed by ``where``) as ``fmt`` into
    the file ``output`` (replaced only once the whole table arrived) or onto the binary stream
    ``output``. The API key is sent where one is configured (a keyed read is not rate-limited)."""
    if fmt not in FORMATS:
        raise ConfigurationError(f"Unknown format {fmt!r}: the results table comes as {' or '.join(FORMATS)}")
    base = resolve_server(server)
    try:
        key = resolve_api_key(api_key)
    except ConfigurationError:
        key = ""  # the table is public: read anonymously
    path = f"{API_PREFIX}/evaluations.{fmt}"
    transport = Transport(base, key)
    size = 0
    try:
        response = transport.open_download(path, dict(where or {}))

        def copy(f: BinaryIO) -> None:
            nonlocal size
            try:
                for chunk in response.iter_bytes():
                    f.write(chunk)
                    size += len(chunk)
            except httpx.HTTPError as e:
                kept = f"nothing was written to {os.fspath(output)}" if isinstance(output, (str, os.PathLike)) else (
                    "what came before it is incomplete"
                )
                raise APIConnectionError(
                    f"The download of {base + path} was cut after {size} bytes ({type(e).__name__}: {e}); "
                    f"{kept}. Run the export again."
                ) from None

        try:
            if isinstance(output, (str, os.PathLike)):
                name: str | None = os.fspath(output)
                write_atomically(os.fspath(output), copy)
            else:
                copy(output)
                name = None
        finally:
            response.close()
    finally:
        transport.close()
    return ResultsDownload(url=base + path, format=fmt, output=name, bytes=size)
