"""A ladder game page in headless Chromium: the SVG viewer steps through the game to its final position."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from palaestra.ladder.replay import replay
from tests.web.web_helpers import PageRecord, screenshot

pytestmark = pytest.mark.browser


def _stones(pg: Any) -> dict[str, int]:
    return {
        "black": pg.locator("#stones circle.black").count(),
        "white": pg.locator("#stones circle.white").count(),
    }


def test_the_viewer_steps_through_the_game_to_its_final_position(
    page: tuple[Any, PageRecord], web_server: Any, ladder_game: tuple[Any, Any]
) -> None:
    pg, record = page
    game, game_record = ladder_game
    final = replay(game_record).planes
    moves = len(game_record.moves)
    pg.goto(game.web_url)
    counter = pg.locator("#move-counter")
    # it opens on the final position, with the board's coordinates (A-J without I, 9 at the top)
    assert counter.get_attribute("data-move") == str(moves)
    assert _stones(pg) == {"black": int(final[0].sum()), "white": int(final[1].sum())}
    labels = pg.locator("#coordinates text.coord").all_text_contents()
    assert labels[:4] == ["A", "A", "9", "9"] and labels[-4:] == ["J", "J", "1", "1"]
    assert "I" not in labels and len(labels) == 4 * 9
    pg.click("[data-step=first]")
    assert counter.inner_text() == f"move 0 / {moves}"
    assert _stones(pg) == {"black": 0, "white": 0}
    pg.click("[data-step=next]")
    assert counter.inner_text() == f"move 1 / {moves} (black {game_record.moves[0]})"
    assert _stones(pg)["black"] == (0 if game_record.moves[0] == "pass" else 1)
    pg.locator("#board-viewer").focus()
    for _ in range(moves + 3):  # the keyboard, past the end: it stops at the last move
        pg.keyboard.press("ArrowRight")
    assert counter.get_attribute("data-move") == str(moves)
    assert _stones(pg) == {"black": int(final[0].sum()), "white": int(final[1].sum())}
    pg.keyboard.press("Home")
    assert counter.get_attribute("data-move") == "0"
    pg.click("[data-step=last]")
    assert _stones(pg) == {"black": int(final[0].sum()), "white": int(final[1].sum())}
    screenshot(pg, "ladder-game")
    assert record.errors == [] and not [m for m in record.console if m.startswith("error")]
    download = httpx.get(pg.locator("a.download").get_attribute("href"), timeout=30)
    assert download.status_code == 200 and download.text.startswith("(;FF[4]GM[1]")


def test_the_ladder_and_player_pages_show_ratings_and_head_to_head(
    page: tuple[Any, PageRecord], web_server: Any, ladder_game: tuple[Any, Any]
) -> None:
    pg, _ = page
    game, _ = ladder_game
    pg.goto(f"{web_server.url}/ladders")
    pg.click(f"text={game.ladder}")
    players = pg.locator("table.ladder-ratings tbody tr td:nth-child(2) a").all_inner_texts()
    assert sorted(players) == ["mcts:5", "rnd"]
    assert pg.locator("table.head-to-head tbody tr").count() == 2
    pg.click("table.ladder-ratings >> text=rnd")
    assert pg.locator("h1").inner_text() == "rnd"
    assert "1 games" in pg.locator("p.lead").inner_text()


def test_a_go9x9_evaluation_links_to_its_algorithms_ladder_entry(
    web_server: Any, ladder_game: tuple[Any, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    import gymnasium as gym
    import numpy as np

    import palaestra
    from palaestra.scoreboard.client import upload

    def record(first_seed: int) -> Any:
        folder = tmp_path_factory.mktemp("go9-eval")
        env = palaestra.Monitor(gym.make("Go9x9-v0", opponent="random"), folder, force=True)
        rng = np.random.default_rng(first_seed)
        for episode in range(2):
            _, info = env.reset(seed=first_seed + episode)
            done = False
            while not done:
                action = int(rng.choice(np.flatnonzero(info["action_mask"][:-1])))
                _, _, terminated, truncated, info = env.step(action)
                done = terminated or truncated
        env.close()
        return folder

    rated = upload(record(0), server=web_server.url, api_key=web_server.api_key, algorithm_id="mcts:5")
    # another run: the same episodes with another algorithm would be a repeat, refused (docs/upload.md)
    unrated = upload(record(10), server=web_server.url, api_key=web_server.api_key, algorithm_id="not-on-a-ladder")
    page = httpx.get(f"{web_server.url}/evaluations/{rated}", timeout=30).text
    assert f'<a href="/ladders/{ladder_game[0].ladder}/players/mcts%3A5">{ladder_game[0].ladder}</a>' in page
    assert "ladder-links" not in httpx.get(f"{web_server.url}/evaluations/{unrated}", timeout=30).text
