"""The follower in this process, against a real server: where it resumes from is the server's answer."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym

import palaestra
from palaestra.scoreboard.client import ScoreboardClient
from palaestra.scoreboard.client.follow import Follower
from tests.scoreboard.live.live_helpers import live_state
from tests.scoreboard.server_helpers import ScoreboardServer


def _record(directory: Path, episodes: int, close: bool) -> palaestra.Monitor:
    env = palaestra.Monitor(gym.make("CartPole-v1"), directory, video_callable=False, resume=True)
    for i in range(episodes):
        env.reset(seed=i)
        while not any(env.step(env.action_space.sample())[2:4]):
            pass
    if close:
        env.close()
    return env


def test_a_follower_with_a_wrong_idea_of_the_servers_position_asks_it_and_sends_each_episode_once(
    scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    env = _record(run, 12, close=False)
    with ScoreboardClient(scoreboard_server.url, scoreboard_server.api_key) as client:
        follower = Follower(client, run, interval=0.1)
        assert follower.poll_once() is False  # the Monitor is open
        assert follower.live_id is not None
        (source,) = follower.positions
        assert follower.positions[source] == 12
        follower.positions[source] = 5  # as if an answer had been lost: a chunk overlapping the server's
        for i in range(12, 20):
            env.reset(seed=i)
            while not any(env.step(env.action_space.sample())[2:4]):
                pass
        env.close()
        assert follower.poll_once() is True  # closed now: everything sent
        assert live_state(scoreboard_server, follower.live_id)["sources"] == {source: 20}
        sealed = follower.seal()
        assert sealed.status == "sealed"
        again = Follower(client, run, interval=0.1).follow()  # run again on the finished directory
        assert again.evaluation_id == sealed.evaluation_id
    assert live_state(scoreboard_server, sealed.id)["episodes"] == 20
