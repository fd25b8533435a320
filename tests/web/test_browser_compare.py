"""Comparing evaluations in headless Chromium: select on a leaderboard, overlay, smooth, share.

The server is filled by real uploads (see conftest.py); screenshots go to test-artifacts/web/.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from palaestra.scoreboard.server.evaluations.pictures import ANIMATION_WIDTH
from palaestra.scoreboard.server.web.compare import PALETTE
from tests.web.test_browser import COUNT_PIXELS_JS, _no_page_errors
from tests.web.web_helpers import PageRecord, Uploads, poll, require_vendor_assets, screenshot

pytestmark = pytest.mark.browser

Page = tuple[Any, PageRecord]

#: Pixels of one colour (hex) on a canvas.
COLOUR_PIXELS_JS = """([selector, hex]) => {
  const [R, G, B] = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16));
  const canvas = document.querySelector(selector);
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] > 200 && Math.abs(data[i] - R) < 20 && Math.abs(data[i + 1] - G) < 20
        && Math.abs(data[i + 2] - B) < 20) n++;
  }
  return n;
}"""
#: The drawn y values of each evaluation's line (not the threshold's), without the join's gaps.
DRAWN_SERIES_JS = """(() => { const p = window.palaestraCompare.plot;
  return p.data.filter((ys, i) => i > 0 && p.series[i].label !== 'threshold')
    .map(ys => ys.filter(y => y !== null && y !== undefined)); })()"""


def test_select_two_on_the_leaderboard_and_compare_them(page: Page, web_server: Any, uploads: Uploads) -> None:
    require_vendor_assets()
    pg, record = page
    pg.goto(f"{web_server.url}/envs/CartPole-v0")
    first, second = uploads.cartpole[0], uploads.cartpole[2]
    pg.get_by_label(f"compare {first}").check()
    pg.get_by_label(f"compare {second}").check()
    pg.get_by_role("button", name="Compare selected").click()
    pg.wait_for_url("**/compare?**")
    chart = pg.locator("#compare-chart[data-series]")
    chart.wait_for()
    assert chart.get_attribute("data-series") == "2"
    assert pg.locator("table.compared tbody tr td:nth-child(2)").all_inner_texts() == [first, second]
    # two lines in the first two palette colours, and CartPole-v0's threshold (195) dashed in red
    for colour in PALETTE[:2]:
        assert pg.evaluate(COLOUR_PIXELS_JS, ["#compare-chart canvas", colour]) > 200, colour
    assert pg.evaluate(COUNT_PIXELS_JS, "#compare-chart canvas")["red"] > 100
    assert pg.evaluate("window.palaestraCompare.plot.series.map(s => s.label)")[-1] == "threshold"
    screenshot(pg, "compare-two")

    # the address is the shareable state: ids, axis and smoothing
    query = parse_qs(urlsplit(pg.url).query)
    assert query["e"] == [first, second] and query["x"] == ["episode"] and query["smooth"] == ["ema"]
    _no_page_errors(record)


def test_smoothing_changes_the_drawn_series_and_the_address(page: Page, web_server: Any, uploads: Uploads) -> None:
    require_vendor_assets()
    pg, record = page
    ids = uploads.cartpole[:2]
    pg.goto(f"{web_server.url}/compare?e={ids[0]}&e={ids[1]}&smooth=none")
    pg.locator("#compare-chart[data-smoothing=none]").wait_for()
    raw = pg.evaluate(DRAWN_SERIES_JS)
    uploaded = pg.evaluate("JSON.parse(document.getElementById('compare-data').textContent)"
                           ".series.map(s => s.reward)")
    assert raw == uploaded, "without smoothing the rewards are drawn as uploaded"

    pg.locator("#smoothing").select_option("window")
    pg.locator("#window-size").fill("20")
    pg.locator("#compare-chart[data-smoothing=window]").wait_for()
    pg.wait_for_url("**window=20**")
    smoothed = pg.evaluate(DRAWN_SERIES_JS)
    assert len(smoothed[0]) == len(raw[0]) and smoothed != raw
    # a 20-episode mean: the first episodes of the random-start run average their rewards
    assert smoothed[1][19] == pytest.approx(sum(raw[1][:20]) / 20)
    assert max(smoothed[1]) - min(smoothed[1]) < max(raw[1]) - min(raw[1])
    screenshot(pg, "compare-window-smoothing")

    pg.locator("#smoothing").select_option("ema")
    pg.locator("#ema-weight").fill("0.9")
    pg.locator("#compare-chart[data-smoothing=ema]").wait_for()
    pg.wait_for_url("**ema=0.9**")
    ema = pg.evaluate(DRAWN_SERIES_JS)
    assert ema[1][0] == pytest.approx(raw[1][0]), "the debiased average starts at the first value"
    assert ema[1][1] == pytest.approx((0.9 * 0.1 * raw[1][0] + 0.1 * raw[1][1]) / (1 - 0.81))

    # the shared address opens with the same state; the timestep axis too
    shared = pg.url
    pg.goto(shared.replace("x=episode", "x=timestep"))
    pg.locator("#compare-chart[data-x=timestep][data-smoothing=ema]").wait_for()
    assert pg.locator("#smoothing").input_value() == "ema"
    assert pg.locator("#ema-weight").input_value() == "0.9"
    assert "against timestep" in pg.locator("#compare-chart .u-title").inner_text()
    # the legend's values are formatted as the tables are: thousands grouped by a thin space
    pg.evaluate("(() => { const p = window.palaestraCompare.plot; "
                "p.setCursor({left: p.bbox.width / devicePixelRatio * 0.8, top: 20}); })()")
    timestep = pg.locator("#compare-chart .u-legend .u-value").first.inner_text()
    assert re.fullmatch(r"\d{1,3}(\u2009\d{3})+", timestep), timestep
    _no_page_errors(record)


def test_episode_ticks_are_whole_numbers_and_the_frozenlake_threshold_shows(
    page: Page, web_server: Any, uploads: Uploads
) -> None:
    require_vendor_assets()
    pg, record = page
    pg.goto(f"{web_server.url}/evaluations/{uploads.frozenlake}")
    pg.locator("#chart-reward[data-points]").wait_for()
    # uPlot draws tick labels on the canvas; the labels it drew are on its axis object
    labels = [t for t in pg.evaluate("window.palaestraCharts[0].axes[0]._values") if t]
    assert labels and all(t.replace("\u2009", "").lstrip("-").isdigit() for t in labels), labels
    assert len(set(labels)) == len(labels), f"no episode tick repeated (0, 0, 1, 1, …): {labels}"
    pixels = pg.evaluate(COUNT_PIXELS_JS, "#chart-reward canvas")
    assert pixels["red"] > 100, f"FrozenLake's threshold line (0.78, near the top of the rewards) is drawn: {pixels}"
    screenshot(pg, "evaluation-frozenlake-threshold")
    _no_page_errors(record)


def test_env_page_shows_a_picture_of_the_environment(page: Page, web_server: Any, uploads: Uploads) -> None:
    pg, record = page
    pg.goto(f"{web_server.url}/envs/CartPole-v0")
    image = pg.locator("figure.env-picture img")
    image.wait_for()
    # the first request makes an animation of the uploaded video with ffmpeg
    poll(pg, "document.querySelector('figure.env-picture img').complete", timeout_s=60)
    assert pg.evaluate("document.querySelector('figure.env-picture img').naturalWidth") == ANIMATION_WIDTH
    screenshot(pg, "env-picture", full_page=False)
    _no_page_errors(record)


#: Elements reaching past a 390-pixel screen, outside the scrollable table wrappers.
WIDER_THAN_SCREEN_JS = """Array.from(document.querySelectorAll('body *'))
  .filter(e => e.getBoundingClientRect().right > 392 && !e.closest('.table-wrap'))
  .slice(0, 5).map(e => `${e.tagName}.${e.className}#${e.id}`)"""


def test_compare_and_benchmark_pages_fit_a_phone(browser: Any, web_server: Any, uploads: Uploads) -> None:
    require_vendor_assets()
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        pg = context.new_page()
        pg.goto(f"{web_server.url}/compare?e={uploads.cartpole[0]}&e={uploads.cartpole[1]}")
        pg.locator("#compare-chart[data-series]").wait_for()
        # (a mobile page wider than its content zooms out: compare with the screen, not innerWidth)
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        screenshot(pg, "compare-phone")
        pg.goto(f"{web_server.url}/benchmarks/ClassicControl2-v1")
        pg.locator("#chart-profiles[data-bands]").wait_for()
        wide = pg.evaluate(WIDER_THAN_SCREEN_JS)
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390, wide
        screenshot(pg, "benchmark-phone")
    finally:
        context.close()
