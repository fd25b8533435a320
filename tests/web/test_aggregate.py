"""An algorithm's learning curve across runs: the data (web/aggregate.py) and its page, over HTTP."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import httpx
import numpy as np
import pytest

from palaestra.curves import from_episode_batch
from palaestra.scoreboard.server.web.aggregate import GRID_POINTS, aggregate_curve
from tests.web.web_helpers import Uploads


def _curves(rewards: list[float], trials: int = 10) -> dict[str, Any]:
    n = len(rewards)
    doc = {"episode_lengths": [10] * n, "episode_rewards": rewards, "timestamps": [float(i) for i in range(n)],
           "initial_reset_timestamp": 0.0}
    data = from_episode_batch(doc, trials, None)
    assert data is not None
    return data


def test_band_contains_the_mean_of_runs_on_the_grid_they_all_cover() -> None:
    rng = np.random.default_rng(1)
    runs = [_curves(list(rng.normal(i, 1.0, size=length))) for i, length in enumerate((120, 80, 150))]
    data = aggregate_curve(runs, "mean", "episode")
    assert data is not None and data["runs"] == 3 and data["band"]
    assert len(data["x"]) == GRID_POINTS and data["x"][0] == 0 and data["x"][-1] == 79  # the shortest run's end
    assert all(lo <= v <= hi for lo, v, hi in zip(data["low"], data["value"], data["high"], strict=True))
    assert any(hi - lo > 0.1 for lo, hi in zip(data["low"], data["high"], strict=True))
    # at an episode every run has, the value is the mean of the runs' running means there
    expected = np.mean([r["reward_mean"][79] for r in runs])
    assert data["value"][-1] == pytest.approx(expected, abs=1e-5)
    timestep = aggregate_curve(runs, "iqm", "timestep")
    assert timestep is not None and timestep["x"][-1] == 790 and timestep["metric"] == "iqm"


def test_one_run_has_no_band_and_runs_without_curves_none() -> None:
    one = aggregate_curve([_curves([1.0, 2.0, 3.0]), None], "mean", "episode")
    assert one is not None and one["runs"] == 1 and not one["band"] and one["low"] is None
    assert one["final"][1:] == [None, None]
    assert aggregate_curve([None], "mean", "episode") is None
    assert aggregate_curve([_curves([1.0])], "mean", "episode") is None  # one episode is no curve


def test_algorithm_page_shows_the_curve_across_its_runs(web_server: Any, uploads: Uploads) -> None:
    with httpx.Client(base_url=web_server.url, timeout=60) as client:
        run_page = client.get(f"/benchmark_runs/{uploads.benchmark_runs[0]}").text
        algorithm_id = re.search(r'href="/algorithms/([^"]+)">balance-agent</a>', run_page)[1]
        page = client.get(f"/algorithms/{algorithm_id}", params={"env": "CartPole-v0"})
        iqm = client.get(f"/algorithms/{algorithm_id}", params={"env": "Pendulum-v1", "stat": "iqm",
                                                                "x": "timestep"}).text
        odd = client.get(f"/algorithms/{algorithm_id}", params={"env": "Nope-v0", "stat": "x", "x": "y"})
    assert page.status_code == 200
    data = json.loads(html.unescape(re.search(r'id="across-data">(.*?)</script>', page.text, re.S)[1]))
    assert data["runs"] == 2 and data["band"] and data["metric"] == "mean"
    assert all(lo <= v <= hi for lo, v, hi in zip(data["low"], data["value"], data["high"], strict=True))
    assert re.search(r'<option value="CartPole-v0" selected>CartPole-v0 \(2 evaluations\)</option>', page.text)
    assert "shaded: 95% bootstrap band over runs" in page.text
    assert 'id="across-threshold">195.0<' in page.text
    assert re.search(r'<option value="iqm" selected>', iqm) and re.search(r'<option value="timestep" selected>', iqm)
    # an env the algorithm has no evaluation of falls back to its first env (not an error)
    assert odd.status_code == 200 and 'id="across-data"' in odd.text
