"""Real training directories for the web-page tests, recorded with palaestra's Monitor.

- CartPole runs with a chosen number of random episodes before a balancing policy takes over
  (so the number of episodes before solve is known), with an mp4 video of episode 0;
- a FrozenLake-v1 run with ansi (asciicast v1 JSON) videos;
- Hex games against the random opponent, with random legal moves (some won, some lost).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from palaestra.monitoring import Monitor


def make(env_id: str, **kwargs: Any) -> gymnasium.Env[Any, Any]:
    """``gymnasium.make`` without the "CartPole-v0 is out of date" warning (v0's 200-step episodes
    keep these recordings short)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return gymnasium.make(env_id, **kwargs)


def balance(obs: np.ndarray) -> int:
    """A CartPole policy that keeps the pole up for the whole 500 steps."""
    _, _, angle, angular_velocity = obs
    return int(angle + 0.5 * angular_velocity > 0)


def record_cartpole(directory: Path, env_id: str, random_episodes: int, total_episodes: int, seed: int = 0,
                    video: bool = True) -> Path:
    """``random_episodes`` random episodes, then the balancing policy; video of episode 0."""
    env = make(env_id, render_mode="rgb_array" if video else None)
    schedule = (lambda episode_id: episode_id == 0) if video else False
    monitor = Monitor(env, str(directory), video_callable=schedule, force=True)
    rng = np.random.default_rng(seed)
    try:
        for episode in range(total_episodes):
            obs, _ = monitor.reset(seed=seed + episode)
            done = False
            while not done:
                action = int(rng.integers(2)) if episode < random_episodes else balance(obs)
                obs, _, terminated, truncated, _ = monitor.step(action)
                done = terminated or truncated
    finally:
        monitor.close()
    return directory


def record_frozenlake(directory: Path, episodes: int = 12, seed: int = 0) -> Path:
    """Random FrozenLake-v1 episodes with an ansi video of episodes 0 and 1."""
    env = make("FrozenLake-v1", render_mode="ansi")
    monitor = Monitor(env, str(directory), video_callable=lambda episode_id: episode_id < 2, force=True)
    rng = np.random.default_rng(seed)
    try:
        for episode in range(episodes):
            monitor.reset(seed=seed + episode)
            done = False
            while not done:
                _, _, terminated, truncated, _ = monitor.step(int(rng.integers(4)))
                done = terminated or truncated
    finally:
        monitor.close()
    return directory


def record_steps(env_id: str, directory: Path, steps: int, policy: str = "random", seed: int = 0,
                 **env_kwargs: Any) -> Path:
    """Whole episodes of ``env_id`` (made with ``env_kwargs``) until at least ``steps`` steps were taken
    (no video)."""
    env = make(env_id, **env_kwargs)
    monitor = Monitor(env, str(directory), video_callable=False, force=True)
    env.action_space.seed(seed)
    taken = 0
    try:
        episode = 0
        while taken < steps:
            obs, _ = monitor.reset(seed=seed + episode)
            done = False
            while not done:
                action = balance(obs) if policy == "balance" else env.action_space.sample()
                obs, _, terminated, truncated, _ = monitor.step(action)
                taken += 1
                done = terminated or truncated
            episode += 1
    finally:
        monitor.close()
    return directory


def record_classic_control2_run(directory: Path, cartpole_policy: str, seed: int = 0) -> Path:
    """A ClassicControl2-v1 benchmark run laid out as the runner does: ``{env_id}-{trial}`` folders."""
    record_steps("CartPole-v0", directory / "CartPole-v0-0", 2200, policy=cartpole_policy, seed=seed)
    record_steps("Pendulum-v1", directory / "Pendulum-v1-0", 1000, seed=seed)
    return directory


def record_board_games(directory: Path, env_id: str = "Hex9x9-v0", episodes: int = 20, seed: int = 0) -> Path:
    """``episodes`` games of ``env_id`` with random legal moves (the env's ``action_mask``)."""
    import palaestra.envs  # noqa: F401  (registers the board games)

    env = make(env_id)
    monitor = Monitor(env, str(directory), video_callable=False, force=True)
    rng = np.random.default_rng(seed)
    try:
        for episode in range(episodes):
            _, info = monitor.reset(seed=seed + episode)
            done = False
            while not done:
                action = int(rng.choice(np.flatnonzero(info["action_mask"])))
                _, _, terminated, truncated, info = monitor.step(action)
                done = terminated or truncated
    finally:
        monitor.close()
    return directory
