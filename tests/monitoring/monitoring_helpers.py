"""Small helpers for the monitoring tests."""

from __future__ import annotations

import subprocess
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from palaestra.monitoring.video import ffmpeg_binary


def play(env: gym.Env[Any, Any], episodes: int, seed: int = 0) -> list[int]:
    """Play ``episodes`` full episodes with random actions; returns their lengths."""
    lengths = []
    env.action_space.seed(seed)
    env.reset(seed=seed)
    for _ in range(episodes):
        steps, done = 0, False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            done = terminated or truncated
        lengths.append(steps)
        env.reset()
    return lengths


class CountingEnv(gym.Env[np.ndarray, int]):
    """Episodes of exactly ``length`` steps, reward 1 per step; terminates (or truncates) at the end.

    With ``render_mode="ansi"`` each frame is ``"t=<steps so far>\n"``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, length: int = 3, truncate: bool = False, render_mode: str | None = None) -> None:
        self.length = length
        self.truncate = truncate
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, np.inf, (1,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = 0
        self.closed = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.t += 1
        end = self.t >= self.length
        return np.full(1, self.t, np.float32), 1.0, end and not self.truncate, end and self.truncate, {}

    def render(self) -> str | None:
        return f"t={self.t}\n" if self.render_mode == "ansi" else None

    def close(self) -> None:
        self.closed = True


def register_counting_env() -> str:
    env_id = "palaestra-test/Counting-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=CountingEnv, disable_env_checker=True)
    return env_id


def decoded_frames(path: str, height: int, width: int, channels: int) -> np.ndarray:
    """Every frame of an mp4, decoded by ffmpeg to grey or RGB bytes."""
    pix_fmt = "gray" if channels == 1 else "rgb24"
    done = subprocess.run(
        [ffmpeg_binary(), "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"],
        capture_output=True,
        check=True,
    )
    return np.frombuffer(done.stdout, np.uint8).reshape(-1, height, width, channels)


class StableBaselinesStyleVecEnv:
    """The surface of Stable-Baselines3's ``VecEnv`` (its ``DummyVecEnv``: sub-environments stepped in
    turn, reset as each one's episode ends), which is not a ``gymnasium.Env``. SB3 needs PyTorch, too
    heavy for the dev tools, so the Monitor's refusal and its hint are tested on this stand-in."""

    def __init__(self, env_fns: list[Any]) -> None:
        self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        self.observation_space = self.envs[0].observation_space
        self.action_space = self.envs[0].action_space
        self._actions: list[Any] = []

    def reset(self) -> list[Any]:
        return [env.reset()[0] for env in self.envs]

    def step_async(self, actions: list[Any]) -> None:
        self._actions = list(actions)

    def step_wait(self) -> tuple[list[Any], list[float], list[bool], list[dict[str, Any]]]:
        observations, rewards, dones, infos = [], [], [], []
        for env, action in zip(self.envs, self._actions):
            obs, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                obs, _ = env.reset()
            observations.append(obs)
            rewards.append(float(reward))
            dones.append(terminated or truncated)
            infos.append(info)
        return observations, rewards, dones, infos

    def step(self, actions: list[Any]) -> tuple[list[Any], list[float], list[bool], list[dict[str, Any]]]:
        self.step_async(actions)
        return self.step_wait()

    def close(self) -> None:
        for env in self.envs:
            env.close()
