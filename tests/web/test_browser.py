"""The scoreboard's pages in headless Chromium, as a person would look at them.

The server is filled by real uploads (see conftest.py). Each test saves a screenshot under
test-artifacts/web/.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.web import web_recordings as recordings
from tests.web.web_helpers import HOSTILE_NAME, PageRecord, Uploads, poll, require_vendor_assets, screenshot

pytestmark = pytest.mark.browser

Page = tuple[Any, PageRecord]

#: Counts pixels of the running-mean colour (#1f6feb) and of the threshold's red (#d1242f) on a canvas.
COUNT_PIXELS_JS = """(selector) => {
  const canvas = document.querySelector(selector);
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let blue = 0, red = 0;
  for (let i = 0; i < data.length; i += 4) {
    const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
    if (a > 200 && Math.abs(r - 31) < 25 && Math.abs(g - 111) < 25 && Math.abs(b - 235) < 25) blue++;
    if (a > 200 && Math.abs(r - 209) < 25 && Math.abs(g - 36) < 25 && Math.abs(b - 47) < 25) red++;
  }
  return {blue, red};
}"""


def _no_page_errors(record: PageRecord) -> None:
    assert record.errors == [], f"JavaScript errors: {record.errors}"
    problems = [m for m in record.console if m.startswith("error")]
    assert problems == [], f"console errors (CSP violations, failed loads): {problems}"


def test_leaderboard_order_and_hostile_algorithm_name(page: Page, web_server: Any, uploads: Uploads) -> None:
    pg, record = page
    pg.goto(f"{web_server.url}/envs/CartPole-v0")
    assert "CartPole-v0 defines solving as an average reward of 195.0 over 100 consecutive episodes." in (
        pg.locator("#solving-rule").inner_text()
    )
    ids = pg.locator("table.leaderboard tbody tr td:last-child a").all_inner_texts()
    # the solved ones first; the unsolved ones (with the benchmark runs' short CartPole-v0 evaluations)
    # follow by their mean (tests/web/test_pages.py checks that order)
    assert ids[:2] == uploads.cartpole[:2], "fewest episodes before solve first"
    assert uploads.cartpole[2] in ids[2:]
    assert len(ids) == 3 + len(uploads.benchmark_runs)
    episodes = pg.locator("table.leaderboard tbody tr td:nth-child(4)").all_inner_texts()
    assert int(episodes[0]) < int(episodes[1]) and episodes[2] == "—"

    # the hostile name is text: no <img src=x>, no injected <script>, and no dialog ever fires
    algorithms = pg.locator("table.leaderboard td.alg").all_inner_texts()
    assert algorithms[1] == HOSTILE_NAME
    assert pg.locator('img[src="x"]').count() == 0
    assert pg.locator("script:not([src]):not([type='application/json'])").count() == 0
    pg.wait_for_timeout(300)
    assert record.dialogs == []
    screenshot(pg, "env-leaderboard")

    # sort by the best mean (a header link), then the evaluation page of the hostile row
    pg.locator("table.leaderboard th a", has_text="Best 100-episode mean").click()
    pg.wait_for_url("**sort=mean**")
    cells = pg.locator("table.leaderboard td:nth-child(5)").all_inner_texts()
    windowed = [t for t in cells if "±" in t]
    assert cells[: len(windowed)] == windowed, "runs without a 100-episode mean come after those with one"
    assert any("fewer than 100" in t for t in cells[len(windowed):]), "a short run shows its episodes' mean"
    means = [float(t.split("±")[0]) for t in windowed]
    assert means == sorted(means, reverse=True)
    pg.goto(f"{web_server.url}/evaluations/{uploads.cartpole[1]}")
    assert pg.locator("dd.alg").inner_text() == HOSTILE_NAME
    assert pg.locator('img[src="x"]').count() == 0
    pg.wait_for_timeout(300)
    assert record.dialogs == []
    _no_page_errors(record)


def test_learning_curves_are_drawn(page: Page, web_server: Any, uploads: Uploads) -> None:
    require_vendor_assets()
    pg, record = page
    pg.goto(f"{web_server.url}/evaluations/{uploads.cartpole[0]}")
    chart = pg.locator("#chart-reward[data-points]")
    chart.wait_for()
    assert chart.get_attribute("data-points") == "101"  # one point per training episode
    assert chart.get_attribute("data-series") == "3"  # per episode, running mean, threshold
    assert pg.evaluate("window.palaestraCharts[0].data[1].length") == 101
    pixels = pg.evaluate(COUNT_PIXELS_JS, "#chart-reward canvas")
    assert pixels["blue"] > 300, f"the running mean was not drawn: {pixels}"
    assert pixels["red"] > 100, f"the threshold line was not drawn: {pixels}"
    length_pixels = pg.evaluate(COUNT_PIXELS_JS, "#chart-length canvas")
    assert length_pixels["blue"] > 300 and length_pixels["red"] == 0
    screenshot(pg, "evaluation-cartpole")

    pg.get_by_label("timestep").check()
    pg.locator("#chart-reward[data-x=timestep]").wait_for()
    assert "against timestep" in pg.locator("#chart-reward .u-title").inner_text()
    pg.get_by_label("wall-clock seconds").check()
    pg.locator("#chart-length[data-x=seconds]").wait_for()
    assert pg.evaluate(COUNT_PIXELS_JS, "#chart-reward canvas")["blue"] > 300
    _no_page_errors(record)


def test_mp4_video_loads_and_plays(page: Page, web_server: Any, uploads: Uploads) -> None:
    pg, record = page
    pg.goto(f"{web_server.url}/evaluations/{uploads.cartpole[0]}")
    video = pg.locator("figure.video video")
    assert video.count() == 1
    can_play = pg.evaluate("document.createElement('video').canPlayType('video/mp4; codecs=\"avc1.42E01E\"')")
    if not can_play:
        pytest.skip("this Chromium build cannot decode H.264 (no proprietary codecs)")
    poll(pg, "document.querySelector('figure.video video').readyState >= 1")
    duration = pg.evaluate("document.querySelector('figure.video video').duration")
    assert duration > 0
    pg.evaluate("(async () => { const v = document.querySelector('figure.video video'); v.muted = true; "
                "await v.play(); })()")
    poll(pg, "(() => { const v = document.querySelector('figure.video video'); "
             "return v.readyState >= 2 && (v.currentTime > 0 || v.ended); })()")
    size = pg.evaluate("[document.querySelector('figure.video video').videoWidth, "
                       "document.querySelector('figure.video video').videoHeight]")
    assert size == [600, 400]
    video.scroll_into_view_if_needed()
    screenshot(pg, "evaluation-video", full_page=False)
    _no_page_errors(record)


def test_terminal_player_shows_a_frame(page: Page, web_server: Any, uploads: Uploads) -> None:
    require_vendor_assets()
    pg, record = page
    pg.goto(f"{web_server.url}/evaluations/{uploads.frozenlake}")
    players = pg.locator(".terminal-player")
    assert players.count() == 2
    # the poster frame: FrozenLake's 4x4 map (rows FHFH, FFFH, HFFG) drawn by asciinema-player
    poll(pg, "document.querySelector('.terminal-player').innerText.includes('FHFH')")
    text = players.first.inner_text()
    assert "FFFH" in text and "HFFG" in text
    players.first.scroll_into_view_if_needed()
    screenshot(pg, "evaluation-terminal")
    _no_page_errors(record)


def test_home_and_benchmark_pages(page: Page, web_server: Any, uploads: Uploads) -> None:
    pg, record = page
    pg.goto(web_server.url)
    row = pg.locator("table.envs tr", has=pg.get_by_role("link", name="CartPole-v0", exact=True))
    assert row.locator("td.num").first.inner_text() == str(3 + len(uploads.benchmark_runs))
    assert "solved after" in row.inner_text()
    screenshot(pg, "home")

    pg.goto(f"{web_server.url}/benchmarks/ClassicControl2-v1")
    runs = pg.locator("table.runs tbody tr td:nth-child(2) a").all_inner_texts()
    assert sorted(runs) == sorted(uploads.benchmark_runs)
    scores = [float(t) for t in pg.locator("table.runs td.score").all_inner_texts()]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1], "ranked by score"
    assert pg.locator("table.aggregates tbody tr").count() == 2
    screenshot(pg, "benchmark")

    pg.goto(f"{web_server.url}/benchmark_runs/{runs[0]}")
    assert float(pg.locator("#run-score").inner_text()) > 0
    assert pg.locator("table.run-tasks tbody tr").count() == 2
    screenshot(pg, "benchmark-run")
    _no_page_errors(record)


def test_pages_on_a_phone(browser: Any, web_server: Any, uploads: Uploads) -> None:
    require_vendor_assets()
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        pg = context.new_page()
        pg.goto(f"{web_server.url}/evaluations/{uploads.cartpole[0]}")
        pg.locator("#chart-reward[data-points]").wait_for()
        # nothing wider than the screen except inside scrollable table wrappers (once the charts have
        # taken their box's width: on a loaded machine the first frame can still be the default one)
        fits = "document.documentElement.scrollWidth <= window.innerWidth"
        try:
            pg.wait_for_function(fits, timeout=5000)
        except Exception:
            pass  # the assertion below says by how much
        overflow = pg.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        screenshot(pg, "evaluation-phone")
        pg.goto(f"{web_server.url}/envs/CartPole-v0")
        assert pg.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        screenshot(pg, "env-phone")
    finally:
        context.close()


def test_the_leaderboard_fits_a_1280_pixel_window_with_each_full_id_in_a_title(
    browser: Any, web_server: Any, tmp_path: Path
) -> None:
    # the widest leaderboard: runs under two sets of conditions (a Conditions column) by a long-named
    # algorithm, of an env no other test uploads to this board (its banner and rows are all this test's)
    from palaestra.scoreboard.client import upload

    sent = []
    for steps_limit in (40, 60):
        directory = recordings.record_steps("MountainCar-v0", tmp_path / str(steps_limit), 100,
                                            max_episode_steps=steps_limit)
        sent.append(upload(directory, server=web_server.url, api_key=web_server.api_key,
                           algorithm_id="a-rather-long-algorithm-name-with-its-hyperparameters-lr3e-4"))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        pg = context.new_page()
        pg.goto(f"{web_server.url}/envs/MountainCar-v0")
        banner = pg.locator("#conditions-notice p").first.inner_text()
        assert re.search(r"differ in the episode step limit \(max_episode_steps: (40 vs 60|60 vs 40)\)\. Scores of "
                         r"different setups", banner), banner
        widths = pg.evaluate(
            """() => { const t = document.querySelector('table.leaderboard');
                       return [t.scrollWidth, t.parentElement.clientWidth]; }"""
        )
        assert widths[0] <= widths[1], f"the table is {widths[0]} px wide in a {widths[1]} px box"
        ids = pg.locator("table.leaderboard td.id a")
        assert sorted(ids.all_inner_texts()) == sorted(sent)
        # a cut id is still whole in its tooltip and its text (copy, find in page)
        assert [ids.nth(i).get_attribute("title") for i in range(ids.count())] == ids.all_inner_texts()
        screenshot(pg, "env-leaderboard-1280")
    finally:
        context.close()


def test_navigation_indexes_feed_and_search(page: Page, web_server: Any, uploads: Uploads) -> None:
    pg, record = page
    pg.goto(web_server.url)
    nav = pg.locator("header.site nav").first.all_inner_texts()[0].split()
    assert nav == ["Environments", "Benchmarks", "Algorithms", "Ladders", "Users"]
    assert pg.locator("header.site nav.account").inner_text() == "Sign in"
    feed = pg.locator("#recent ul.feed li")
    assert 8 <= feed.count() <= 10, "the newest uploads, ten at most (this session made 8, maybe more)"
    assert pg.locator(f"#recent a[href='/evaluations/{uploads.frozenlake}']").count() == 1
    screenshot(pg, "home-recent-uploads")

    pg.get_by_role("searchbox").first.fill("cartpole-v0")
    pg.keyboard.press("Enter")
    pg.wait_for_url("**/search?q=cartpole-v0")
    assert pg.locator("li.hit a").first.inner_text() == "CartPole-v0", "the exact id first"
    pg.locator("li.hit.env").get_by_role("link", name="CartPole-v0", exact=True).click()
    pg.wait_for_url("**/envs/CartPole-v0")
    screenshot(pg, "search-to-env", full_page=False)

    pg.get_by_role("link", name="Users", exact=True).click()
    pg.wait_for_url("**/users")
    assert pg.locator("table.users a[href='/users/tester']").count() == 1
    pg.get_by_role("link", name="Algorithms", exact=True).click()
    pg.wait_for_url("**/algorithms")
    assert pg.locator("table.algorithms td.alg").all_inner_texts().count(HOSTILE_NAME) == 1
    pg.locator("table.algorithms a", has_text="balance-agent").click()
    pg.wait_for_url("**/algorithms/alg_*")
    assert pg.locator("header.site nav a[aria-current=page]").inner_text() == "Algorithms"
    screenshot(pg, "algorithms")
    pg.wait_for_timeout(200)
    assert record.dialogs == []
    _no_page_errors(record)
