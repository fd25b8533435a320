"""The compare page and the selection that leads to it, over HTTP (no browser): the data behind the
chart, unknown ids, the settings in the query string; and a board game's wins, draws and losses."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from typing import Any

import httpx
import pytest

from palaestra.scoreboard.server.web.compare import (
    DEFAULT_EMA,
    DEFAULT_WINDOW,
    MAX_COMPARED,
    CompareSettings,
    requested_ids,
)
from tests.web.web_helpers import HOSTILE_NAME, Uploads


def _json_block(page: str, block_id: str) -> Any:
    match = re.search(rf'<script type="application/json" id="{block_id}">(.*?)</script>', page, re.S)
    assert match, f"no #{block_id} on the page"
    return json.loads(html.unescape(match[1]))


def test_compare_draws_each_evaluations_rewards_from_its_evaluation_curves(
    web_server: Any, uploads: Uploads
) -> None:
    first, second = uploads.cartpole[0], uploads.cartpole[2]
    with httpx.Client(base_url=web_server.url, timeout=30) as client:
        page = client.get("/compare", params=[("e", first), ("e", second), ("e", first)])
        assert page.status_code == 200
        data = _json_block(page.text, "compare-data")
        assert [s["id"] for s in data["series"]] == [first, second], "duplicates dropped, order kept"
        assert data["threshold"] == 195.0  # CartPole-v0's
        for line in data["series"]:
            curves = _json_block(client.get(f"/evaluations/{line['id']}").text, "curves-data")
            assert line["reward"] == curves["reward"]
            assert [line[x] for x in ("episode", "timestep", "seconds")] == [
                curves["episode"], curves["timestep"], curves["seconds"]]
        assert "balance · tester · " + first in {s["label"] for s in data["series"]}

        # a hostile algorithm name is text in the table and in the chart's labels
        hostile = client.get("/compare", params=[("e", uploads.cartpole[1])]).text
        assert "<script>alert(1)" not in hostile and "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile
        label = _json_block(hostile, "compare-data")["series"][0]["label"]
        assert label == f"{HOSTILE_NAME} · tester · {uploads.cartpole[1]}"

        # evaluations of different envs: no common threshold, and the page says why
        mixed = client.get("/compare", params=[("e", first), ("e", uploads.frozenlake)]).text
        assert _json_block(mixed, "compare-data")["threshold"] is None
        assert "different environments, so no threshold is drawn" in mixed


def test_unknown_ids_get_a_clear_message_not_an_error(web_server: Any, uploads: Uploads) -> None:
    with httpx.Client(base_url=web_server.url, timeout=30) as client:
        none_known = client.get("/compare", params=[("e", "eval_nope"), ("e", "<b>x</b>")])
        assert none_known.status_code == 404
        assert "No evaluation &#39;eval_nope&#39;, &#39;&lt;b&gt;x&lt;/b&gt;&#39;: nothing to compare." in (
            none_known.text
        )

        some_known = client.get("/compare", params=[("e", "eval_nope"), ("e", uploads.cartpole[0])])
        assert some_known.status_code == 200
        assert re.search(r'id="missing">Not found, so left out: <code>eval_nope</code>', some_known.text)
        assert [s["id"] for s in _json_block(some_known.text, "compare-data")["series"]] == [uploads.cartpole[0]]

        # an evaluation page links to its comparison with the env's best
        third = client.get(f"/evaluations/{uploads.cartpole[2]}").text
        link = re.search(r'<a id="compare-best" href="([^"]+)">', third)
        assert link and html.unescape(link[1]).startswith(f"/compare?e={uploads.cartpole[2]}&e=eval_")
        assert client.get(html.unescape(link[1])).status_code == 200

        nothing = client.get("/compare")
        assert nothing.status_code == 200 and "Nothing selected" in nothing.text


def test_the_query_string_holds_the_chart_settings(web_server: Any, uploads: Uploads) -> None:
    ids = uploads.cartpole[:2]
    with httpx.Client(base_url=web_server.url, timeout=30) as client:
        page = client.get("/compare", params=[("e", ids[0]), ("e", ids[1]), ("x", "seconds"),
                                              ("smooth", "window"), ("window", "25")]).text
        assert re.search(r'value="seconds" checked', page)
        assert re.search(r'<option value="window" selected>', page)
        assert 'name="window" id="window-size" min="1" max="10000" step="1" value="25"' in page
        share = f"/compare?e={ids[0]}&amp;e={ids[1]}&amp;x=seconds&amp;smooth=window&amp;window=25"
        assert f'id="share-url" href="{share}"' in page

        # a hand-edited address with nonsense still opens, with the defaults
        odd = client.get("/compare", params=[("e", ids[0]), ("x", "bogus"), ("smooth", "ema"), ("ema", "7")])
        assert odd.status_code == 200
        assert re.search(r'value="episode" checked', odd.text) and f'value="{DEFAULT_EMA}"' in odd.text


def test_leaderboards_user_and_algorithm_pages_select_evaluations_to_compare(
    web_server: Any, uploads: Uploads
) -> None:
    with httpx.Client(base_url=web_server.url, timeout=30) as client:
        board = client.get("/envs/CartPole-v0").text
        user = client.get("/users/tester").text
        algorithm_id = re.search(r'href="/algorithms/([^"]+)">balance</a>', board)[1]
        algorithm = client.get(f"/algorithms/{algorithm_id}").text
    for page, expected in ((board, uploads.cartpole), (user, uploads.cartpole), (algorithm, uploads.cartpole[:1])):
        assert '<form class="compare-select" method="get" action="/compare">' in page
        assert "Compare selected</button>" in page
        boxes = re.findall(r'<input type="checkbox" class="compare" name="e" value="([^"]+)"', page)
        assert set(expected) <= set(boxes)


def test_settings_and_ids_are_read_leniently() -> None:
    assert CompareSettings.from_query("timestep", "window", "", "50") == CompareSettings("timestep", "window",
                                                                                         DEFAULT_EMA, 50)
    assert CompareSettings.from_query("x", "y", "nan", "0") == CompareSettings()
    assert CompareSettings.from_query("episode", "ema", "1", "-3").ema == DEFAULT_EMA  # 1 would never move
    assert CompareSettings.from_query("episode", "none", "0.95", "99999").window == DEFAULT_WINDOW
    ids, left_out = requested_ids([" a ", "", "b", "a", *[f"e{i}" for i in range(MAX_COMPARED)]])
    assert ids[:2] == ["a", "b"] and len(ids) == MAX_COMPARED and left_out == 2


@pytest.mark.parametrize("smoothing, extra", [("ema", "&ema=0.6"), ("window", "&window=10"), ("none", "")])
def test_share_url_names_only_the_chosen_smoothings_parameter(smoothing: str, extra: str) -> None:
    url = CompareSettings(smoothing=smoothing).url(["a", "b"])
    assert url == f"/compare?e=a&e=b&x=episode&smooth={smoothing}{extra}"


def test_board_game_evaluations_show_wins_draws_and_losses(web_server: Any, uploads: Uploads) -> None:
    with httpx.Client(base_url=web_server.url, timeout=30) as client:
        page = client.get(f"/evaluations/{uploads.board_games}").text
        rows = list(csv.DictReader(io.StringIO(client.get(f"/evaluations/{uploads.board_games}/episodes.csv").text)))
        cartpole = client.get(f"/evaluations/{uploads.cartpole[0]}").text
    rewards = [float(r["reward"]) for r in rows if r["type"] == "t"]
    won, drawn, lost = (sum(r > 0 for r in rewards), sum(r == 0 for r in rewards), sum(r < 0 for r in rewards))
    assert len(rewards) == 20 and won > 0 and lost > 0
    shown = re.search(r'<dd id="outcomes">(\d+) / (\d+) / (\d+) <span class="err">\((\d+)% won\)</span>', page)
    assert shown and tuple(map(int, shown.groups())) == (won, drawn, lost, round(100 * won / 20))
    assert 'id="outcomes"' not in cartpole, "only board games count wins"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), "a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_env_pictures_come_from_a_video_or_are_rendered_once_and_kept(web_server: Any, uploads: Uploads) -> None:
    from palaestra.scoreboard.server.evaluations.pictures import ANIMATION_WIDTH, picture_key

    with httpx.Client(base_url=web_server.url, timeout=180) as client:
        # CartPole-v0 has an uploaded mp4: its first seconds become an animated WebP
        cartpole = client.get("/envs/CartPole-v0/picture")
        # FrozenLake-v1 has only terminal recordings: the server renders a still (rgb_array) once
        frozenlake = client.get("/envs/FrozenLake-v1/picture")
        again = client.get("/envs/FrozenLake-v1/picture")
        missing = client.get("/envs/Nope-v0/picture")
        page = client.get("/envs/CartPole-v0").text
    assert cartpole.status_code == 200 and cartpole.headers["content-type"] == "image/webp"
    assert cartpole.headers["x-picture-source"] in ("video", "stored")
    webp = cartpole.content
    assert webp[:4] == b"RIFF" and webp[8:16] == b"WEBPVP8X" and b"ANIM" in webp[:64], "an animated WebP"
    assert int.from_bytes(webp[24:27], "little") + 1 == ANIMATION_WIDTH  # VP8X canvas width - 1
    assert webp.count(b"ANMF") > 1, "more than one frame"
    assert frozenlake.status_code == 200 and frozenlake.headers["x-picture-source"] in ("render", "stored")
    assert frozenlake.headers["content-type"] == "image/png" and _png_size(frozenlake.content) == (256, 256)
    assert again.headers["x-picture-source"] == "stored" and again.content == frozenlake.content
    stored = list(web_server.data_dir.rglob(picture_key("FrozenLake-v1").rsplit("/", 1)[1]))
    assert len(stored) == 1 and stored[0].read_bytes() == frozenlake.content, "kept in the blob store"
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("image/svg+xml")
    assert b"No picture" in missing.content
    assert '<img src="/envs/CartPole-v0/picture"' in page


def test_evaluations_without_training_episodes_are_listed_but_not_drawn() -> None:
    from datetime import datetime, timezone

    from palaestra.scoreboard import protocol
    from palaestra.scoreboard.server.evaluations.records import EvaluationRecord
    from palaestra.scoreboard.server.web.compare import chart_data

    score = protocol.EvaluationScore(**{name: None for name in protocol.EvaluationScore.model_fields} | {
        "number_episodes": 0, "number_timesteps": 0, "evaluation_episodes": 0, "trials": 100, "reward_threshold": 475.0, "solved": False})
    record = EvaluationRecord(
        id="eval_empty", env_id="CartPole-v1", env_listed=True, env_group="classic_control", algorithm=None,
        benchmark_run_id=None, writeup=None, gym_version=None, training_episode_batch=None,
        training_video=None, owner="alice", score=score, videos=(), created=datetime.now(timezone.utc),
        episode_batch_key=None,
    )
    compared, data = chart_data([record], [None])
    assert [c.has_curve for c in compared] == [False] and data == {"threshold": 475.0, "series": []}
    assert compared[0].label == "unnamed · alice · eval_empty"
