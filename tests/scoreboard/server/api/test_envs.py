"""/v1/envs and /v1/groups: the catalogue, and env ids it does not know."""

from __future__ import annotations

from palaestra import catalogue, solved_stats
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    make_batch,
    upload_evaluation,
)


def test_unknown_env_is_accepted_and_unlisted(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        ev = upload_evaluation(c, "NoSuchEnv-v7", make_batch(3), algorithm={})
        assert ev["env"] == "NoSuchEnv-v7" and ev["env_listed"] is False
        assert ev["score"]["trials"] == solved_stats.DEFAULT_TRIALS and ev["score"]["reward_threshold"] is None
        assert c.get("/v1/envs/NoSuchEnv-v7").json()["listed"] is False
        groups = {g["id"]: g for g in c.get("/v1/groups").json()["data"]}
        assert "CartPole-v1" in groups["classic_control"]["envs"] and groups["toy_text"]["name"] == "Toy text"
        listed = {e["id"]: e for e in c.get("/v1/envs", params={"group": "classic_control"}).json()["data"]}
        assert listed["CartPole-v1"]["reward_threshold"] == catalogue.lookup("CartPole-v1").reward_threshold

