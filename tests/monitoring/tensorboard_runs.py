"""TensorBoard event files as CleanRL and Stable-Baselines3 write them (with tensorboardX's
``SummaryWriter``, the API of ``torch.utils.tensorboard`` that both log through), for the tests of
``palaestra import tensorboard`` and of the results table."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import tensorboardX


def cleanrl_run(run_dir: Path, episodes: int = 30, num_envs: int = 4, seed: int = 1) -> list[tuple[float, int, int]]:
    """Play CartPole in a vector env with random actions and log every finished episode as CleanRL's
    ``ppo.py`` does (``charts/episodic_return`` and ``charts/episodic_length`` at the global step);
    returns the (return, length, global step) logged, in order."""
    writer = tensorboardX.SummaryWriter(str(run_dir))
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n|env_id|CartPole-v1|")
    envs = gym.wrappers.vector.RecordEpisodeStatistics(
        gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="sync")
    )
    envs.action_space.seed(seed)
    envs.reset(seed=seed)
    logged: list[tuple[float, int, int]] = []
    global_step = 0
    while len(logged) < episodes:
        _, _, _, _, infos = envs.step(envs.action_space.sample())
        global_step += num_envs
        writer.add_scalar("losses/value_loss", 0.5, global_step)  # a tag the import ignores
        if "episode" in infos:
            for i in np.flatnonzero(infos["_episode"]):
                r, length = infos["episode"]["r"][i], infos["episode"]["l"][i]
                writer.add_scalar("charts/episodic_return", r, global_step)
                writer.add_scalar("charts/episodic_length", length, global_step)
                logged.append((float(r), int(length), global_step))
    envs.close()
    writer.close()
    return logged


def sb3_run(run_dir: Path, points: list[tuple[int, float, float]], filename_suffix: str = "") -> None:
    """What SB3's ``TensorBoardOutputFormat`` writes at each log step: (num_timesteps, ep_rew_mean,
    ep_len_mean), among its other scalars."""
    writer = tensorboardX.SummaryWriter(str(run_dir), filename_suffix=filename_suffix)
    for step, reward, length in points:
        writer.add_scalar("rollout/ep_rew_mean", reward, step)
        writer.add_scalar("rollout/ep_len_mean", length, step)
        writer.add_scalar("time/fps", 1234, step)
        writer.add_scalar("train/entropy_loss", -0.6, step)
    writer.close()
