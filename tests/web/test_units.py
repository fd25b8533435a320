"""Small pieces of the web layer: URL safety, number formatting, paging links, chart data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from palaestra import curves
from palaestra.scoreboard.server.web.render import fmt_number, safe_url
from palaestra.scoreboard.server.web.views import Page, clamp_page
from palaestra.solved_stats import trailing_mean


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://gist.github.com/a/b", "https://gist.github.com/a/b"),
        ("http://example.org", "http://example.org"),
        ("javascript:alert(1)", None),
        ("JaVaScRiPt:alert(1)", None),
        ("data:text/html,<script>", None),
        ("//evil.example/x", None),
        ("https://ok.example/a b", None),
        ("not a url", None),
        (None, None),
    ],
)
def test_safe_url(url: object, expected: str | None) -> None:
    assert safe_url(url) == expected


def test_fmt_number() -> None:
    assert fmt_number(None) == "—"
    assert fmt_number(3) == "3"
    assert fmt_number(12345) == "12\u2009345"
    assert fmt_number(0.123456) == "0.12"
    assert fmt_number(2.5e7) == "2.5e+07"
    assert fmt_number(float("nan")) == "nan"


def test_page_links_and_clamping() -> None:
    page = Page(number=2, size=25, total=60, path="/envs/X-v0", sort="mean")
    assert page.pages == 3 and page.offset == 25
    assert page.url(page=1) == "/envs/X-v0?sort=mean"
    assert page.url(page=3) == "/envs/X-v0?sort=mean&page=3"
    assert page.url(sort="episodes", page=1) == "/envs/X-v0?sort=episodes"
    assert clamp_page(0, 60) == 1 and clamp_page(9, 60) == 3 and clamp_page(5, 0) == 1


def test_curves_from_an_episode_batch_are_binned_with_a_full_resolution_mean() -> None:
    n = 5001
    rewards = np.arange(n, dtype=float)
    doc = {
        "episode_lengths": [10] * n, "episode_rewards": rewards.tolist(), "timestamps": [100.0 + i for i in range(n)],
        "episode_types": ["t"] * (n - 1) + ["e"], "initial_reset_timestamp": 100.0,
    }
    data = curves.from_episode_batch(doc, trials=100, threshold=4000.0, max_points=1000)
    assert data is not None
    assert data["binned"] and data["bin"] == 5 and data["episodes"] == n - 1  # the 'e' episode is left out
    assert len(data["reward"]) == len(data["episode"]) == len(data["reward_mean"]) == 1000
    assert data["reward"][0] == pytest.approx(2.0)  # mean of episodes 0..4
    assert data["reward_mean"][-1] == pytest.approx(trailing_mean(rewards[: n - 1], 100)[-1])
    assert data["timestep"][1] == pytest.approx(70.0)  # episodes 5..9 start at steps 50..90
    assert data["seconds"][0] == pytest.approx(2.0)  # ended at 0..4 s after the first reset


def test_curves_edge_cases() -> None:
    assert curves.from_episode_batch({"episode_lengths": [], "episode_rewards": [], "timestamps": []}, 100, None) is None
    assert curves.from_episode_batch({"episode_lengths": [1], "episode_rewards": [], "timestamps": []}, 100, None) is None
    small = curves.from_episode_batch(
        {"episode_lengths": [3, 4], "episode_rewards": [1.0, float("nan")], "timestamps": [1.0, 2.0]}, 100, 1.0
    )
    assert small is not None and not small["binned"] and small["reward"] == [1.0, None]


def test_byte_ranges_of_blobs_served_from_memory() -> None:
    from palaestra.scoreboard.server.web.downloads import _bytes_response

    data = bytes(range(100))
    whole = _bytes_response(data, "video/mp4", {}, None)
    assert whole.status_code == 200 and whole.body == data and whole.headers["accept-ranges"] == "bytes"
    part = _bytes_response(data, "video/mp4", {}, "bytes=10-19")
    assert part.status_code == 206 and part.body == data[10:20]
    assert part.headers["content-range"] == "bytes 10-19/100"
    assert _bytes_response(data, "video/mp4", {}, "bytes=90-").body == data[90:]
    assert _bytes_response(data, "video/mp4", {}, "bytes=-5").body == data[95:]
    assert _bytes_response(data, "video/mp4", {}, "bytes=95-500").body == data[95:]
    assert _bytes_response(data, "video/mp4", {}, "bytes=100-").status_code == 416
    assert _bytes_response(data, "video/mp4", {}, "bytes=0-1,5-6").status_code == 200  # several: whole


def test_json_blocks_cannot_end_their_script_element() -> None:
    from palaestra.scoreboard.server.web.render import json_block

    hostile = {"label": "</script><script>alert(1)</script>", "amp": "a & b 'c'", "values": [1.5, None]}
    text = str(json_block(hostile))
    assert "<" not in text and ">" not in text and "&" not in text and "'" not in text
    assert json.loads(text) == hostile
