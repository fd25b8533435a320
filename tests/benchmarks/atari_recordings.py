"""Short real Atari runs under the Monitor, laid out as a benchmark run (``{out}/{env_id}-{trial}``).

Each trial is a real ale-py env (``gymnasium.make(env_id, max_episode_steps=...)``, so its spec and
the manifest keep the benchmark's env id) played by a seeded random policy: training episodes, then
evaluation episodes (``set_monitor_mode("evaluation")``), which the human-normalised scorer scores.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import gymnasium

import palaestra
from palaestra import catalogue
from palaestra.benchmarks.runs import trial_directory

STEPS_PER_EPISODE = 100


def record_atari_trial(
    directory: Path, env_id: str, seed: int, training: int = 2, evaluation: int = 2
) -> Path:
    """``training`` then ``evaluation`` episodes of at most :data:`STEPS_PER_EPISODE` steps."""
    catalogue.register_ale_py()  # the ALE/ ids (Gymnasium 1.x loads no plugins by itself)
    env = palaestra.Monitor(
        gymnasium.make(env_id, max_episode_steps=STEPS_PER_EPISODE), directory, video_callable=False
    )
    env.reset(seed=seed)
    env.action_space.seed(seed)
    for episode in range(training + evaluation):
        while not any(env.step(env.action_space.sample())[2:4]):
            pass
        if episode + 1 == training:
            env.set_monitor_mode("evaluation")  # from the next reset on
        if episode + 1 < training + evaluation:
            env.reset()
    env.close()
    return directory


def record_atari_run(out: Path, env_ids: Iterable[str], trials: int, seed: int = 0) -> Path:
    """``trials`` trials of every env id, as ``palaestra benchmark run`` lays them out."""
    for i, env_id in enumerate(env_ids):
        for trial in range(trials):
            record_atari_trial(
                Path(trial_directory(str(out), env_id, trial)), env_id, seed=seed + 100 * i + trial
            )
    return out
