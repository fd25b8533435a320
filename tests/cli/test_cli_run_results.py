"""`palaestra run` with the built-in and user agents, and `palaestra results` on what it recorded."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import palaestra as pal
from tests.cli.cli_helpers import palaestra


def _run(tmp_path: Path, *args: str) -> str:
    result = palaestra("run", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_run_random_records_episodes_and_videos(tmp_path: Path) -> None:
    out = _run(
        tmp_path, "CartPole-v1", "--agent", "random", "--episodes", "10", "--seed", "1", "--monitor", "runs/r"
    )
    assert "Recorded 10 episodes" in out
    results = pal.load_results(tmp_path / "runs/r")
    assert len(results["episode_rewards"]) == 10
    assert results["env_info"]["env_id"] == "CartPole-v1"
    assert set(results["episode_types"] or ["t"]) == {"t"}
    # the capped cubic schedule: episodes 0, 1 and 8
    assert sorted(Path(v).name[-15:] for v, _ in results["videos"]) == [
        "video000000.mp4",
        "video000001.mp4",
        "video000008.mp4",
    ]


def test_run_steps_budget_and_no_video(tmp_path: Path) -> None:
    out = _run(tmp_path, "CartPole-v1", "--agent", "random", "--steps", "150", "--no-video", "--monitor", "s")
    assert "150 steps" in out
    results = pal.load_results(tmp_path / "s")
    assert results["videos"] == []
    assert sum(results["episode_lengths"]) <= 150


def test_run_evaluation_mode_records_evaluation_episodes(tmp_path: Path) -> None:
    _run(
        tmp_path,
        "CartPole-v1",
        "--agent",
        "random",
        "--episodes",
        "4",
        "--no-video",
        "--mode",
        "evaluation",
        "--monitor",
        "e",
    )
    assert pal.load_results(tmp_path / "e")["episode_types"] == ["e"] * 4
    data = json.loads(palaestra("results", "e", "--json", cwd=tmp_path).stdout)
    assert data["evaluation_episodes"] == 4 and data["training_episodes"] == 0


def test_run_seed_makes_runs_reproducible(tmp_path: Path) -> None:
    for name in ("a", "b"):
        _run(
            tmp_path,
            "CartPole-v1",
            "--agent",
            "cem",
            "--episodes",
            "60",
            "--seed",
            "5",
            "--no-video",
            "--monitor",
            name,
        )
    a, b = (pal.load_results(tmp_path / n) for n in ("a", "b"))
    assert a["episode_lengths"] == b["episode_lengths"]
    _run(
        tmp_path,
        "CartPole-v1",
        "--agent",
        "cem",
        "--episodes",
        "60",
        "--seed",
        "6",
        "--no-video",
        "--monitor",
        "c",
    )
    assert pal.load_results(tmp_path / "c")["episode_lengths"] != a["episode_lengths"]


def test_run_a_user_agent_from_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(
        "class Agent:\n"
        "    def __init__(self, seed):\n"
        "        self.seed, self.episodes = seed, 0\n"
        "    def act(self, observation):\n"
        "        return int(observation[2] + 0.5 * observation[3] > 0)\n"
        "    def end_episode(self):\n"
        "        self.episodes += 1\n"
        "        print('episode', self.episodes, 'seed', self.seed)\n"
        "def make(observation_space, action_space, seed=None):\n"
        "    return Agent(seed)\n"
    )
    out = _run(
        tmp_path,
        "CartPole-v1",
        "--agent",
        "my_agent:make",
        "--episodes",
        "3",
        "--seed",
        "9",
        "--no-video",
        "--monitor",
        "u",
    )
    assert "episode 3 seed 9" in out
    assert min(pal.load_results(tmp_path / "u")["episode_rewards"]) > 100  # the controller balances


def test_run_an_agent_that_does_not_fit_the_env_fails(tmp_path: Path) -> None:
    result = palaestra(
        "run",
        "Blackjack-v1",
        "--agent",
        "cem",
        "--episodes",
        "1",
        "--no-video",
        "--monitor",
        "bj",
        cwd=tmp_path,
    )
    # Blackjack's observation is a Tuple of Discrete spaces: cem flattens it, so this one works
    assert result.returncode == 0, result.stderr
    (tmp_path / "broken.py").write_text("def make(o, a):\n    return object()\n")
    bad = palaestra(
        "run", "CartPole-v1", "--agent", "broken:make", "--episodes", "1", "--monitor", "b", cwd=tmp_path
    )
    assert bad.returncode == 1 and "act(observation)" in bad.stderr


@pytest.mark.slow
def test_cem_solves_cartpole_and_results_report_it(tmp_path: Path) -> None:
    """The built-in CEM agent solves CartPole-v1 (mean >= 475 over 100 consecutive training episodes)."""
    out = _run(
        tmp_path,
        "CartPole-v1",
        "--agent",
        "cem",
        "--episodes",
        "1500",
        "--stop-when-solved",
        "--seed",
        "3",
        "--no-video",
        "--monitor",
        "cem",
    )
    assert "Solved after" in out
    result = palaestra("results", "cem", "--plot", "cem.png", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Solved:              yes, after" in result.stdout
    assert "CartPole-v1" in result.stdout and "± " in result.stdout
    png = (tmp_path / "cem.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000

    data = json.loads(palaestra("results", "cem", "--json", cwd=tmp_path).stdout)
    assert data["solved"] is True and data["mean"] >= 475.0
    assert data["trials"] == 100 and data["reward_threshold"] == 475.0
    rewards = pal.load_results(tmp_path / "cem")["episode_rewards"]
    i = data["episode_t_value"]
    assert sum(rewards[i : i + 100]) / 100 >= 475.0


def test_results_summary_of_a_short_run(tmp_path: Path) -> None:
    _run(tmp_path, "CartPole-v1", "--agent", "random", "--episodes", "5", "--no-video", "--monitor", "short")
    result = palaestra("results", "short", cwd=tmp_path)
    assert result.returncode == 0
    assert "Episodes:            5 (5 training, 0 evaluation)" in result.stdout
    assert "needs at least 100 training episodes" in result.stdout
    assert "Solved:              no" in result.stdout
    data = json.loads(palaestra("results", "short", "--json", cwd=tmp_path).stdout)
    rewards = pal.load_results(tmp_path / "short")["episode_rewards"]
    assert data["mean"] is None and data["episodes_mean"] == pytest.approx(sum(rewards) / 5)
    assert f"Training mean:       {data['episodes_mean']:.2f}, mean of 5 episodes (fewer than 100)" in result.stdout
    assert data["evaluation_mean"] is None and "Evaluation mean" not in result.stdout


def test_results_of_an_evaluation_only_run_show_the_evaluation_mean(tmp_path: Path) -> None:
    _run(tmp_path, "CartPole-v1", "--agent", "random", "--episodes", "4", "--no-video", "--mode", "evaluation",
         "--monitor", "eval")
    result = palaestra("results", "eval", cwd=tmp_path)
    assert "Episodes:            4 (0 training, 4 evaluation)" in result.stdout
    data = json.loads(palaestra("results", "eval", "--json", cwd=tmp_path).stdout)
    rewards = pal.load_results(tmp_path / "eval")["episode_rewards"]
    assert data["evaluation_episodes"] == 4 and data["evaluation_mean"] == pytest.approx(sum(rewards) / 4)
    assert data["episodes_mean"] is None and data["mean"] is None
    assert f"Evaluation mean:     {data['evaluation_mean']:.2f} (mean of the 4 evaluation episodes" in result.stdout


def test_run_progress_bar_on_request(tmp_path: Path) -> None:
    result = palaestra(
        "run",
        "CartPole-v1",
        "--agent",
        "random",
        "--episodes",
        "2000",
        "--no-video",
        "--progress",
        "--monitor",
        "p",
        cwd=tmp_path,
    )
    assert result.returncode == 0
    assert "/2000" in result.stderr and "CartPole-v1" in result.stderr
    # the running reward that decides "solved", refreshed as the bar is (2000 episodes take seconds)
    assert re.search(r"reward [\d.]+, mean of last 100 [\d.]+ \(solved at 475\)", result.stderr), result.stderr[-500:]
    quiet = palaestra(
        "run",
        "CartPole-v1",
        "--agent",
        "random",
        "--episodes",
        "40",
        "--no-video",
        "--monitor",
        "q",
        cwd=tmp_path,
    )
    assert "/40" not in quiet.stderr  # not a terminal: no bar by default


def test_run_with_num_envs_records_one_run_from_every_sub_environment(tmp_path: Path) -> None:
    out = _run(
        tmp_path, "Hex9x9-v0", "--agent", "random", "--episodes", "40", "--num-envs", "8", "--seed", "0",
        "--monitor", "v",
    )
    recorded = int(out.split("Recorded ")[1].split()[0])
    results = pal.load_results(tmp_path / "v")
    assert 40 <= recorded == len(results["episode_lengths"]) < 48  # the last step may end a few more
    assert len(results["manifests"]) == 1 and len(set(results["env_index"])) == 8
    assert results["env_info"]["env_id"] == "Hex9x9-v0"
    # the videos are sub-environment 0's, on the capped cubic schedule of its games
    names = [Path(v).name for v, _ in results["videos"]]
    assert names and all("-0.video" in name for name in names)
    assert [json.loads(Path(m).read_text())["episode_id"] for _, m in results["videos"]] == [0, 1][: len(names)]
    report = palaestra("results", "v", cwd=tmp_path)
    assert report.returncode == 0 and f"Episodes:            {recorded}" in report.stdout


def test_run_with_num_envs_in_async_processes_counts_the_steps_of_all(tmp_path: Path) -> None:
    out = _run(
        tmp_path, "CartPole-v1", "--agent", "random", "--steps", "400", "--num-envs", "4", "--vectorization",
        "async", "--no-video", "--monitor", "a",
    )
    steps = int(out.split("(")[1].split()[0])
    assert 400 <= steps < 404  # the budget is checked after each vector step of 4 sub-environments
    results = pal.load_results(tmp_path / "a")
    assert 0 < sum(results["episode_lengths"]) <= 400 and len(results["manifests"]) == 1
    assert set(results["env_index"]) == {0, 1, 2, 3}


def test_each_sub_environment_has_its_own_agent_that_sees_one_stream_of_episodes(tmp_path: Path) -> None:
    from palaestra.training import run_agent

    agents = []

    class Counter:
        def __init__(self, observation_space, action_space, seed=None):
            self.action_space, self.seed, self.steps, self.episodes = action_space, seed, 0, []
            agents.append(self)

        def act(self, observation):
            return self.action_space.sample()

        def observe(self, observation, reward, terminated, truncated):
            self.steps += 1

        def end_episode(self):
            self.episodes.append(self.steps - sum(self.episodes))

    summary = run_agent("CartPole-v1", Counter, tmp_path / "c", episodes=30, num_envs=3, seed=7, video=False)
    assert [a.seed for a in agents] == [7, 8, 9]
    assert len({id(a.action_space) for a in agents}) == 3
    results = pal.load_results(tmp_path / "c")
    by_source: dict[int, list[int]] = {}
    for source, length in zip(results["env_index"], results["episode_lengths"]):
        by_source.setdefault(source, []).append(length)
    assert sorted(by_source.values()) == sorted(a.episodes for a in agents)
    assert summary.episodes == len(results["episode_lengths"]) >= 30
