"""The benchmark page's charts in headless Chromium: per-task scores, aggregate metrics, performance
profiles, and the probability of improvement between two runs chosen with the form."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.scoreboard.server.web.compare import PALETTE
from tests.web.test_browser import _no_page_errors
from tests.web.test_browser_compare import COLOUR_PIXELS_JS
from tests.web.web_helpers import PageRecord, Uploads, require_vendor_assets, screenshot

pytestmark = pytest.mark.browser

Page = tuple[Any, PageRecord]

#: Translucent pixels of one colour (a shaded band: the canvas is transparent where nothing is drawn).
BAND_PIXELS_JS = """([selector, hex]) => {
  const [R, G, B] = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16));
  const canvas = document.querySelector(selector);
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] > 20 && data[i + 3] < 90 && Math.abs(data[i] - R) < 30 && Math.abs(data[i + 1] - G) < 30
        && Math.abs(data[i + 2] - B) < 30) n++;
  }
  return n;
}"""


def test_benchmark_charts_draw_points_intervals_and_profiles(page: Page, web_server: Any, uploads: Uploads) -> None:
    require_vendor_assets()
    pg, record = page
    pg.goto(f"{web_server.url}/benchmarks/ClassicControl2-v1")
    tasks = pg.locator("#chart-task-scores[data-intervals]")
    tasks.wait_for()
    # two algorithms x two tasks; only the balance agent (two runs) has intervals
    assert tasks.get_attribute("data-points") == "4" and tasks.get_attribute("data-intervals") == "2"
    metrics = pg.locator("#chart-aggregates[data-intervals]")
    assert metrics.get_attribute("data-points") == "8" and metrics.get_attribute("data-intervals") == "4"
    profiles = pg.locator("#chart-profiles[data-bands]")
    assert profiles.get_attribute("data-series") == "2" and profiles.get_attribute("data-bands") == "1"
    for selector in ("#chart-task-scores canvas", "#chart-aggregates canvas", "#chart-profiles canvas"):
        for colour in PALETTE[:2]:
            assert pg.evaluate(COLOUR_PIXELS_JS, [selector, colour]) > 30, (selector, colour)
    labels = pg.evaluate("window.palaestraStatsCharts[0].axes[0]._values")
    assert labels == ["CartPole-v0", "Pendulum-v1"]
    assert pg.locator("table.aggregates .no-interval").count() == 4
    pg.locator("#statistics").scroll_into_view_if_needed()
    screenshot(pg, "benchmark-charts")
    _no_page_errors(record)


def test_probability_of_improvement_form(page: Page, web_server: Any, uploads: Uploads) -> None:
    pg, record = page
    balance, random, second_balance = uploads.benchmark_runs
    pg.goto(f"{web_server.url}/benchmarks/ClassicControl2-v1")
    pg.locator("#improvement-x").select_option(random)
    pg.locator("#improvement-y").select_option(balance)
    pg.get_by_role("button", name="Compare runs").click()
    pg.wait_for_url(f"**y={balance}**")
    result = pg.locator("#improvement-result").inner_text()
    assert result.startswith(f"P({random} > {balance}) = ") and "n = 1, no interval" in result
    assert pg.locator("table.improvement tbody tr").count() == 2
    assert pg.locator("#improvement-x").input_value() == random, "the form keeps the choice"
    pg.locator("#improvement").scroll_into_view_if_needed()
    screenshot(pg, "benchmark-improvement", full_page=False)

    pg.locator("#improvement-y").select_option(random)
    pg.get_by_role("button", name="Compare runs").click()
    pg.locator("#improvement-problem").wait_for()
    assert "Choose two different runs" in pg.locator("#improvement-problem").inner_text()
    assert second_balance in pg.locator("#improvement-y").inner_text()
    _no_page_errors(record)


def test_algorithm_page_draws_the_mean_across_runs_with_its_band(
    page: Page, web_server: Any, uploads: Uploads
) -> None:
    require_vendor_assets()
    pg, record = page
    pg.goto(f"{web_server.url}/benchmark_runs/{uploads.benchmark_runs[0]}")
    pg.locator("dd.alg a").click()
    # Pendulum: the two runs' random actions differ (their CartPole runs balance alike: a zero-width band)
    pg.locator("#across-controls select[name=env]").select_option("Pendulum-v1")
    pg.get_by_role("button", name="Show").click()
    pg.wait_for_url("**env=Pendulum-v1**")
    chart = pg.locator("#chart-across[data-bands]")
    chart.wait_for()
    assert chart.get_attribute("data-bands") == "1" and chart.get_attribute("data-points") == "200"
    assert pg.evaluate(COLOUR_PIXELS_JS, ["#chart-across canvas", "#1f6feb"]) > 200, "the mean line"
    assert pg.evaluate(BAND_PIXELS_JS, ["#chart-across canvas", "#1f6feb"]) > 500, "the shaded band"
    assert pg.evaluate("window.palaestraAcross.series.map(s => s.label)")[1:4] == [
        "mean across runs", "95% low", "95% high"]
    pg.locator("#across-runs").scroll_into_view_if_needed()
    screenshot(pg, "algorithm-across-runs", full_page=False)
    _no_page_errors(record)
