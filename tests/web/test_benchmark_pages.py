"""The benchmark pages' statistics over HTTP (no browser): the data behind the charts, intervals only
where they exist, the probability of improvement, and names as the CLI prints them."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from typing import Any

import httpx

from palaestra.benchmarks import registry
from tests.web.web_helpers import Uploads

BENCHMARK = "ClassicControl2-v1"


def _chart(page: str) -> Any:
    match = re.search(r'<script type="application/json" id="benchmark-data">(.*?)</script>', page, re.S)
    assert match, "no chart data on the benchmark page"
    return json.loads(html.unescape(match[1]))


def _row(page: str, table_class: str, label_start: str) -> str:
    table = re.search(rf'<table class="{table_class}">(.*?)</table>', page, re.S)
    assert table, f"no table.{table_class}"
    rows = [r for r in re.findall(r"<tr>(.*?)</tr>", table[1], re.S) if label_start in r]
    assert len(rows) == 1, f"one row of {label_start!r} in table.{table_class}"
    return rows[0]


def test_one_score_per_task_shows_no_interval_and_two_show_one(web_server: Any, uploads: Uploads) -> None:
    with httpx.Client(base_url=web_server.url, timeout=60) as client:
        page = client.get(f"/benchmarks/{BENCHMARK}").text
    data = _chart(page)
    assert data["tasks"] == ["CartPole-v0", "Pendulum-v1"]
    assert [m[0] for m in data["metrics"]] == ["iqm", "mean", "median", "optimality_gap"]
    by_label = {a["label"]: a for a in data["algorithms"]}
    balance, random = by_label["balance-agent (2 runs)"], by_label["random-agent (1 run)"]

    # the random agent's single run: every value is a point without bounds, and the page says so
    for value, low, high in [*random["per_task"], *random["metrics"].values()]:
        assert low is None and high is None and 0 <= value <= 1
    assert not random["profile"]["has_interval"]
    row = _row(page, "aggregates", "random-agent")
    assert row.count("n = 1, no interval") == 4 and not re.search(r"\[\d", row)
    assert _row(page, "task-scores", "random-agent").count("n = 1, no interval") == 2

    # the balance agent's two runs: intervals that contain their estimates
    for value, low, high in [*balance["per_task"], *balance["metrics"].values()]:
        assert low <= value <= high
    assert balance["profile"]["has_interval"]
    profile = balance["profile"]
    assert all(lo <= f <= hi for lo, f, hi in zip(profile["low"], profile["fraction"], profile["high"], strict=True))
    assert "no interval" not in _row(page, "aggregates", "balance-agent")
    assert re.search(r"\d\.\d{3} <span class=\"err\">\[\d\.\d{3}, \d\.\d{3}\]</span>", _row(page, "aggregates", "balance"))
    assert balance["metrics"]["optimality_gap"][0] == 1 - balance["metrics"]["mean"][0] or (
        balance["metrics"]["optimality_gap"][0] >= 1 - balance["metrics"]["mean"][0] - 1e-9
    )


def test_probability_of_improvement_between_two_chosen_runs(web_server: Any, uploads: Uploads) -> None:
    balance, random = uploads.benchmark_runs[0], uploads.benchmark_runs[1]
    with httpx.Client(base_url=web_server.url, timeout=60) as client:
        page = client.get(f"/benchmarks/{BENCHMARK}", params={"x": balance, "y": random}).text
        reverse = client.get(f"/benchmarks/{BENCHMARK}", params={"x": random, "y": balance}).text
        unknown = client.get(f"/benchmarks/{BENCHMARK}", params={"x": balance, "y": "brun_nope"})
        same = client.get(f"/benchmarks/{BENCHMARK}", params={"x": balance, "y": balance}).text

    result = re.search(r'id="improvement-result">P\(([\w]+) &gt; ([\w]+)\) = ([\d.]+) (.*?)</p>', page)
    assert result and result[1] == balance and result[2] == random
    forward = float(result[3])
    assert "n = 1, no interval" in result[4], "one trial per task on each side: no interval"
    back = re.search(r'id="improvement-result">P\(\w+ &gt; \w+\) = ([\d.]+)', reverse)
    assert back and abs(float(back[1]) - (1 - forward)) < 1e-3, "P(Y > X) = 1 - P(X > Y)"
    assert re.search(rf'<option value="{balance}" selected>', page)
    assert page.count("<tr><td>CartPole-v0</td>") == 1 and page.count("<tr><td>Pendulum-v1</td>") == 1

    assert unknown.status_code == 200
    assert f"No run &#39;brun_nope&#39; of {BENCHMARK}: choose two of the runs listed." in unknown.text
    assert "Choose two different runs" in same


def test_benchmarks_are_named_as_the_cli_names_them(web_server: Any, uploads: Uploads) -> None:
    cli = subprocess.run([sys.executable, "-m", "palaestra", "benchmark", "list"], capture_output=True,
                         text=True, check=True).stdout
    cli_ids = re.findall(r"^  (\S+)\s", cli, re.M)
    assert BENCHMARK in cli_ids
    with httpx.Client(base_url=web_server.url, timeout=60) as client:
        index = client.get("/benchmarks").text
        page = client.get(f"/benchmarks/{BENCHMARK}").text
        run = client.get(f"/benchmark_runs/{uploads.benchmark_runs[0]}").text
    shown = re.findall(r'<td><a href="/benchmarks/[^"]+">([^<]+)</a>', index)
    # the registry of a fresh process, as the server's (other tests register benchmarks in this one)
    registered = subprocess.run(
        [sys.executable, "-c", "from palaestra.benchmarks.registry import registry\n"
         "print(' '.join(b.id for b in registry.all()))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    assert sorted(shown) == sorted(registered) and set(cli_ids) <= set(shown)
    assert f"<h1>{BENCHMARK}</h1>" in page
    display_names = {b.name for b in registry.all() if b.name and b.name != b.id}
    assert "ClassicControl2-current" in display_names
    for text in (index, page, run):
        shown_names = [n for n in display_names if re.search(rf"{re.escape(n)}(?![\w-])", text)]
        assert shown_names == [], "ids, not the registry's display names"
        assert "committed" not in text.lower(), "no internal status words"
    assert "n = 1, no interval" in run  # one trial per task in this run
