"""Shared pieces of the web-page tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "web"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
HOSTILE_NAME = "<script>alert(1)</script><img src=x onerror=alert(2)>"


@dataclass
class Uploads:
    """What the session uploaded: evaluation and benchmark-run ids by role."""

    cartpole: list[str] = field(default_factory=list)  # fastest solve first, unsolved last
    frozenlake: str = ""
    board_games: str = ""  # Hex9x9-v0 games
    benchmark_runs: list[str] = field(default_factory=list)


@dataclass
class PageRecord:
    """What a page did besides rendering: console messages, page errors, dialogs."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def screenshot(pg: Any, name: str, full_page: bool = True) -> Path:
    """Save a screenshot under test-artifacts/web/ and return its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=full_page)
    return path


def poll(pg: Any, expression: str, timeout_s: float = 15.0) -> None:
    """Wait until ``expression`` is truthy in the page.

    (Playwright's ``wait_for_function`` evaluates its predicate with ``eval``, which the pages'
    Content-Security-Policy forbids, as it should; ``evaluate`` goes through the debugger instead.)
    """
    deadline = time.monotonic() + timeout_s
    while not pg.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_s} s: {expression}")
        pg.wait_for_timeout(100)


def require_vendor_assets() -> None:
    """Charts and players need the npm packages in the server's static folder; say how to get them."""
    from palaestra.scoreboard.server.web import assets

    assert assets.vendor_available(), (
        f"the browser-side packages are not installed in {assets.VENDOR_DIR}: the editable install "
        "builds them (`pip install -e .`, needs npm; see setup.py)"
    )
