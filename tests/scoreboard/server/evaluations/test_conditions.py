"""Conditions on the board, against a real ``palaestra server``: two ``ALE/Pong-v5`` runs, one with
sticky actions off, are never averaged or drawn together without saying so; seed groups rank entries."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import gymnasium as gym
import pytest

import palaestra
from palaestra.scoreboard.client import ScoreboardClient
from palaestra.scoreboard.server.evaluations.conditions import derive_conditions, differences
from tests.monitoring.monitoring_helpers import play
from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload

ale_py = pytest.importorskip("ale_py", reason="the atari extra (ale-py) is not installed")
gym.register_envs(ale_py)


def _pong_run(directory: Any, seed: int, **kwargs: Any) -> Any:
    env = palaestra.Monitor(
        gym.make("ALE/Pong-v5", max_episode_steps=25, **kwargs), directory, video_callable=False
    )
    play(env, 3, seed=seed)
    env.close()
    return directory


@pytest.fixture(scope="module")
def pong_uploads(
    scoreboard_server: ScoreboardServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("pong")
    algorithm = f"pong-{uuid.uuid4().hex[:8]}"
    ids: dict[str, list[str]] = {"sticky": [], "no-sticky": []}
    with ScoreboardClient(scoreboard_server.url, scoreboard_server.api_key) as client:
        for seed in (1, 2):
            ids["sticky"].append(client.upload(_pong_run(root / f"sticky{seed}", seed), algorithm).id)
        ids["no-sticky"].append(
            client.upload(_pong_run(root / "plain", 3, repeat_action_probability=0.0), algorithm).id
        )
    return {"ids": ids, "algorithm": algorithm}


def test_the_two_pong_runs_get_cards_that_differ_in_sticky_actions_alone(scoreboard_server, pong_uploads):
    with scoreboard_server.client() as c:
        sticky = c.get(f"/v1/evaluations/{pong_uploads['ids']['sticky'][0]}").json()["conditions"]
        plain = c.get(f"/v1/evaluations/{pong_uploads['ids']['no-sticky'][0]}").json()["conditions"]
    assert sticky["atari"] == {
        "family": "v5", "repeat_action_probability": 0.25, "frameskip": 4, "full_action_space": False,
        "max_num_frames_per_episode": 108000, "obs_type": "rgb",
    }  # fmt: skip
    assert plain["atari"]["repeat_action_probability"] == 0.0
    assert [d.field for d in differences([sticky, plain])] == ["repeat_action_probability"]


def test_the_compare_page_names_the_difference_and_draws_only_one_set(scoreboard_server, pong_uploads):
    sticky, plain = pong_uploads["ids"]["sticky"][0], pong_uploads["ids"]["no-sticky"][0]
    with scoreboard_server.client() as c:
        page = c.get("/compare", params=[("e", sticky), ("e", plain)]).text
        mixed = c.get("/compare", params=[("e", sticky), ("e", plain), ("mix", "conditions")]).text
    notice = re.search(r'id="conditions-notice">(.*?)</div>', page, re.S)
    assert notice and "the sticky-action probability (repeat_action_probability: 0.25 vs 0.0)" in notice.group(1)
    assert f"<code>{plain}</code>" in notice.group(1) and 'id="mix-conditions"' in page
    series = json.loads(re.search(r'id="compare-data">(.*?)</script>', page, re.S).group(1))["series"]
    assert [s["id"] for s in series] == [sticky]  # not drawn together
    mixed_series = json.loads(re.search(r'id="compare-data">(.*?)</script>', mixed, re.S).group(1))["series"]
    assert [s["id"] for s in mixed_series] == [sticky, plain]
    assert "sticky 0.0" in mixed_series[1]["label"]  # mixed on purpose: each line says its conditions


def test_entries_keep_the_two_conditions_apart_and_label_the_leaderboard(scoreboard_server, pong_uploads):
    with scoreboard_server.client() as c:
        board = c.get("/envs/ALE/Pong-v5").text
        ranked = c.get("/envs/ALE/Pong-v5", params={"rank": "entries"}).text
    assert "the sticky-action probability (repeat_action_probability: 0.25 vs 0.0)" in board and 'class="conditions"' in board
    rows = re.findall(r'<tr class="entry">(.*?)</tr>', ranked, re.S)
    mine = [r for r in rows if pong_uploads["algorithm"] in r]
    assert len(mine) == 2  # one entry per set of conditions, never one averaged over both
    seeds = sorted(re.search(r"solved by (\d+) of (\d+) seed", r).group(2) for r in mine)
    assert seeds == ["1", "2"] and all("fewer than 5 seeds" in r for r in mine)


def test_the_algorithm_curve_pools_only_runs_under_one_set_of_conditions(scoreboard_server, pong_uploads):
    with scoreboard_server.client() as c:
        alg = c.get("/v1/evaluations/" + pong_uploads["ids"]["sticky"][0]).json()["algorithm"]["id"]
        page = c.get(f"/algorithms/{alg}", params={"env": "ALE/Pong-v5"}).text
        pooled = c.get(f"/algorithms/{alg}", params={"env": "ALE/Pong-v5", "conditions": "all"}).text
    assert 'id="across-conditions"' in page and "repeat_action_probability" in page
    assert "Pool them all anyway" in page and "All runs are pooled" in pooled


def test_unrecorded_conditions_differ_from_recorded_ones():
    recorded = derive_conditions(
        "CartPole-v1", {"env": {"id": "CartPole-v1", "kwargs": {}, "max_episode_steps": 500}}
    )
    assert [d.field for d in differences([recorded, derive_conditions("CartPole-v1", None)])] == [
        "recorded", "max_episode_steps",
    ]  # fmt: skip


def test_seed_groups_rank_by_share_solved_then_median_episodes(scoreboard_server: ScoreboardServer):
    env, algorithm = "CartPole-v1", f"seeds-{uuid.uuid4().hex[:8]}"
    with scoreboard_server.client() as c:
        for reward in (500.0, 500.0, 10.0):  # two seeds solve, one does not
            body = {"env": env, "algorithm": {"id": algorithm}}
            body["training_episode_batch"] = upload(
                c, "episode_batch", json.dumps(make_batch(120, reward)).encode()
            )
            assert c.post("/v1/evaluations", json=body).status_code == 201
        ranked = c.get(f"/envs/{env}", params={"rank": "entries", "conditions": "none"}).text
    [row] = [r for r in re.findall(r'<tr class="entry">(.*?)</tr>', ranked, re.S) if algorithm in r]
    assert "solved by 2 of 3 seeds" in row and "not recorded" in row


def test_an_entrys_statistics_are_the_statistics_modules_over_its_seeds(in_process_server):
    from palaestra.benchmarks import statistics
    from palaestra.scoreboard.server.web import entries

    rewards = [500.0, 500.0, 500.0, 30.0, 20.0, 10.0]  # three seeds solve, three do not
    with in_process_server.client() as c:
        for reward in rewards:
            body = {"env": "CartPole-v1", "algorithm": {"id": "stats"}}
            body["training_episode_batch"] = upload(
                c, "episode_batch", json.dumps(make_batch(120, reward)).encode()
            )
            assert c.post("/v1/evaluations", json=body).status_code == 201
        listed = c.get("/v1/evaluations", params={"env": "CartPole-v1", "limit": 100}).json()["data"]
    scores = [e["score"]["mean"] for e in listed]
    solved_at = [e["score"]["episode_t_value"] for e in listed if e["score"]["solved"]]
    with in_process_server.state.db.read() as session:
        [entry] = entries.rank_entries(session, "CartPole-v1")
    assert (entry.solved, entry.seeds, entry.few_seeds) == (3, 6, False)
    assert entry.score.value == pytest.approx(statistics.aggregate_iqm({"seeds": scores}))
    assert entry.score.low <= entry.score.value <= entry.score.high
    # three of six never solve: the median is the mean of the largest solving count and "never"
    assert len(solved_at) == 3 and entry.median_never and entry.episodes_to_solve.low == min(solved_at)


def test_entries_are_paged_like_single_runs(in_process_server):
    with in_process_server.client() as c:
        for i in range(27):  # one entry per algorithm: two pages of 25
            body = {"env": "CartPole-v1", "algorithm": {"id": f"paged-{i:02d}"}}
            body["training_episode_batch"] = upload(
                c, "episode_batch", json.dumps(make_batch(120, 10.0 + i)).encode()
            )
            assert c.post("/v1/evaluations", json=body).status_code == 201
        first = c.get("/envs/CartPole-v1", params={"rank": "entries"}).text
        second = c.get("/envs/CartPole-v1", params={"rank": "entries", "page": "2"}).text
        beyond = c.get("/envs/CartPole-v1", params={"rank": "entries", "page": "9"}).text

    def numbers(page: str) -> list[int]:
        rows = re.findall(r'<tr class="entry">\s*<td class="num">(\d+)</td>', page)
        return [int(n) for n in rows]

    assert numbers(first) == list(range(1, 26)) and numbers(second) == [26, 27]
    assert "page 1 of 2 (27 in all)" in first and 'href="/envs/CartPole-v1?rank=entries&amp;page=2"' in first
    assert numbers(beyond) == [26, 27], "a page past the last shows the last"
    names = re.findall(r"paged-\d\d", first + second)
    assert len(set(names)) == 27, "every entry on exactly one page"
