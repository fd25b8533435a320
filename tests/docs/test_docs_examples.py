"""Every code example of the user guide and the README runs, so the guide cannot drift from the code.

See docs_examples.py for the rules (which blocks run, and the ``<!-- needs: server -->`` markers).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docs.docs_examples import DOCS, README, base_env, extract_blocks, run_page, section
from tests.scoreboard.server_helpers import ScoreboardServer

PAGES = sorted(DOCS.glob("*.md"))


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real ``palaestra server`` (the scoreboard tests' helper) for ``<!-- needs: server -->`` examples."""
    server = ScoreboardServer(tmp_path_factory.mktemp("docs-scoreboard")).start()
    yield server
    server.stop()


def _server_env(request: pytest.FixtureRequest) -> Callable[[], dict[str, str]]:
    """The scoreboard of ``<!-- needs: server -->`` blocks, started only for pages that have one."""

    def env() -> dict[str, str]:
        server = request.getfixturevalue("docs_server")
        return {"PALAESTRA_SERVER": server.url, "PALAESTRA_API_KEY": server.api_key}

    return env


def test_the_guide_has_pages() -> None:
    names = {p.name for p in PAGES}
    for expected in (
        "index.md",
        "quickstart.md",
        "monitor.md",
        "video.md",
        "results.md",
        "agents.md",
        "upload.md",
        "import.md",
        "scoreboard.md",
        "benchmarks.md",
        "board-games.md",
        "atari.md",
        "migrating.md",
    ):
        assert expected in names


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_examples_run_top_to_bottom(page: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    run_page(extract_blocks(page), tmp_path, _server_env(request))


def test_no_example_hides_in_a_block_the_runner_skips() -> None:
    for page in [*PAGES, README]:
        for block in extract_blocks(page):
            assert block.lang not in ("py", "python3", "pycon", "shell-session"), f"{block.where}: use ```python or ```console"


def test_no_page_records_into_the_readme_quick_starts_folder_without_force() -> None:
    """A reader who did the README's quick start follows the guide in the same folder: a page that
    records into the quick start's directory without ``force`` is refused there."""
    quick = section(README.read_text(encoding="utf-8"), "## Quick start")
    (directory,) = re.findall(r"Monitor\(.*?, \"([^\"]+)\"", quick)
    for page in PAGES:
        for block in extract_blocks(page):
            for call in re.findall(rf"Monitor\([^\n]*[\"']{re.escape(directory)}[\"'][^\n]*", block.code):
                assert "force=True" in call, f"{block.where}: records into the README's {directory} without force"


def test_readme_quick_start_runs_word_for_word(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The README's "## Quick start": its Python block as written, then the commands its text names."""
    text = README.read_text(encoding="utf-8")
    quick = section(text, "## Quick start")
    blocks = [b for b in extract_blocks(README, quick) if b.kind != "other"]
    assert blocks, "the README's quick start has no runnable example"
    code_lines = sum(len([ln for ln in b.code.splitlines() if ln.strip()]) for b in blocks)
    assert code_lines <= 5, f"the quick start should stay at 5 lines, it has {code_lines}"
    run_page(blocks, tmp_path, _server_env(request))
    env = base_env(tmp_path, _server_env(request)())
    training_dirs = [p for p in tmp_path.rglob("*") if p.is_dir() and any(p.glob("openaigym.manifest.*"))]
    assert training_dirs, "the quick start recorded no training directory"
    for command in ("results", "upload"):
        if f"palaestra {command} " not in quick:
            continue
        target = quick.split(f"palaestra {command} ", 1)[1].split("`", 1)[0].split()[0]
        result = subprocess.run(
            [os.fspath(Path(sys.executable).parent / "palaestra"), command, target],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"palaestra {command} {target}: {result.stderr}"
