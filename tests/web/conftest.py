"""Fixtures of the web-page tests: a real ``palaestra server`` filled by real uploads, and Chromium.

The server is started with the scoreboard tests' ``ScoreboardServer`` (tests/scoreboard/server_helpers.py)
and filled once per session by ``palaestra.upload`` of training directories recorded with the
Monitor (tests/web/web_recordings.py):

- three CartPole-v0 evaluations that solve after different numbers of episodes (one never does),
  the first with an mp4 video, the second under a hostile algorithm name;
- a FrozenLake-v1 evaluation with ansi (asciicast v1) videos;
- a Hex9x9-v0 evaluation of 20 games (won and lost);
- three ClassicControl2-v1 benchmark runs: two of a balancing agent, one of a random agent.

Browser tests drive Debian's /usr/bin/chromium through Playwright (never ``playwright install``)
and save screenshots under test-artifacts/web/.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scoreboard.server_helpers import ScoreboardServer
from tests.web import web_recordings as recordings
from tests.web.web_helpers import CHROMIUM, CHROMIUM_ARGS, HOSTILE_NAME, PageRecord, Uploads


@pytest.fixture(scope="session")
def web_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A ``palaestra server`` of this test directory's own (its contents are the tests' to know)."""
    server = ScoreboardServer(tmp_path_factory.mktemp("web-scoreboard")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def uploads(web_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Uploads:
    from palaestra.scoreboard.client import upload

    root = tmp_path_factory.mktemp("web-recordings")
    out = Uploads()

    def send(directory: Path, **kwargs: Any) -> str:
        return upload(directory, server=web_server.url, api_key=web_server.api_key, **kwargs)

    # (random episodes first, algorithm): solves after ~0 episodes, after ~8, never
    plans = [(1, "balance"), (10, HOSTILE_NAME), (None, "random")]
    for i, (random_episodes, algorithm) in enumerate(plans):
        directory = root / f"cartpole-{i}"
        if random_episodes is None:
            recordings.record_steps("CartPole-v0", directory, 2500, seed=i)
        else:
            recordings.record_cartpole(directory, "CartPole-v0", random_episodes, random_episodes + 100,
                                       seed=i, video=i == 0)
        writeup = "https://example.org/writeups/balance" if i == 0 else None
        out.cartpole.append(send(directory, algorithm_id=algorithm, writeup=writeup))
    out.frozenlake = send(recordings.record_frozenlake(root / "frozenlake"), algorithm_id="random")
    out.board_games = send(recordings.record_board_games(root / "hex"), algorithm_id="random")
    # the balance agent runs twice (two trials per task pooled: intervals), the random agent once (none)
    for i, policy in enumerate(("balance", "random", "balance")):
        run_dir = recordings.record_classic_control2_run(root / f"bench-{i}", policy, seed=i)
        out.benchmark_runs.append(send(run_dir, algorithm_id=f"{policy}-agent", benchmark_id="ClassicControl2-v1"))
    return out


@pytest.fixture(scope="session")
def ladder_game(web_server: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """A 9x9 game between a small MCTS and the random player (named rnd: "random" is an anchor's name),
    uploaded: (its GameObject, its record). The ladder pages' tests and the link crawl share it."""
    from palaestra.ladder.match import match_games, play_match, rules_of_env
    from palaestra.ladder.players import parse_player
    from palaestra.scoreboard.client import ScoreboardClient

    folder = tmp_path_factory.mktemp("ladder-web") / "match"
    play_match(rules_of_env("Go9x9-v0", komi=7.5), parse_player("mcts:5"), parse_player("rnd=random"), 1, folder)
    with ScoreboardClient(web_server.url, web_server.api_key) as client:
        match = client.upload_match(folder)
    return match.games[0], match_games(folder)[0][1]


# -- the browser -------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium); CI installs it")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[tuple[Any, PageRecord]]:
    """A fresh 1200x900 page that records console errors and dialogs (which it dismisses)."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    pg = context.new_page()
    record = PageRecord()
    pg.on("console", lambda m: record.console.append(f"{m.type}: {m.text}"))
    pg.on("pageerror", lambda e: record.errors.append(str(e)))

    def on_dialog(dialog: Any) -> None:
        record.dialogs.append(dialog.message)
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    yield pg, record
    context.close()


@pytest.fixture(scope="session", autouse=True)
def _quiet_pygame() -> None:
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
