"""Rate limits kept in the database: two server processes on one database (SQLite and PostgreSQL)
share every count, and each limit answers 429 with Retry-After and a problem document that says why."""

from __future__ import annotations

import json

import httpx
import pytest

from palaestra.errors import ConfigurationError
from palaestra.scoreboard.server.core.config import resolve_config
from tests.scoreboard.server_helpers import create_file, error_of, make_batch, post_upload

LOW_LIMITS = {
    "PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR": "6",
    "PALAESTRA_RATE_LIMIT_PENDING_FILES": "3",
    "PALAESTRA_RATE_LIMIT_INVALID_KEYS": "4",
}


def retry_after(r: httpx.Response) -> int:
    return int(r.headers["Retry-After"])


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_servers_on_one_database_share_every_limit(scoreboard_factory, tmp_path, request, backend):
    database_url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    data_dir = tmp_path / "shared"  # SQLite: one database file; PostgreSQL: one database
    a = scoreboard_factory(database_url=database_url, env=LOW_LIMITS, data_dir=data_dir)
    b = scoreboard_factory(database_url=database_url, env=LOW_LIMITS, data_dir=data_dir)
    # the same user on both (each server's helper added a key of "tester")
    with a.client() as on_a, b.client() as on_b:
        # invalid API keys per client address: 4 in 10 minutes, wherever they were sent
        bad = {"Authorization": "Bearer pal_guessed"}
        for server in (a, b, a, b):
            error_of(httpx.get(f"{server.url}/v1/files", headers=bad), 401)
        refused = httpx.get(f"{a.url}/v1/files", headers=bad)
        detail = error_of(refused, 429)["detail"]
        assert "Too many requests with an invalid API key from 127.0.0.1" in detail
        assert 1 <= retry_after(refused) <= 600
        assert on_b.get("/v1/files").status_code == 200  # a valid key is not held up

        # files waiting for their upload per user: 3
        f1, f2, f3 = (
            create_file(on_a, "episode_batch"),
            create_file(on_b, "episode_batch"),
            create_file(on_a, "episode_batch"),
        )
        refused = on_b.post("/v1/files", json={"purpose": "episode_batch"})
        assert "Too many files waiting for their upload: you have 3" in error_of(refused, 429)["detail"]
        assert 3000 < retry_after(refused) <= 3600  # when the first of them expires
        batch = json.dumps(make_batch(3)).encode()
        assert post_upload(f1, batch).status_code == 204
        f4 = create_file(on_b, "episode_batch")  # one was used: room again

        # files per user and hour: 6 (4 so far, the refused ones not counted)
        for f in (f2, f3, f4):
            assert post_upload(f, batch).status_code == 204
        create_file(on_a, "episode_batch")
        create_file(on_b, "episode_batch")
        refused = on_a.post("/v1/files", json={"purpose": "episode_batch"})
        body = error_of(refused, 429)
        assert body["detail"].startswith("Too many uploads: this server accepts 6 files per user and hour")
        assert body["status"] == 429 and body["request_id"] == refused.headers["request-id"]
        assert 3500 < retry_after(refused) <= 3600


def test_the_old_per_process_limit_setting_is_refused_with_its_replacement(tmp_path):
    env = {"PALAESTRA_DATA_DIR": str(tmp_path), "PALAESTRA_RATE_LIMIT_PER_MINUTE": "60"}
    with pytest.raises(ConfigurationError, match="replaced by PALAESTRA_RATE_LIMIT_UPLOADS_PER_HOUR"):
        resolve_config(environ=env)


def test_the_default_limits_are_far_above_a_benchmark_upload(tmp_path):
    config = resolve_config(environ={"PALAESTRA_DATA_DIR": str(tmp_path)})
    assert config.uploads_per_hour >= 1000 and config.max_pending_files >= 100
    assert config.invalid_keys_per_window >= 50
