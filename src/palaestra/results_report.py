"""What ``palaestra results`` shows: the summary of a training directory and its learning curve.

::

    from palaestra.results_report import summarize, format_summary, plot_learning_curve

    summary = summarize("runs/cartpole")
    print(format_summary(summary))
    plot_learning_curve(summary, "cartpole.png")      # needs matplotlib: pip install 'palaestra[plot]'

The numbers are :func:`palaestra.solved_stats.solved_stats`'s, with the env's ``trials`` and
``reward_threshold`` from :mod:`palaestra.catalogue`: the same as the scoreboard's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from palaestra.episodes import Episodes, running_mean, trailing_mean
from palaestra.errors import ResultsError
from palaestra.extras import require
from palaestra.solved_stats import SolvedStats, short_mean_label, solved_stats

__all__ = ["ResultsSummary", "format_summary", "learning_curve_figure", "plot_learning_curve", "summarize"]


@dataclass
class ResultsSummary:
    """A training directory, loaded and scored."""

    directory: str
    env_id: str
    results: Any
    #: the directory's episodes (read from ``results``)
    table: Episodes
    stats: SolvedStats
    trials: int
    reward_threshold: float | None
    training_episodes: int
    evaluation_episodes: int
    #: every step: the training and evaluation episodes', and those of episodes reset before their end
    total_steps: int

    @property
    def training_timesteps(self) -> int:
        """The steps of the completed training episodes: the scoreboard's "Training timesteps"."""
        return int(self.stats["number_timesteps"])

    @property
    def episodes(self) -> int:
        return self.training_episodes + self.evaluation_episodes

    @property
    def solved(self) -> bool:
        return self.stats["episode_t_value"] is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (``palaestra results --json``)."""
        return {
            "directory": self.directory,
            "env_id": self.env_id,
            "episodes": self.episodes,
            "training_episodes": self.training_episodes,
            "evaluation_episodes": self.evaluation_episodes,
            "steps": self.total_steps,
            "training_timesteps": self.training_timesteps,
            "videos": len(self.results["videos"]),
            "trials": self.trials,
            "reward_threshold": self.reward_threshold,
            "solved": self.solved,
            **self.stats,
        }


def summarize(directory: str | os.PathLike[str]) -> ResultsSummary:
    """Load ``directory`` (see :func:`palaestra.load_results`) and score it against its env's rule."""
    from palaestra.catalogue import solving_criteria
    from palaestra.monitoring import load_results

    results = load_results(directory)
    env_id = str(results["env_info"].get("env_id"))
    # judged by the registry of the gym that recorded it (2017's for a gym 0.9 directory)
    trials, threshold = solving_criteria(env_id, results["env_info"].get("gym_version"))
    episodes = Episodes.from_results(results, f"The results of {directory}")
    stats = solved_stats(episodes, trials=trials, reward_threshold=threshold)
    n_eval = len(episodes.evaluation())
    return ResultsSummary(
        directory=os.path.abspath(os.fspath(directory)),
        env_id=env_id,
        results=results,
        table=episodes,
        stats=stats,
        trials=trials,
        reward_threshold=threshold,
        training_episodes=len(episodes) - n_eval,
        evaluation_episodes=n_eval,
        total_steps=episodes.total_steps,
    )


def _window(stats: SolvedStats, summary: ResultsSummary) -> str:
    """``episodes a-b`` of the best window (over training episodes)."""
    import numpy as np

    means = running_mean(summary.table.training().rewards, summary.trials)
    if not len(means):
        return ""
    best = int(np.argmax(means))
    return f" (training episodes {best}-{best + summary.trials - 1})"


