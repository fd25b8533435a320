"""Go agents rated by the board, end to end with real processes: a Go artifact uploaded with
``palaestra upload --agent`` to a ``palaestra server`` is played by a ``palaestra worker`` process, in
the sandbox, against the anchors (``random`` and GNU Go level 0, GNU Go spawned inside the sandbox);
the ladder then rates it from games nobody uploaded, marked verified. A model whose output does not
fit the board's actions is refused with one 4xx naming both sizes."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scoreboard.server.agents.agent_helpers import (
    RUN_TIMEOUT_S,
    count_rows,
    get_job,
    start_worker,
    write_go_agent,
)
from tests.scoreboard.server_helpers import ScoreboardServer
from tests.server_process import PALAESTRA_COMMAND

pytest.importorskip("onnxruntime")
pytest.importorskip("pyspiel")

#: no worker in the server's process; two games against each anchor, a short time per move
BOARD = {"PALAESTRA_EMBEDDED_WORKERS": "0", "PALAESTRA_AGENT_MATCH_GAMES": "2", "PALAESTRA_AGENT_MATCH_MOVE_S": "10"}
LADDER = "Go9x9-komi0"


@pytest.mark.usefixtures("sandbox", "gnugo")
def test_a_go_agent_uploaded_is_rated_against_gnu_go_by_the_server_and_its_rating_is_verified(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    server: ScoreboardServer = scoreboard_factory(env=BOARD)
    lines = uploaded_and_played(server, write_go_agent(tmp_path / "agent"), tmp_path / "worker.log")
    job_id = lines[1]
    assert any("done: 4/4 episodes" in line for line in lines), lines
    assert lines[-2] == f"verified ladder matches: {server.url}/ladders/{LADDER}"

    job = get_job(server, job_id)
    assert job["status"] == "done" and job["episodes"] == 4 and len(job["returns"]) == 4
    assert job["ladder"] == LADDER and len(job["ladder_matches"]) == 2 and lines[-1].split() == job["ladder_matches"]
    agent = f"tester-agent-{job['artifact_sha256'][:8]}"

    opponents = set()
    for match_id in job["ladder_matches"]:
        match = httpx.get(f"{server.url}/v1/ladder_matches/{match_id}", timeout=30).json()
        assert match["verified"] is True and match["agent_job_id"] == job_id and match["owner"] == "tester"
        assert agent in match["players"] and len(match["games"]) == 2
        opponents |= set(match["players"]) - {agent}
        # the records the sandbox wrote were replayed by the ladder's check, and count
        assert all(game["rated"] for game in match["games"]), match["games"]
    assert opponents == {"random", "gnugo:0"}

    ratings = httpx.get(f"{server.url}/v1/ladders/{LADDER}/ratings", timeout=30).json()
    rated = {r["player"]: r for r in ratings["ratings"]}
    assert set(rated) == {agent, "random", "gnugo:0"} and rated[agent]["games"] == 4
    assert rated[agent]["verified"] and rated[agent]["anchored"] and not rated[agent]["is_anchor"]
    # rated against GNU Go: the ladder's anchor, held at its value (its games against random vary with the seeds)
    assert ratings["anchor"] == "gnugo:0" and rated["gnugo:0"]["is_anchor"] and rated["gnugo:0"]["rating"] == 1500.0
    assert rated[agent]["rating"] < rated["gnugo:0"]["rating"]  # a random-weight network loses to GNU Go

    page = httpx.get(f"{server.url}/ladders/{LADDER}", timeout=30).text
    assert agent in page and 'class="tag verified"' in page and 'id="verified-note"' in page
    job_page = httpx.get(f"{server.url}/agents/{job_id}", timeout=30).text
    assert f'href="/ladders/{LADDER}"' in job_page and "games played by this board" in job_page
    # the agent's name is its owner's now; the anchors' names stay the server's
    assert count_rows(server, "ladder_players", f"name = '{agent}'") == 1
    assert count_rows(server, "ladder_players", "name IN ('random', 'gnugo:0')") == 0
    assert count_rows(server, "evaluations") == 0  # a board-game agent's result is its matches

    # a match uploaded beside them is self-reported: ?verified=1 leaves its players out (the anchor stays)
    uploaded = httpx.post(f"{server.url}/v1/ladder_matches", json=self_reported_match(tmp_path / "self", "self-a", "self-b"),
                          headers=server.headers(), timeout=120)  # fmt: skip
    assert uploaded.status_code == 201, uploaded.text
    every = {r["player"] for r in httpx.get(f"{server.url}/v1/ladders/{LADDER}/ratings", timeout=30).json()["ratings"]}
    only = httpx.get(f"{server.url}/v1/ladders/{LADDER}/ratings", params={"verified": 1}, timeout=30).json()["ratings"]
    assert every == {agent, "random", "gnugo:0", "self-a", "self-b"}
    assert {r["player"] for r in only} == {agent, "random", "gnugo:0"} and all(r["verified"] for r in only)
    page = httpx.get(f"{server.url}/ladders/{LADDER}", params={"verified": 1}, timeout=30).text
    assert agent in page and "self-a" not in page.split('<table class="head-to-head">')[0]
    assert "<strong>only those verified by this board</strong>" in page
    assert f'href="/ladders/{LADDER}?verified=1"' in httpx.get(f"{server.url}/ladders/{LADDER}", timeout=30).text


@pytest.mark.usefixtures("sandbox")
def test_a_hex_agent_uploaded_is_rated_against_random_and_mcts_by_the_server(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    from palaestra.agents.artifact import AgentDescriptor
    from palaestra.agents.artifact.examples import go_model, write_agent

    server: ScoreboardServer = scoreboard_factory(env={**BOARD, "PALAESTRA_AGENT_MATCH_GAMES": "1"})
    descriptor = AgentDescriptor(env_id="Hex9x9-v0", action="argmax", deterministic=True)
    model, _ = write_agent(go_model(board_size=9, actions=9 * 9 + 1), descriptor, tmp_path / "hex.onnx")  # swap
    job = get_job(server, uploaded_and_played(server, Path(model), tmp_path / "worker.log")[1])
    assert job["status"] == "done" and job["ladder"].startswith("Hex9x9") and len(job["ladder_matches"]) == 2
    agent = f"tester-agent-{job['artifact_sha256'][:8]}"
    for match_id in job["ladder_matches"]:
        match = httpx.get(f"{server.url}/v1/ladder_matches/{match_id}", timeout=30).json()
        assert match["verified"] is True and match["ladder"] == job["ladder"] and agent in match["players"]
        # a Hex game ends by a connection: each was replayed by the ladder's check and counts
        assert [game["rated"] for game in match["games"]] == [True], match["games"]
    ratings = httpx.get(f"{server.url}/v1/ladders/{job['ladder']}/ratings", timeout=30).json()
    rated = {r["player"]: r for r in ratings["ratings"]}
    assert set(rated) == {agent, "random", "mcts:100"} and rated[agent]["verified"] and rated[agent]["games"] == 2


def uploaded_and_played(server: ScoreboardServer, model: Path, worker_log: Path) -> list[str]:
    """``palaestra upload --agent MODEL --wait`` with a ``palaestra worker`` running: its output's lines."""
    worker = start_worker(server, worker_log)
    try:
        result = subprocess.run(
            [*PALAESTRA_COMMAND, "upload", "--server", server.url, "--agent", str(model), "--wait"],
            env={**server.env, "PALAESTRA_API_KEY": server.api_key}, capture_output=True, text=True,
            timeout=RUN_TIMEOUT_S + 60,
        )  # fmt: skip
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr + worker_log.read_text()
    return result.stdout.strip().splitlines()


