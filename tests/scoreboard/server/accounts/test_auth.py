"""API keys and rate limits: 401 without, with a wrong or a revoked key; 429 past the per-key limit."""

from __future__ import annotations

import uuid

import httpx

from palaestra.scoreboard.server.accounts import auth
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    error_of,
)
from tests.server_process import InProcessServer


def test_bad_or_missing_key_is_401(scoreboard_server: ScoreboardServer) -> None:
    r = httpx.post(f"{scoreboard_server.url}/v1/files", json={"purpose": "episode_batch"})
    assert "palaestra users create" in error_of(r, 401)["detail"]
    r = httpx.post(
        f"{scoreboard_server.url}/v1/evaluations",
        json={"env": "CartPole-v1"},
        headers={"Authorization": "Bearer pal_wrong"},
    )
    assert "Invalid API key" in error_of(r, 401)["detail"]


def test_revoked_key_is_401(in_process_server: InProcessServer) -> None:
    server = in_process_server
    key = server.create_user("temp")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}) as c:
        assert c.post("/v1/files", json={"purpose": "episode_batch"}).status_code == 201
        # `palaestra users revoke` works on the database directly, behind the server's back; the
        # server notices once its key cache expires
        assert auth.revoke(server.state.db, "temp")
        assert c.post("/v1/files", json={"purpose": "episode_batch"}).status_code == 201, "still cached"
        server.clock.advance(auth.AUTH_CACHE_S)
        error_of(c.post("/v1/files", json={"purpose": "episode_batch"}), 401)


def test_too_many_requests_is_429(limited_server: ScoreboardServer) -> None:
    """(It spends its own user's upload budget on the limited server.)"""
    key = limited_server.create_user(f"fast{uuid.uuid4().hex[:6]}")
    with httpx.Client(base_url=limited_server.url, headers={"Authorization": f"Bearer {key}"}) as c:
        statuses = [c.post("/v1/files", json={"purpose": "episode_batch"}) for _ in range(35)]
    limited = [r for r in statuses if r.status_code == 429]
    assert limited and all(r.status_code == 201 for r in statuses[:30])
    body = error_of(limited[0], 429)
    assert "30 files per user and hour" in body["detail"] and int(limited[0].headers["Retry-After"]) >= 3500

