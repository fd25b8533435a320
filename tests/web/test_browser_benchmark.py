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
