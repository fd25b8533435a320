"""Short and evaluation-only runs on the pages and in the API: the mean of the episodes there are,
labelled as fewer than the solving window, the evaluation episodes' mean, and the leaderboard's order
(a perfect short run above a random long one)."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.scoreboard.server_helpers import ScoreboardServer, upload_evaluation
from tests.web.test_pages import EVAL_LINK_RE


def _batch(rewards: list[float], types: list[str] | None = None) -> dict[str, Any]:
    t0 = 1_700_000_000.0
    n = len(rewards)
    return {
        "data_sources": [0] * n,
        "episode_lengths": [max(1, int(r)) for r in rewards],
        "episode_rewards": rewards,
        "episode_types": types or ["t"] * n,
        "initial_reset_timestamps": [t0],
        "timestamps": [t0 + 1 + i for i in range(n)],
    }


def _row(html: str, evaluation_id: str) -> str:
    """The table row of ``evaluation_id`` in a page."""
    return next(row for row in html.split("<tr")[1:] if evaluation_id in row)


def _upload(client: httpx.Client, rewards: list[float], types: list[str] | None = None) -> dict[str, Any]:
    return upload_evaluation(client, env="CartPole-v0", batch=_batch(rewards, types))


def test_short_and_evaluation_only_runs_show_their_means_and_rank_by_them(
    fresh_scoreboard_server: ScoreboardServer,
) -> None:
    server = fresh_scoreboard_server
    with server.client() as c:
        random_long = _upload(c, [15.0 + i % 20 for i in range(150)])  # best window mean 24.5
        perfect_short = _upload(c, [200.0] * 20)
        evaluation_only = _upload(c, [150.0] * 10, ["e"] * 10)
        solved = _upload(c, [200.0] * 120)
        mixed_short = _upload(c, [100.0] * 5 + [180.0] * 3, ["t"] * 5 + ["e"] * 3)

        short = perfect_short["score"]
        assert short["mean"] is None and short["episodes_mean"] == 200.0 and short["number_episodes"] == 20
        only = evaluation_only["score"]
        assert only["number_episodes"] == 0 and only["episodes_mean"] is None
        assert only["evaluation_episodes"] == 10 and only["evaluation_mean"] == 150.0
        assert mixed_short["score"]["episodes_mean"] == 100.0 and mixed_short["score"]["evaluation_mean"] == 180.0
        assert random_long["score"]["mean"] == 24.5 and random_long["score"]["episodes_mean"] is None

        html = c.get("/envs/CartPole-v0").text
        order = EVAL_LINK_RE.findall(html)
        assert order == [solved["id"], perfect_short["id"], mixed_short["id"], random_long["id"],
                         evaluation_only["id"]]
        row = _row(html, perfect_short["id"])
        assert "200.00" in row and "mean of 20 episodes (fewer than 100)" in row
        assert "evaluation episodes' mean 150.00" in _row(html, evaluation_only["id"])
        assert "for a run of fewer than 100 training episodes, the mean of those it has" in html

        page = c.get(f"/evaluations/{perfect_short['id']}").text
        assert re.search(r'<dd id="mean">.*200\.00.*mean of 20 episodes \(fewer than 100\)', page)
        assert "20 training episodes: fewer than the 100" in page
        page = c.get(f"/evaluations/{evaluation_only['id']}").text
        assert '<dd id="evaluation-mean">150.00</dd>' in page

        user_page = c.get("/users/tester").text
        assert "mean of 20 episodes (fewer than 100)" in user_page
