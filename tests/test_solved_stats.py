"""palaestra.solved_stats: "solved" and the learning-curve series, pinned against gym 0.9.4's scorer."""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pytest

from palaestra.solved_stats import (
    compute_graph_stats,
    running_mean,
    score_from_merged,
    solved_stats,
    trailing_mean,
)
from tests.legacy_gym import run_legacy_gym


def synthetic_run(n: int = 300, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    rewards = np.clip(np.linspace(10, 500, n) + rng.normal(0, 40, n), 0, 500).round(1)
    lengths = rewards.astype(int) + 1
    timestamps = 1000.0 + np.cumsum(lengths) * 0.001
    types = ["t" if i % 10 else "e" for i in range(n)]
    return {"episode_lengths": lengths.tolist(), "episode_rewards": rewards.tolist(), "episode_types": types,
            "timestamps": timestamps.tolist(), "initial_reset_timestamp": 999.5}


def test_running_mean_windows():
    assert running_mean([1, 2, 3, 4], 2).tolist() == [1.5, 2.5, 3.5]
    assert running_mean([1, 2], 3).tolist() == []
    assert trailing_mean([2, 4, 6], 2).tolist() == [2.0, 3.0, 5.0]
    with pytest.raises(ValueError, match="window must be positive"):
        running_mean([1], 0)


def test_solved_at_the_first_window_reaching_the_threshold():
    rewards = [0.0] * 50 + [10.0] * 150
    stats = score_from_merged([5] * 200, rewards, None, list(range(1, 201)), 0.0, trials=100, reward_threshold=10.0)
    assert stats["episode_t_value"] == 50
    assert stats["timestep_t_value"] == 250
    assert stats["seconds_to_solve"] == 51.0
    assert stats["mean"] == 10.0 and stats["error"] == 0.0
    assert stats["number_episodes"] == 200 and stats["number_timesteps"] == 1000
    assert stats["seconds_in_total"] == 200.0


def test_too_few_episodes_means_no_mean_and_no_solve():
    stats = score_from_merged([1] * 20, [500.0] * 20, None, list(range(20)), 0.0, trials=100, reward_threshold=1.0)
    assert stats["mean"] is None and stats["episode_t_value"] is None and stats["number_episodes"] == 20


def test_only_training_episodes_count():
    rewards = [100.0] * 100 + [0.0] * 100
    types = ["e"] * 100 + ["t"] * 100
    stats = score_from_merged([1] * 200, rewards, types, list(range(200)), 0.0, trials=100, reward_threshold=50.0)
    assert stats["episode_t_value"] is None and stats["mean"] == 0.0


def test_error_is_the_standard_error_of_the_best_window():
    rewards = [0.0, 1.0] * 100
    stats = score_from_merged([1] * 200, rewards, None, list(range(200)), 0.0, trials=100)
    assert stats["error"] == pytest.approx(np.std(rewards[:100], ddof=1) / 10)
    legacy = score_from_merged([1] * 200, rewards, None, list(range(200)), 0.0, trials=100, legacy=True)
    assert legacy["error"] == pytest.approx(np.std(rewards[:100]) / 9)


@pytest.mark.legacy_gym
def test_legacy_numbers_match_gym094(legacy_gym_python):
    run = synthetic_run()
    code = textwrap.dedent(f"""
        import json
        from gym.scoreboard.scoring import score_from_merged, compute_graph_stats
        run = json.loads({json.dumps(json.dumps(run))})
        s = score_from_merged(run["episode_lengths"], run["episode_rewards"], run["episode_types"],
                              run["timestamps"], run["initial_reset_timestamp"], 100, 300.0)
        g = compute_graph_stats(run["episode_lengths"], run["episode_rewards"], run["timestamps"],
                                run["initial_reset_timestamp"], 20)
        def plain(d):
            return {{k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in d.items()}}
        print(json.dumps({{"score": plain(s), "graph": {{k: (plain(v) if isinstance(v, dict) else v)
                                                       for k, v in g.items()}}}}))
    """)
    old = json.loads(run_legacy_gym(legacy_gym_python, code).strip().splitlines()[-1])
    new = score_from_merged(run["episode_lengths"], run["episode_rewards"], run["episode_types"], run["timestamps"],
                            run["initial_reset_timestamp"], trials=100, reward_threshold=300.0, legacy=True)
    for key, value in old["score"].items():
        if isinstance(value, float):
            assert new[key] == pytest.approx(value), key
        else:
            assert new[key] == value, key
    graph = compute_graph_stats(run["episode_lengths"], run["episode_rewards"], run["timestamps"],
                                run["initial_reset_timestamp"], 20)
    assert graph is not None
    for key, series in old["graph"].items():
        if key == "initial_reset_timestamp":
            assert graph[key] == series
            continue
        assert np.allclose(graph[key]["x"], series["x"]) and np.allclose(graph[key]["y"], series["y"]), key


def test_graph_stats_of_no_episodes_is_none():
    assert compute_graph_stats([], [], [], None, 10) is None


def test_graph_stats_series_are_finite_and_sorted():
    run = synthetic_run(50)
    graph = compute_graph_stats(run["episode_lengths"], run["episode_rewards"], run["timestamps"], None, 100)
    assert graph is not None
    for key in ("x_timestep_y_reward", "x_episode_y_length", "x_seconds_y_reward"):
        xs, ys = graph[key]["x"], graph[key]["y"]
        assert xs == sorted(xs) and len(xs) == len(ys) > 0
        assert all(math.isfinite(v) for v in ys)


def test_the_live_solve_check_of_palaestra_run_agrees_with_scoring():
    """`palaestra run --stop-when-solved` and the demo decide "solved" as the scoreboard will."""
    from palaestra.training import _SolveTracker

    rng = np.random.default_rng(0)
    for _ in range(100):
        rewards = rng.choice([0.1, 0.2, 0.3, 474.9, 475.0, 500.0], size=300).tolist()
        tracker = _SolveTracker("CartPole-v1")
        for reward in rewards:
            tracker.add(reward)
        stats = score_from_merged([1] * 300, rewards, None, list(range(300)), 0.0, trials=100, reward_threshold=475.0)
        assert tracker.solved_at == stats["episode_t_value"]
        assert tracker.best_mean == pytest.approx(stats["mean"])


def test_solved_stats_reads_a_results_mapping_like_score_from_merged():
    run = synthetic_run()
    merged = score_from_merged(run["episode_lengths"], run["episode_rewards"], run["episode_types"],
                               run["timestamps"], run["initial_reset_timestamp"], trials=100, reward_threshold=300.0)
    assert solved_stats(run, trials=100, reward_threshold=300.0) == merged


def test_a_short_run_has_the_mean_of_its_episodes_and_evaluation_episodes_their_own_mean() -> None:
    from palaestra.solved_stats import ranking_mean, short_mean_label

    rewards = [200.0] * 20 + [10.0, 30.0]
    types = ["t"] * 20 + ["e", "e"]
    stats = score_from_merged([10] * 22, rewards, types, list(range(22)), 0.0, trials=100, reward_threshold=195.0)
    assert stats["mean"] is None and stats["episode_t_value"] is None
    assert stats["episodes_mean"] == 200.0 and stats["number_episodes"] == 20
    assert stats["evaluation_episodes"] == 2 and stats["evaluation_mean"] == 20.0
    assert ranking_mean(stats["mean"], stats["episodes_mean"]) == 200.0
    assert short_mean_label(20, 100) == "mean of 20 episodes (fewer than 100)"
    assert short_mean_label(1, 100) == "mean of 1 episode (fewer than 100)"

    long = score_from_merged([10] * 150, [20.0] * 150, None, list(range(150)), 0.0, trials=100)
    assert long["mean"] == 20.0 and long["episodes_mean"] is None, "a full window's mean is the mean"
    assert ranking_mean(long["mean"], long["episodes_mean"]) == 20.0
    assert long["evaluation_episodes"] == 0 and long["evaluation_mean"] is None

    evaluation_only = score_from_merged([10] * 3, [5.0, 6.0, 7.0], ["e"] * 3, [1, 2, 3], 0.0)
    assert evaluation_only["episodes_mean"] is None and evaluation_only["evaluation_mean"] == 6.0
    assert ranking_mean(evaluation_only["mean"], evaluation_only["episodes_mean"]) is None
