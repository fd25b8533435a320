"""The vector Monitor on ale-py's AtariVectorEnv (real ROMs, real ffmpeg): env ids for vector envs
without a spec, and videos made from the observations of a vector env that cannot render."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import palaestra
from palaestra.errors import MonitorError
from palaestra.monitoring.vector import observation_frame_index
from tests.monitoring.monitoring_helpers import decoded_frames

ale_py = pytest.importorskip("ale_py", reason="ale-py (the atari extra) is not installed")
from ale_py.vector_env import AtariVectorEnv  # noqa: E402

gym.register_envs(ale_py)


def play(envs, steps, seed=0):
    """Reset, then ``steps`` random vector steps; the observations seen, reset's first."""
    obs, _ = envs.reset(seed=seed)
    seen = [obs.copy()]
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, *_ = envs.step(rng.integers(0, envs.single_action_space.n, envs.num_envs))
        seen.append(obs.copy())
    return seen


def test_an_atari_vector_env_made_directly_is_refused_with_a_hint_and_both_ways_it_names_work(tmp_path):
    direct = AtariVectorEnv("pong", 2)
    with pytest.raises(MonitorError) as refused:
        palaestra.Monitor(direct, tmp_path / "refused")
    direct.close()
    hint = str(refused.value)
    assert "AtariVectorEnv has no spec" in hint and "keeps neither its game nor its settings" in hint
    assert not (tmp_path / "refused").exists()  # refused before anything is written
    # the two ways the hint names, as it spells them
    assert "gymnasium.make_vec('ALE/Pong-v5', num_envs=N, vectorization_mode='vector_entry_point')" in hint
    assert "palaestra.Monitor(envs, directory, env_id='ALE/Pong-v5')" in hint
    made = gym.make_vec("ALE/Pong-v5", num_envs=2, vectorization_mode="vector_entry_point")
    assert isinstance(made.unwrapped, AtariVectorEnv)
    for name, envs in [("made", palaestra.Monitor(made, tmp_path / "made", video_callable=False)),
                       ("named", palaestra.Monitor(AtariVectorEnv("pong", 2), tmp_path / "named",
                                                   env_id="ALE/Pong-v5", video_callable=False))]:
        play(envs, 20)
        assert envs.get_total_steps() == 40
        envs.close()
        assert palaestra.load_results(tmp_path / name)["env_info"]["env_id"] == "ALE/Pong-v5"


@pytest.mark.parametrize("grayscale", [True, False], ids=["grey", "rgb"])
def test_an_atari_vector_env_records_sub_environment_0s_observation_frames_as_its_video(tmp_path, grayscale):
    envs = palaestra.Monitor(
        AtariVectorEnv("breakout", 3, grayscale=grayscale), tmp_path, env_id="ALE/Breakout-v5",
        video_callable=lambda episode_id: episode_id == 0,
    )
    seen = play(envs, 30)
    envs.close()
    (video, meta), = palaestra.load_results(tmp_path)["videos"]  # the running episode's, closed at close
    metadata = json.loads(Path(meta).read_text())
    assert metadata["frame_source"] == "observations" and metadata["env_index"] == 0
    assert metadata["episode_id"] == 0 and metadata["content_type"] == "video/mp4"
    cmdline = metadata["encoder_version"]["cmdline"]  # small frames: one x264 thread, whatever the CPUs
    assert cmdline[cmdline.index("-threads") + 1] == "1"
    channels = 1 if grayscale else 3
    frames = decoded_frames(video, 84, 84, channels)
    # the newest frame of sub-environment 0's stack, at the reset and after each step
    newest = np.stack([obs[0, -1] for obs in seen]).reshape(len(seen), 84, 84, channels)
    assert len(frames) == len(newest) == 31
    error = np.abs(frames.astype(int) - newest.astype(int)).mean(axis=(1, 2, 3))
    assert error.max() < 6  # H.264 at CRF 23, 4:2:0: close to the frames, far from other ones
    assert np.abs(frames[-1].astype(int) - newest[0].astype(int)).mean() > error.max()


@pytest.mark.parametrize(
    ("shape", "index"),
    [
        ((84, 84), ()),
        ((84, 84, 1), ()),
        ((210, 160, 3), ()),
        ((4, 84, 84), (-1,)),  # ale-py's AtariVectorEnv, Gymnasium's FrameStackObservation
        ((4, 84, 84, 3), (-1,)),
        ((84, 84, 4), (Ellipsis, -1)),  # SB3's VecFrameStack, channels last
        ((8, 8), None),  # a board, not a picture
        ((4,), None),
        ((2, 3, 84, 84, 3), None),
    ],
)
def test_image_observations_are_told_apart_and_stacks_give_their_newest_frame(shape, index):
    assert observation_frame_index(spaces.Box(0, 255, shape, np.uint8)) == index


def test_float_observations_are_not_frames():
    assert observation_frame_index(spaces.Box(0, 1, (84, 84), np.float32)) is None
    assert observation_frame_index(spaces.Discrete(4)) is None
