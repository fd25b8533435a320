"""A run followed live, in headless Chromium: its page counts episodes up while it trains, without a
reload; the env leaderboard and the user's page list it apart and never rank it."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scoreboard.live.live_helpers import (
    live_id_of,
    live_state,
    start_follower,
    start_training,
    wait_for,
)
from tests.scoreboard.server_helpers import ScoreboardServer
from tests.web.web_helpers import poll, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[ScoreboardServer]:
    server = ScoreboardServer(tmp_path / "scoreboard").start()
    yield server
    server.stop()


def test_a_followed_runs_page_counts_its_episodes_up_while_it_trains(
    page: Any, live_server: ScoreboardServer, tmp_path: Path
) -> None:
    pg, record = page
    run = tmp_path / "run"
    training = start_training(run, episodes=100_000, pause=0.05)
    follower = start_follower(live_server, run)
    try:
        live_id = wait_for(lambda: live_id_of(run), what="the live evaluation")
        wait_for(lambda: live_state(live_server, live_id)["episodes"] >= 3, what="episodes on the server")
        pg.goto(f"{live_server.url}/live/{live_id}")
        first = int(pg.locator("#live-episodes").inner_text())
        assert pg.locator("#live-status").inner_text().startswith("In progress, last episode")
        # no reload: the page's own script fetches /live/{id}.json and rewrites the count
        poll(pg, f"Number(document.getElementById('live-episodes').textContent) > {first + 5}", timeout_s=30)
        assert pg.evaluate("performance.getEntriesByType('navigation').length") == 1
        # the evaluation page's charts (charts.js): drawn, with axes and the threshold in the legend
        poll(pg, "Number(document.getElementById('chart-reward').getAttribute('data-points')) > 0", timeout_s=30)
        assert pg.locator("#chart-reward .u-axis").count() >= 2
        assert "threshold" in pg.locator("#chart-reward .u-legend").inner_text()
        assert pg.locator("#live-recent-label").inner_text().startswith("Mean of the")
        screenshot(pg, "live-run")

        pg.goto(f"{live_server.url}/envs/CartPole-v1")
        assert live_id in pg.locator("table.live-runs").inner_text()
        assert pg.locator("table.leaderboard").count() == 0  # nothing ranked: no evaluation yet
        pg.goto(f"{live_server.url}/users/tester")
        assert "in progress" in pg.locator("table.live-runs").inner_text()
        assert record.errors == []
    finally:
        training.send_signal(signal.SIGKILL)
        training.wait(timeout=30)
        follower.terminate()
        follower.wait(timeout=30)
