"""The benchmark page's sentences: how a benchmark's scorer scores, and which score table it uses."""

from __future__ import annotations

from palaestra.benchmarks import Benchmark
from palaestra.benchmarks.runs import normalisation_of

__all__ = ["normalisation_text", "scorer_text"]


def scorer_text(spec: Benchmark) -> str:
    """How the benchmark's scorer scores a task and a run, in a sentence for its page."""
    name = type(spec.scorer).__name__
    per_run = "the run's score is the mean over tasks and trials."
    texts = {
        "ClipTo01ThenAverage": "Each task scores the mean of clip((reward − floor) / (ceiling − floor), 0, 1)"
        " over the last 100 evaluation episodes before the step budget ran out; " + per_run,
        "TotalReward": "Each task scores clip((mean episode reward − floor) / (ceiling − floor), 0, 1) "
        "over the episodes before the step budget ran out; " + per_run,
        "RewardPerTime": "Each task scores clip((reward per second − floor) / (ceiling − floor), 0, 1); "
        + per_run,
        "HumanNormalised": "Each task scores its human-normalised mean, (mean reward − random) / (human − "
        "random), over the last 100 evaluation episodes before the step budget ran out: 0 is random play, "
        "1 a human, and scores above 1 count in full; " + per_run,
    }
    return texts.get(name, f"Scored by {name}.")


def normalisation_text(spec: Benchmark) -> str | None:
    """The score table of a human-normalised benchmark, named with its source; else ``None``."""
    table = normalisation_of(spec)
    return f"{table.label}: {table.title}. {table.citation}" if table is not None else None