def format_summary(summary: ResultsSummary) -> str:
    """The text ``palaestra results`` prints."""
    s = summary.stats
    lines = [
        f"Training directory:  {summary.directory}",
        f"Environment:         {summary.env_id}",
        f"Episodes:            {summary.episodes} ({summary.training_episodes} training, "
        f"{summary.evaluation_episodes} evaluation)",
        # labelled as the scoreboard labels it, and the same number; all steps only where they differ
        f"Training timesteps:  {summary.training_timesteps} (of the completed training episodes, as on the scoreboard)",
    ]
    if summary.total_steps != summary.training_timesteps:
        lines.append(
            f"All steps:           {summary.total_steps} (with the evaluation episodes' and those of episodes "
            "reset before they ended)"
        )
    if s["seconds_in_total"] is not None:
        lines.append(f"Wall time:           {s['seconds_in_total']:.1f} s")
    lines.append(f"Videos:              {len(summary.results['videos'])}")
    if summary.reward_threshold is None:
        rule = f"no reward threshold: {summary.env_id} is an unsolved environment"
    else:
        rule = f"average reward >= {summary.reward_threshold:g} over {summary.trials} consecutive episodes"
    lines.append(f"Solving rule:        {rule}")
    if s["mean"] is None:
        lines.append(
            f"Best {summary.trials}-episode mean: - (needs at least {summary.trials} training episodes, "
            f"has {s['number_episodes']})"
        )
        if s["episodes_mean"] is not None:
            label = short_mean_label(s["number_episodes"], summary.trials)
            lines.append(f"Training mean:       {s['episodes_mean']:.2f}, {label}")
    else:
        lines.append(
            f"Best {summary.trials}-episode mean: {s['mean']:.2f} ± {s['error']:.2f}{_window(s, summary)}"
        )
    if s["evaluation_mean"] is not None:
        lines.append(
            f"Evaluation mean:     {s['evaluation_mean']:.2f} (mean of the {s['evaluation_episodes']} evaluation "
            "episodes; they do not count for solving)"
        )
    if s["episode_t_value"] is not None:
        seconds = s["seconds_to_solve"]
        when = f", {seconds:.1f} s" if seconds is not None else ""
        lines.append(
            f"Solved:              yes, after {s['episode_t_value']} episodes ({s['timestep_t_value']} steps{when})"
        )
    elif summary.reward_threshold is not None:
        lines.append("Solved:              no")
    return "\n".join(lines)


def plot_learning_curve(summary: ResultsSummary, path: str | os.PathLike[str]) -> str:
    """Draw the training episodes' rewards, their running mean and the threshold into ``path`` (PNG, SVG, PDF).

    Returns the absolute path written. Needs matplotlib (``pip install 'palaestra[plot]'``).
    """
    out = os.path.abspath(os.fspath(path))
    figure = learning_curve_figure(summary)
    try:
        figure.savefig(out)
    except (OSError, ValueError) as exc:
        raise ResultsError(f"Cannot write the plot {out}: {exc}") from None
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return out


def learning_curve_figure(summary: ResultsSummary) -> Any:
    """The matplotlib figure :func:`plot_learning_curve` saves (close it with ``plt.close``)."""
    require("plot", "Plotting a learning curve")
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    training = summary.table.training()
    rewards = training.rewards
    if not len(rewards):
        raise ResultsError(f"{summary.directory} has no completed training episodes to plot")
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    episodes = training.axis("episode")
    ax.plot(episodes, rewards, color="#9ab", linewidth=0.8, label="episode reward")
    ax.plot(
        episodes,
        trailing_mean(rewards, summary.trials),
        color="#147",
        linewidth=2,
        label=f"mean of the last {summary.trials} episodes",
    )
    if summary.reward_threshold is not None:
        ax.axhline(
            summary.reward_threshold,
            color="#a33",
            linestyle="--",
            linewidth=1,
            label=f"threshold {summary.reward_threshold:g}",
        )
    solved_at = summary.stats["episode_t_value"]
    if solved_at is not None:
        # "Solved after N episodes" counts the episodes before the first window that reached the
        # threshold, so the plot shades that window: it starts at episode N.
        last = solved_at + summary.trials - 1
        ax.axvspan(
            solved_at,
            last,
            color="#393",
            alpha=0.12,
            label=f"solved after {solved_at} episodes: episodes {solved_at}-{last} average ≥ {summary.reward_threshold:g}",
        )
    ax.set_xlabel("training episode")
    ax.set_ylabel("reward")
    ax.set_title(f"{summary.env_id}: {os.path.basename(summary.directory)}")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return fig
