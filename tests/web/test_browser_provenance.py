"""The evaluation page's "How this was run" in headless Chromium: hostile provenance stays text."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import palaestra
from palaestra.monitoring.provenance import load_provenance
from palaestra.scoreboard.client import upload
from palaestra.scoreboard.server.web.provenance_view import reproducing_command
from tests.monitoring.monitoring_helpers import play
from tests.web.test_browser import _no_page_errors
from tests.web.web_helpers import PageRecord, screenshot

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def test_how_this_was_run_shows_hostile_config_as_text(
    page: tuple[Any, PageRecord], web_server: Any, tmp_path
):
    env = palaestra.Monitor(
        gym.make("CartPole-v1"), tmp_path, video_callable=False, config={HOSTILE: HOSTILE}
    )
    play(env, 3, seed=7)
    env.close()
    evaluation_id = upload(
        tmp_path, server=web_server.url, api_key=web_server.api_key, algorithm_id="prov-browser"
    )
    pg, record = page
    pg.goto(f"{web_server.url}/evaluations/{evaluation_id}")
    section = pg.locator("#provenance")
    assert section.locator("h2").inner_text() == "How this was run"
    assert "7 (reset 0)" in pg.locator("#seeds").inner_text()
    assert pg.locator("#config th").inner_text() == HOSTILE  # shown as the text it is
    assert pg.locator("#config td").inner_text() == HOSTILE
    assert pg.locator("#provenance img").count() == 0 and pg.locator("#provenance script").count() == 0
    # the command as it can be typed (``pytest …`` or ``python -m pytest …``: how this test runs)
    assert pg.locator("#reproduce").inner_text().strip() == reproducing_command(load_provenance(tmp_path) or {})
    assert record.dialogs == []  # no alert ran
    _no_page_errors(record)
    screenshot(pg, "evaluation-provenance")
