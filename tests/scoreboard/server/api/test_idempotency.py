"""Idempotency-Key on creating POSTs: the same key gets the same object once; another body gets a 409."""

from __future__ import annotations

import json
import uuid

from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    error_of,
    make_batch,
    post_upload,
)


def test_idempotency_key_returns_the_same_object_once(scoreboard_server: ScoreboardServer) -> None:
    key = uuid.uuid4().hex
    with scoreboard_server.client() as c:
        f1 = create_file(c, "episode_batch", **{"Idempotency-Key": key})
        f2 = create_file(c, "episode_batch", **{"Idempotency-Key": key})
        assert f1 == f2
        assert post_upload(f1, json.dumps(make_batch(4)).encode()).status_code == 204
        body = {"env": "CartPole-v1", "training_episode_batch": f1["id"]}
        ekey = {"Idempotency-Key": uuid.uuid4().hex}
        e1 = c.post("/v1/evaluations", json=body, headers=ekey)
        e2 = c.post("/v1/evaluations", json=body, headers=ekey)
        # the evaluation made once; the replay is a repeat of it (evaluations.repeats)
        assert e1.status_code == 201 and e2.status_code == 200 and e1.json()["id"] == e2.json()["id"]
        assert e2.headers.get("Idempotent-Replayed") == "true" and e2.json() == {**e1.json(), "already_uploaded": True}
        other = c.post("/v1/evaluations", json={**body, "env": "Acrobot-v1"}, headers=ekey)
        assert error_of(other, 409)["type"] == "Idempotency-Key"
        # without the key, reusing the consumed file is a conflict, not a duplicate
        assert error_of(c.post("/v1/evaluations", json=body), 409)["type"] == "training_episode_batch"

