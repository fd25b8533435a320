"""Provenance end to end against a real ``palaestra server``: the client sends what the Monitor
recorded, the server validates it as untrusted input, stores it, answers it on /v1 and shows it on
the evaluation page ("How this was run"); a 2017-style upload shows "not recorded"."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from typing import Any

import gymnasium as gym
import httpx
import pytest

import palaestra
from palaestra.monitoring import files
from palaestra.scoreboard.client import ScoreboardClient
from tests.monitoring.monitoring_helpers import play
from tests.scoreboard.server_helpers import ScoreboardServer, error_of, make_batch, upload

VALID = {"format": 1, "git": {"commit": "a" * 40, "dirty": False}, "seeds": [{"reset": 0, "seed": 1}]}


def _record(directory: Any, config: dict[str, Any] | None = None) -> Any:
    env = palaestra.Monitor(
        gym.make("CartPole-v1", max_episode_steps=30), directory, video_callable=False, config=config
    )
    play(env, 4, seed=42)
    env.close()
    return directory


def _post_evaluation(c: httpx.Client, **fields: Any) -> httpx.Response:
    body = {
        "env": "CartPole-v1",
        "training_episode_batch": upload(c, "episode_batch", json.dumps(make_batch()).encode()),
    }
    return c.post("/v1/evaluations", json={**body, **fields})


def test_the_client_sends_the_provenance_and_v1_and_the_page_show_it(
    scoreboard_server: ScoreboardServer, tmp_path
):
    hostile = "<script>alert(1)</script>"
    directory = _record(tmp_path / "run", config={"lr": 0.001, hostile: hostile})
    with ScoreboardClient(scoreboard_server.url, scoreboard_server.api_key) as client:
        result = client.upload(directory, algorithm_id="prov-alg")
    with scoreboard_server.client() as c:
        ev = c.get(f"/v1/evaluations/{result.id}").json()
        page = c.get(f"/evaluations/{result.id}").text
    provenance = ev["provenance"]
    assert provenance["seeds"] == [{"reset": 0, "seed": 42}] and provenance["resets"] == 5
    assert provenance["config"]["lr"] == 0.001
    assert provenance["env"]["max_episode_steps"] == 30
    assert ev["conditions"] == {
        "env": "CartPole-v1", "version": "v1", "recorded": True, "max_episode_steps": 30,
    }  # fmt: skip
    assert "How this was run" in page and "limit 30 steps" in page
    assert "42 (reset 0)" in page and 'id="reproduce"' in page
    assert hostile not in page and html.escape(hostile) in page  # user text is escaped, never markup


def test_an_upload_without_provenance_shows_not_recorded(scoreboard_server: ScoreboardServer):
    with scoreboard_server.client() as c:
        r = _post_evaluation(c)
        assert r.status_code == 201, r.text
        ev = r.json()
        page = c.get(f"/evaluations/{ev['id']}").text
    assert ev["provenance"] is None and ev["conditions"]["recorded"] is False
    assert 'id="provenance-not-recorded"' in page and "Provenance not recorded" in page


@pytest.mark.parametrize(
    ("provenance", "field"),
    [
        ({**VALID, "git": {"commit": "not-hex", "dirty": False}}, "provenance.git.commit"),
        ({**VALID, "git": {"commit": "a" * 40, "dirty": "maybe"}}, "provenance.git.dirty"),
        ({**VALID, "seeds": [{"reset": -1, "seed": 1}]}, "provenance.seeds.0.reset"),
        ({**VALID, "command": {"argv": ["x" * 5000]}}, "provenance.command.argv.0"),
        ({**VALID, "hostname": "box"}, "provenance.hostname"),
        ({"git": VALID["git"]}, "provenance.format"),
    ],
)
def test_malformed_provenance_is_a_400_naming_the_field(scoreboard_server, provenance, field):
    with scoreboard_server.client() as c:
        body = error_of(_post_evaluation(c, provenance=provenance), 400)
    assert body["type"] == "provenance" and repr(field) in body["detail"], body


def test_provenance_too_deep_or_too_large_is_a_400_saying_so(scoreboard_server: ScoreboardServer):
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(12):
        node["x"] = {}
        node = node["x"]
    with scoreboard_server.client() as c:
        too_deep = error_of(_post_evaluation(c, provenance={**VALID, "config": deep}), 400)
        big = {f"k{i}": ["v" * 190] * 100 for i in range(8)}  # 152 kB as JSON
        too_big = error_of(_post_evaluation(c, provenance={**VALID, "config": big}), 400)
    assert too_deep["type"] == "provenance" and "deeper than 10 levels" in too_deep["detail"]
    assert too_big["type"] == "provenance" and "at most 131072" in too_big["detail"]


def test_upload_dry_run_prints_what_would_be_sent_and_sends_nothing(tmp_path):
    directory = _record(tmp_path / "run", config={"gamma": 0.99})
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "upload", str(directory), "--dry-run", "--server", "http://127.0.0.1:9"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    [evaluation] = shown["evaluations"]
    assert shown["dry_run"] is True and evaluation["env"] == "CartPole-v1" and evaluation["episodes"] == 4
    assert evaluation["provenance"]["config"] == {"gamma": 0.99}
    assert evaluation["provenance"]["seeds"] == [{"reset": 0, "seed": 42}]
    without = subprocess.run(
        [sys.executable, "-m", "palaestra", "upload", str(directory), "--dry-run", "--no-provenance"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert json.loads(without.stdout)["evaluations"][0]["provenance"] is None


@pytest.mark.legacy_gym
def test_gym094_uploads_a_directory_with_a_provenance_file_which_it_does_not_send(
    legacy_gym_python: str, scoreboard_server: ScoreboardServer, tmp_path
):
    directory = _record(tmp_path / "run", config={"lr": 0.5})
    assert files.detect_provenance_files(directory)
    algorithm = f"legacy-prov-{os.getpid()}-{id(tmp_path)}"
    code = f"import sys, gym; gym.upload(sys.argv[1], algorithm_id={algorithm!r})"
    env = {**os.environ, "GYM_NO_LOGGER_SETUP": "1", "OPENAI_GYM_API_BASE": scoreboard_server.url,
           "OPENAI_GYM_API_KEY": scoreboard_server.api_key}  # fmt: skip
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [legacy_gym_python, "-c", code, str(directory)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with scoreboard_server.client() as c:
        listed = c.get("/v1/evaluations", params={"env": "CartPole-v1", "limit": 100}).json()["data"]
        [ev] = [e for e in listed if e["algorithm"] and e["algorithm"]["name"] == algorithm]
        page = c.get(f"/evaluations/{ev['id']}").text
    assert ev["score"]["number_episodes"] == 4
    assert ev["provenance"] is None and "Provenance not recorded" in page  # the 2017 client sends none


@pytest.mark.postgres
def test_provenance_and_conditions_are_stored_and_grouped_on_postgresql(
    scoreboard_factory, postgres_url, tmp_path
):
    server = scoreboard_factory(database_url=postgres_url)
    with ScoreboardClient(server.url, server.api_key) as client:
        first = client.upload(_record(tmp_path / "a"), algorithm_id="pg").id
        second = client.upload(_record(tmp_path / "b"), algorithm_id="pg").id
    with server.client() as c:
        ev = c.get(f"/v1/evaluations/{first}").json()
        ranked = c.get("/envs/CartPole-v1", params={"rank": "entries"}).text
    assert (
        ev["provenance"]["seeds"] == [{"reset": 0, "seed": 42}]
        and ev["conditions"]["max_episode_steps"] == 30
    )
    assert "solved by 0 of 2 seeds" in ranked and second != first  # one entry of two seeds


@pytest.mark.filterwarnings("ignore:.*CartPole-v0 is out of date")
def test_benchmark_dry_run_shows_every_directorys_provenance(tmp_path):
    for name, env_id, steps in (("cartpole", "CartPole-v0", 30), ("pendulum", "Pendulum-v1", 20)):
        env = palaestra.Monitor(
            gym.make(env_id, max_episode_steps=steps), tmp_path / name, video_callable=False
        )
        play(env, 2, seed=5)
        env.close()
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "upload", str(tmp_path), "--benchmark", "ClassicControl2-v1",
         "--algorithm", "dry", "--dry-run"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["benchmark_run"]["benchmark_id"] == "ClassicControl2-v1"
    assert sorted(e["env"] for e in shown["evaluations"]) == ["CartPole-v0", "Pendulum-v1"]
    assert all(e["provenance"]["seeds"] == [{"reset": 0, "seed": 5}] for e in shown["evaluations"])


def test_a_benchmark_that_pools_two_protocols_of_a_task_says_which_fields_differ(
    scoreboard_server: ScoreboardServer,
) -> None:
    """Benchmark aggregates never mix conditions silently: the run and benchmark pages name them."""
    with scoreboard_server.client() as c:
        run = c.post("/v1/benchmark_runs", json={"benchmark_id": "ClassicControl2-v1"}).json()
        for steps in (30, 60):
            env = {"id": "Pendulum-v1", "max_episode_steps": steps}
            r = _post_evaluation(
                c, env="Pendulum-v1", benchmark_run_id=run["id"], provenance={**VALID, "env": env}
            )
            assert r.status_code == 201, r.text
        other = c.post("/v1/benchmark_runs", json={"benchmark_id": "ClassicControl2-v1"}).json()
        pendulum = {"id": "Pendulum-v1"}
        r = _post_evaluation(c, env="Pendulum-v1", benchmark_run_id=other["id"], provenance={**VALID, "env": pendulum})
        assert r.status_code == 201, r.text
        run_page = c.get(f"/benchmark_runs/{run['id']}").text
        one_protocol = c.get(f"/benchmark_runs/{other['id']}").text
        benchmark_page = c.get("/benchmarks/ClassicControl2-v1").text
    for page in (run_page, benchmark_page):
        notice = html.unescape(page.split('id="conditions-notice">', 1)[1].split("</div>", 1)[0])
        assert "Pendulum-v1 (" in notice and "max_episode_steps" in notice, notice
    assert 'id="conditions-notice"' not in one_protocol
