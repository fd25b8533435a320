"""The original gym 0.9.4 client, unchanged, uploads to `palaestra server` (spec §4, §10).

Training data is recorded by gym 0.9.4's own Monitor in the legacy venv: FrozenLake-v0 with its
ansi (JSON) videos, and a ClassicControl2-v0 benchmark run (CartPole-v0 + Pendulum-v0).
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import httpx
import pytest

from tests.scoreboard.server_helpers import ScoreboardServer

pytestmark = pytest.mark.legacy_gym

RECORD = textwrap.dedent(
    """
    import sys, gym
    from gym import wrappers
    def record(env_id, directory, episodes=None, steps=None, videos=False):
        env = wrappers.Monitor(gym.make(env_id), directory, force=True,
                               video_callable=(lambda e: e < 3) if videos else False)
        env.seed(0); env.action_space.seed(0) if hasattr(env.action_space, "seed") else None
        taken = done_eps = 0
        while (episodes is None or done_eps < episodes) and (steps is None or taken < steps):
            env.reset(); done = False
            while not done:
                _, _, done, _ = env.step(env.action_space.sample()); taken += 1
            done_eps += 1
        env.close()
    root = sys.argv[1]
    record("FrozenLake-v0", root + "/frozenlake", episodes=8, videos=True)
    record("CartPole-v0", root + "/bench/CartPole-v0-0", steps=2000)
    record("Pendulum-v0", root + "/bench/Pendulum-v0-0", steps=1000)
    """
)

UPLOAD = textwrap.dedent(
    """
    import sys, gym
    for _ in range(2):  # the second time a repeat: the server answers the first evaluation (200)
        gym.upload(sys.argv[1] + "/frozenlake", algorithm_id="legacy-random", writeup="https://gist.github.com/u/1")
    run_id = gym.upload(sys.argv[1] + "/bench", benchmark_id="ClassicControl2-v0", algorithm_id="legacy-random")
    print("BENCHMARK_RUN", run_id)
    """
)


def run_legacy(python: str, code: str, args: list[str], env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, "GYM_NO_LOGGER_SETUP": "1", **(env or {})}
    full_env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [python, "-c", code, *args], capture_output=True, text=True, env=full_env, timeout=300
    )
    assert done.returncode == 0, f"gym 0.9.4 failed ({done.returncode}):\n{done.stderr[-4000:]}"
    return done.stdout


def test_gym_094_upload_and_benchmark_run(
    legacy_gym_python: str, scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    run_legacy(legacy_gym_python, RECORD, [str(tmp_path)])
    out = run_legacy(
        legacy_gym_python,
        UPLOAD,
        [str(tmp_path)],
        env={"OPENAI_GYM_API_BASE": scoreboard_server.url, "OPENAI_GYM_API_KEY": scoreboard_server.api_key},
    )
    run_id = out.split("BENCHMARK_RUN", 1)[1].strip()
    with httpx.Client(base_url=scoreboard_server.url) as c:
        evals = c.get("/v1/evaluations", params={"env": "FrozenLake-v0", "owner": "tester"}).json()["data"]
        [ev] = [e for e in evals if e["writeup"] == "https://gist.github.com/u/1"]  # one row for two uploads
        assert ev["gym_version"] == "0.9.4" and ev["algorithm"]["name"] == "legacy-random"
        assert ev["score"]["number_episodes"] == 8 and ev["score"]["reward_threshold"] == 0.78
        assert [v["content_type"] for v in ev["videos"]] == ["video/vnd.openai.ansivid"] * 3
        run = c.get(f"/v1/benchmark_runs/{run_id}").json()
        assert run["benchmark_id"] == "ClassicControl2-v0" and len(run["evaluations"]) == 2
        assert run["algorithm"]["name"] == "legacy-random"
        envs = sorted(c.get(f"/v1/evaluations/{e}").json()["env"] for e in run["evaluations"])
        assert envs == ["CartPole-v0", "Pendulum-v0"]
        try:
            import palaestra.benchmarks  # noqa: F401
        except ImportError:
            return
        assert run["score"] is not None and 0.0 <= run["score"]["score"] <= 1.0


def test_gym_094_client_sees_errors_it_understands(
    legacy_gym_python: str, scoreboard_server: ScoreboardServer
) -> None:
    code = textwrap.dedent(
        """
        import gym
        from gym import error
        from gym.scoreboard.client import api_requestor, resource
        try:  # (Evaluation.retrieve itself is broken on Python 3 in gym 0.9.4: util.utf8 uses `unicode`)
            api_requestor.APIRequestor().request("get", "/v1/evaluations/eval_missing")
        except error.InvalidRequestError as e:
            print("404", e.http_status, "request_id" if str(e).startswith("Request req_") else str(e))
        gym.scoreboard.api_key = "pal_wrong"
        try:
            resource.FileUpload.create(purpose="episode_batch", api_key="pal_wrong")
        except error.AuthenticationError as e:
            print("401", e.http_status)
        """
    )
    out = run_legacy(
        legacy_gym_python,
        code,
        [],
        env={"OPENAI_GYM_API_BASE": scoreboard_server.url, "OPENAI_GYM_API_KEY": scoreboard_server.api_key},
    )
    assert "404 404 request_id" in out and "401 401" in out
