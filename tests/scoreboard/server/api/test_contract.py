"""The route table and the wire: OpenAPI, and every answer of every /v1 route against its protocol model."""

from __future__ import annotations

import httpx

from tests.scoreboard.server_helpers import (
    ScoreboardServer,
)


def test_openapi_is_served(scoreboard_server: ScoreboardServer) -> None:
    doc = httpx.get(f"{scoreboard_server.url}/openapi.json").json()
    for path in (
        "/v1/files",
        "/v1/evaluations",
        "/v1/benchmark_runs",
        "/v1/benchmark_runs/{run_id}/commit",
        "/v1/algorithms",
        "/v1/uploads/{file_id}",
    ):
        assert path in doc["paths"], path

