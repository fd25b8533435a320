"""gym 0.9.4's own client uploading the directory of a live run already sealed: the sealed evaluation,
not a duplicate (its batch is the same episodes in other bytes)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx
import pytest

from palaestra.scoreboard.client import ScoreboardClient
from palaestra.scoreboard.client.follow import Follower
from tests.scoreboard.server.test_legacy_client import run_legacy
from tests.scoreboard.server_helpers import ScoreboardServer

pytestmark = pytest.mark.legacy_gym

RECORD = textwrap.dedent(
    """
    import sys, gym
    from gym import wrappers
    env = wrappers.Monitor(gym.make("FrozenLake-v0"), sys.argv[1], force=True, video_callable=lambda e: e < 2)
    env.seed(0)
    for _ in range(12):
        env.reset(); done = False
        while not done:
            _, _, done, _ = env.step(env.action_space.sample())
    env.close()
    """
)
UPLOAD = "import sys, gym; gym.upload(sys.argv[1])"  # gym 0.9.4's upload returns nothing; it logs the URL


def test_gym_094_uploading_a_sealed_live_runs_directory_gets_the_sealed_evaluation_not_a_duplicate(
    legacy_gym_python: str, fresh_scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    server, run = fresh_scoreboard_server, tmp_path / "frozenlake"
    run_legacy(legacy_gym_python, RECORD, [str(run)])
    with ScoreboardClient(server.url, server.api_key) as client:
        sealed = Follower(client, run, interval=0.1).follow()
    assert sealed is not None and sealed.status == "sealed"
    run_legacy(
        legacy_gym_python,
        UPLOAD,
        [str(run)],
        env={"OPENAI_GYM_API_BASE": server.url, "OPENAI_GYM_API_KEY": server.api_key},
    )
    listed = httpx.get(f"{server.url}/v1/evaluations", params={"env": "FrozenLake-v0"}).json()["data"]
    assert [e["id"] for e in listed] == [sealed.evaluation_id]
    evaluation = listed[0]
    assert evaluation["score"]["number_episodes"] == 12 and len(evaluation["videos"]) == 2
