"""Rendering (text, images, a pygame window) and recording games with palaestra's Monitor."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import palaestra.envs  # noqa: F401
from palaestra.envs.board import rendering
from palaestra.envs.board.go import GoEnv
from palaestra.envs.board.hex import HexEnv


def test_go_text_board_has_coordinates() -> None:
    env = GoEnv(opponent="random", render_mode="ansi")
    env.reset(seed=0)
    env.step(env.string_to_action("D4"))
    text = env.render()
    lines = text.splitlines()
    assert lines[0].startswith("To play: black (move 2, last: white ")
    assert lines[1].split() == list("ABCDEFGHJ") and lines[11].split() == list("ABCDEFGHJ")
    assert lines[2].split()[0] == "9" and lines[10].split()[0] == "1"
    assert lines[7].split()[4] == "X"  # D4: row 4 is the 6th board line, column D the 4th point
    env.step(env.resign_action)
    assert env.render().startswith("Game over: white wins (resignation)")


def test_hex_text_board() -> None:
    env = HexEnv(board_size=5, opponent="random", render_mode="ansi")
    env.reset(seed=0)
    env.step(6)  # (1, 1)
    lines = env.render().splitlines()
    assert lines[1].split() == list("abcde") and lines[-2].split() == list("abcde")
    assert lines[3].startswith("   2 ") and lines[3].split()[2] == "B"  # rows shift right, one a row
    assert lines[4].startswith("    3 ")
    assert "black joins top and bottom" in lines[-1]


@pytest.mark.parametrize("size", [9, 13, 19])
def test_go_image_shows_the_stones(size: int) -> None:
    env = GoEnv(opponent="random", board_size=size, render_mode="rgb_array")
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)  # A-top corner
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert frame.shape[0] % 16 == 0 and frame.shape[1] % 16 == 0
    layout = rendering._go_layout(size)
    pixels = frame.reshape(-1, 3)
    assert (pixels[layout.disc_pixels[layout.disc_cells == 0]] == rendering.BLACK_STONE).all()
    white = env.game.from_engine[env.state.history()[-1]]
    if white < size * size:
        stone = layout.disc_pixels[layout.disc_cells == white]
        marked = set(layout.mark_pixels[layout.mark_cells == white].tolist())
        colours = {tuple(pixels[p]) for p in stone if p not in marked}
        assert colours == {rendering.WHITE_STONE}
    empty = int(np.flatnonzero(info["action_mask"][: size * size])[-1])
    assert (pixels[layout.disc_pixels[layout.disc_cells == empty]] != rendering.BLACK_STONE).any()


def test_hex_image() -> None:
    env = gymnasium.make("Hex9x9-v0", render_mode="rgb_array")
    env.reset(seed=0)
    env.step(40)
    frame = env.render()
    layout = rendering._hex_layout(9)
    assert frame.shape == layout.background.shape
    stone = layout.disc_pixels[layout.disc_cells == 40]
    marks = layout.mark_pixels[layout.mark_cells == 40]
    assert (frame.reshape(-1, 3)[np.setdiff1d(stone, marks)] == rendering.BLACK_STONE).all()


def test_human_window_with_the_dummy_video_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    env = GoEnv(opponent="random", board_size=5, render_mode="human")
    env.metadata = {**env.metadata, "render_fps": 100}
    env.reset(seed=0)
    env.step(12)
    assert env._viewer is not None and env._viewer._screen is not None
    env.close()
    assert env._viewer is None


def play_random_game(env: gymnasium.Env, seed: int) -> float:
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    total, done = 0.0, False
    while not done:
        resign = env.unwrapped.game.resign_action
        action = int(rng.choice(np.flatnonzero(info["action_mask"][:resign])))
        _, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        done = terminated or truncated
    return total


@pytest.mark.parametrize(
    ("env_id", "mode", "suffix"), [("Go9x9-v0", "rgb_array", ".mp4"), ("Hex9x9-v0", "ansi", ".json")]
)
def test_monitor_records_a_game(tmp_path: Path, env_id: str, mode: str, suffix: str) -> None:
    pytest.importorskip("palaestra.monitoring.video", reason="the Monitor's video recorder is not there yet")
    from palaestra.monitoring import Monitor, load_results

    env = Monitor(
        gymnasium.make(env_id, opponent="random", board_size=5, render_mode=mode),
        tmp_path,
        video_callable=lambda _: True,
    )
    reward = play_random_game(env, seed=0)
    env.close()
    videos = [
        p for p in sorted(tmp_path.glob(f"openaigym.video.*{suffix}")) if not p.name.endswith(".meta.json")
    ]
    assert len(videos) == 1 and videos[0].stat().st_size > 0
    if suffix == ".json":
        recording = json.loads(videos[0].read_text())
        assert len(recording["stdout"]) >= 2 and "To play" in recording["stdout"][0][1]
    results = load_results(str(tmp_path))
    assert results["episode_rewards"] == [reward]