def self_reported_match(folder: Path, black: str, white: str) -> dict[str, Any]:
    """An upload body: a 9x9 match at komi 0 (the agent's ladder) of two random players so named."""
    import json

    from palaestra.ladder.match import play_match, read_match, rules_of_env
    from palaestra.ladder.players import parse_player

    play_match(rules_of_env("Go9x9-v0", komi=0.0), parse_player(f"{black}=random"), parse_player(f"{white}=random"), 2,
               folder, seed=3)  # fmt: skip
    document = read_match(folder)
    return {"match": json.loads(json.dumps(document)), "games": {g["file"]: (folder / g["file"]).read_text()
                                                               for g in document["games"]}}


def test_a_go_model_whose_output_does_not_fit_the_boards_actions_is_refused_naming_both_sizes(
    scoreboard_factory: Any, tmp_path: Path
) -> None:
    server: ScoreboardServer = scoreboard_factory(env=BOARD)
    model = write_go_agent(tmp_path / "agent", actions=81)  # the points only: no pass, no resign
    files = {
        "model": ("go.onnx", model.read_bytes()),
        "descriptor": ("go.json", model.with_suffix(".json").read_bytes()),
    }
    refused = httpx.post(
        f"{server.url}/v1/agents", files=files, headers={"Authorization": f"Bearer {server.api_key}"}, timeout=60
    )
    assert refused.status_code == 400, refused.text
    detail = refused.json()["detail"]
    assert "[batch, 81]" in detail and "Go9x9-v0': 83" in detail, detail
    assert count_rows(server, "agent_jobs") == 0
