"""palaestra.results_report: the summary and the learning-curve plot of `palaestra results`."""

from __future__ import annotations

import matplotlib.pyplot as plt

from palaestra.episodes import Episodes
from palaestra.results_report import ResultsSummary, learning_curve_figure
from palaestra.solved_stats import solved_stats


def _summary(rewards: list[float]) -> ResultsSummary:
    lengths = [int(r) or 1 for r in rewards]
    episodes = Episodes.from_columns(lengths, rewards, [float(i) for i in range(len(rewards))], initial_reset_timestamp=0.0)
    stats = solved_stats(episodes, trials=100, reward_threshold=475.0)
    return ResultsSummary(
        directory="runs/solved",
        env_id="CartPole-v1",
        results={"episode_rewards": rewards, "episode_types": None, "videos": []},
        table=episodes,
        stats=stats,
        trials=100,
        reward_threshold=475.0,
        training_episodes=len(rewards),
        evaluation_episodes=0,
        total_steps=sum(lengths),
    )


def test_the_plot_marks_the_window_that_solved_it_where_solved_after_counts_from() -> None:
    summary = _summary([10.0] * 150 + [475.0] * 110)
    assert summary.stats["episode_t_value"] == 150
    figure = learning_curve_figure(summary)
    try:
        (ax,) = figure.axes
        (span,) = [p for p in ax.patches if p.get_label().startswith("solved")]
        # "solved after 150 episodes": the 150 episodes before the first window of 100 that reached
        # the threshold; the shaded window is episodes 150-249, not a line at episode 249
        assert (span.get_x(), span.get_x() + span.get_width()) == (150, 249)
        assert span.get_label() == "solved after 150 episodes: episodes 150-249 average ≥ 475"
        assert [line.get_label() for line in ax.get_legend().get_lines()][-1].startswith("threshold 475")
        assert not [line for line in ax.lines if line.get_label().startswith("solved")]
    finally:
        plt.close(figure)


def test_an_unsolved_run_has_no_solved_mark() -> None:
    figure = learning_curve_figure(_summary([10.0] * 120))
    try:
        assert not [p for p in figure.axes[0].patches if p.get_label().startswith("solved")]
    finally:
        plt.close(figure)


def test_training_timesteps_leave_out_the_evaluation_episodes_as_the_scoreboard_does(tmp_path) -> None:
    """Issue 27: ``palaestra results`` counted evaluation episodes in its steps, the scoreboard not."""
    import gymnasium as gym

    import palaestra
    from palaestra.results_report import format_summary, summarize
    from tests.monitoring.monitoring_helpers import play

    env = palaestra.Monitor(gym.make("CartPole-v1"), tmp_path, video_callable=False)
    training = play(env, 3, seed=0)
    env.set_monitor_mode("evaluation")
    evaluation = play(env, 2, seed=1)
    env.close()
    summary = summarize(tmp_path)
    assert summary.training_timesteps == sum(training)
    assert summary.stats["number_timesteps"] == sum(training)  # what the scoreboard shows
    assert summary.total_steps >= sum(training) + sum(evaluation)
    report = summary.to_dict()
    assert (report["training_timesteps"], report["training_episodes"], report["evaluation_episodes"]) == (
        sum(training), 3, 2,
    )  # fmt: skip
    assert f"Training timesteps:  {sum(training)} (of the completed training episodes" in format_summary(summary)
