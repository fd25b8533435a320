"""Human-normalised Atari scores on a real ``palaestra server`` (over HTTP, no browser): an Atari
evaluation's page and ``/v1`` answer, and the Atari-5 benchmark page of a Monitor-recorded run, whose
numbers are the statistics module's on the human-normalised trial scores."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from palaestra.benchmarks import normalisation, statistics
from palaestra.scoreboard.server.web.benchmarks import AGGREGATE_REPS, PROFILE_REPS
from palaestra.scoreboard.server.web.render import fmt_number
from tests.scoreboard.server_helpers import ScoreboardServer
from tests.web import web_recordings
from tests.web.test_browser import _no_page_errors
from tests.web.web_helpers import require_vendor_assets, screenshot

pytest.importorskip("ale_py")
pytestmark = pytest.mark.slow  # 17 uploads; the server rescores the run at each of its 15

from tests.benchmarks.atari_recordings import record_atari_run, record_atari_trial  # noqa: E402
from tests.benchmarks.test_atari_benchmarks import ATARI_5_IDS, RECORDED_TRIALS, _expected_table  # noqa: E402


@dataclass
class AtariBoard:
    server: ScoreboardServer
    run_dir: Path
    run_id: str
    pong_id: str
    cartpole_id: str


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AtariBoard]:
    from palaestra.scoreboard.client import upload

    server = ScoreboardServer(tmp_path_factory.mktemp("atari-scoreboard")).start()
    root = tmp_path_factory.mktemp("atari-recordings")
    try:

        def send(directory: Path, **kwargs: Any) -> str:
            return upload(directory, server=server.url, api_key=server.api_key, **kwargs)

        run_dir = record_atari_run(root / "atari5", ATARI_5_IDS, RECORDED_TRIALS)
        run_id = send(run_dir, algorithm_id="random-atari", benchmark_id="Atari-5")
        pong_id = send(record_atari_trial(root / "pong", "ALE/Pong-v5", seed=7), algorithm_id="random-atari")
        cartpole = web_recordings.record_steps("CartPole-v1", root / "cartpole", 300)
        yield AtariBoard(server, run_dir, run_id, pong_id, send(cartpole, algorithm_id="random"))
    finally:
        server.stop()


def _chart(page: str) -> Any:
    match = re.search(r'<script type="application/json" id="benchmark-data">(.*?)</script>', page, re.S)
    assert match, "no chart data on the benchmark page"
    return json.loads(html.unescape(match[1]))


def test_an_atari_evaluation_shows_its_human_normalised_score(board: AtariBoard) -> None:
    with httpx.Client(base_url=board.server.url, timeout=60) as client:
        pong = client.get(f"/v1/evaluations/{board.pong_id}").json()
        cartpole = client.get(f"/v1/evaluations/{board.cartpole_id}").json()
        page = client.get(f"/evaluations/{board.pong_id}").text
        other_page = client.get(f"/evaluations/{board.cartpole_id}").text

    mean = pong["score"]["evaluation_mean"]
    assert pong["score"]["evaluation_episodes"] == 2 and mean is not None
    expected = (mean - -20.7) / (14.6 - -20.7)  # Pong in the atari57 table
    assert pong["human_normalised"] == {
        "value": pytest.approx(expected),
        "raw": mean,
        "of": "evaluation_mean",
        "game": "pong",
        "random": -20.7,
        "human": 14.6,
        "table": "atari57",
        "version": 1,
    }
    shown = re.search(r'<dd id="human-normalised">(.*?)</dd>', page, re.S)
    assert shown, "no human-normalised score on the evaluation page"
    assert shown[1].startswith(f"{expected:.3f} ") and "the evaluation episodes&#39; mean" in shown[1]
    assert "random play -20.7, 1 = human 14.6" in shown[1] and "atari57 v1" in shown[1]
    assert cartpole["human_normalised"] is None and 'id="human-normalised"' not in other_page


def test_the_atari5_page_reports_human_normalised_statistics_over_seeds(board: AtariBoard) -> None:
    with httpx.Client(base_url=board.server.url, timeout=120) as client:
        page = client.get("/benchmarks/Atari-5").text
        run = client.get(f"/v1/benchmark_runs/{board.run_id}").json()
    expected = _expected_table(board.run_dir)

    stored = run["score"]
    assert [t["trial_scores"] for t in stored["tasks"]] == [pytest.approx(expected[e]) for e in ATARI_5_IDS]
    assert stored["statistics"]["normalisation"]["table"] == "atari57"

    data = _chart(page)
    assert data["tasks"] == ATARI_5_IDS
    (algorithm,) = data["algorithms"]
    assert algorithm["label"] == "random-atari (1 run)"
    intervals = statistics.interval_estimates(expected, reps=AGGREGATE_REPS, seed=0)
    for name in ("iqm", "mean", "median", "optimality_gap"):
        value, low, high = algorithm["metrics"][name]
        assert (value, low, high) == pytest.approx(
            (intervals[name].value, intervals[name].low, intervals[name].high)
        ), name
    profile = statistics.performance_profile(expected, taus=np.linspace(0, 8, 81), reps=PROFILE_REPS, seed=0)
    assert algorithm["profile"]["taus"][-1] == 8.0 and len(algorithm["profile"]["taus"]) == 81
    assert algorithm["profile"]["fraction"] == pytest.approx(profile.fraction.tolist())
    assert algorithm["profile"]["has_interval"] is True

    assert '<th class="num">Random</th><th class="num">Human</th>' in page
    assert re.search(r'id="normalisation">Human-normalised with the atari57 v1: ', page)
    assert "human-normalised task scores (0 = random play, 1 = human)" in page
    qbert = normalisation.table().scores["qbert"]
    row = (
        f'<td class="num">{fmt_number(qbert.random)}</td><td class="num">{fmt_number(qbert.human)}</td></tr>'
    )
    assert row in page, "Q*bert's random and human scores in the task table"


@pytest.mark.browser
def test_the_atari5_profiles_are_drawn_to_eight_times_human(page: Any, board: AtariBoard) -> None:
    require_vendor_assets()
    pg, record = page
    pg.goto(f"{board.server.url}/benchmarks/Atari-5")
    profiles = pg.locator("#chart-profiles[data-bands]")
    profiles.wait_for()
    assert profiles.get_attribute("data-series") == "1"
    assert pg.evaluate("window.palaestraStatsCharts[2].scales.x.max") == 8
    assert pg.evaluate("window.palaestraStatsCharts[0].axes[0]._values") == ATARI_5_IDS
    pg.locator("#statistics").scroll_into_view_if_needed()
    screenshot(pg, "atari5-benchmark-charts")
    _no_page_errors(record)
