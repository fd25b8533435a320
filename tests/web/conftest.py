"""Fixtures of the web-page tests: a real ``palaestra server`` filled by real uploads, and Chromium.

The server is started with the scoreboard tests' ``ScoreboardServer`` (tests/scoreboard/server_helpers.py)
and filled once per session by ``palaestra.upload`` of training directories recorded with the
Monitor (tests/web/recordings.py):

- three CartPole-v0 evaluations that solve after different numbers of episodes (one never does),
  the first with an mp4 video, the second under a hostile algorithm name;
- a FrozenLake-v1 evaluation with ansi (asciicast v1) videos;
- two ClassicControl2-v1 benchmark runs.

Browser tests drive Debian's /usr/bin/chromium through Playwright (never ``playwright install``)
and save screenshots under test-artifacts/web/.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "web"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
HOSTILE_NAME = "<script>alert(1)</script><img src=x onerror=alert(2)>"

sys.path.insert(0, str(HERE))
import recordings  # noqa: E402


def _scoreboard_server_class() -> Any:
    spec = importlib.util.spec_from_file_location(
        "palaestra_scoreboard_server_helpers", HERE.parent / "scoreboard" / "server_helpers.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ScoreboardServer


@dataclass
class Uploads:
    """What the session uploaded: evaluation and benchmark-run ids by role."""

    cartpole: list[str] = field(default_factory=list)  # fastest solve first, unsolved last
    frozenlake: str = ""
    benchmark_runs: list[str] = field(default_factory=list)  # better run first


@pytest.fixture(scope="session")
def web_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A ``palaestra server`` of this test directory's own (its contents are the tests' to know)."""
    server = _scoreboard_server_class()(tmp_path_factory.mktemp("web-scoreboard")).start()
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
    for i, policy in enumerate(("balance", "random")):
        run_dir = recordings.record_classic_control2_run(root / f"bench-{i}", policy, seed=i)
        out.benchmark_runs.append(send(run_dir, algorithm_id=f"{policy}-agent", benchmark_id="ClassicControl2-v1"))
    return out


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


@dataclass
class PageRecord:
    """What a page did besides rendering: console messages, page errors, dialogs."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[tuple[Any, PageRecord]]:
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


def screenshot(pg: Any, name: str, full_page: bool = True) -> Path:
    """Save a screenshot under test-artifacts/web/ and return its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=full_page)
    return path


@pytest.fixture(scope="session", autouse=True)
def _quiet_pygame() -> None:
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
