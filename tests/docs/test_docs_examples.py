"""Every code example of the user guide and the README runs, so the guide cannot drift from the code.

See docs_examples.py for the rules (which blocks run, and the ``<!-- needs: server -->`` markers).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docs.docs_examples import (
    DOCS,
    README,
    Block,
    base_env,
    extract_blocks,
    parse_commands,
    run_block,
    section,
)
from tests.scoreboard.server_helpers import ScoreboardServer

PAGES = sorted(DOCS.glob("*.md"))
KNOWN_MARKERS = {"needs", "file", "check"}


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real ``palaestra server`` (the scoreboard tests' helper) for ``<!-- needs: server -->`` examples."""
    server = ScoreboardServer(tmp_path_factory.mktemp("docs-scoreboard")).start()
    yield server
    server.stop()


def _server_env(request: pytest.FixtureRequest) -> dict[str, str]:
    server = request.getfixturevalue("docs_server")
    return {"PALAESTRA_SERVER": server.url, "PALAESTRA_API_KEY": server.api_key}


def run_page(blocks: list[Block], cwd: Path, request: pytest.FixtureRequest) -> int:
    """Run a page's examples in order in ``cwd``; returns how many ran or were checked."""
    count = 0
    for block in blocks:
        unknown = set(block.markers) - KNOWN_MARKERS
        assert not unknown, f"{block.where}: unknown marker(s) {unknown}"
        if "file" in block.markers:
            target = cwd / block.markers["file"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
            count += 1
            continue
        if block.kind == "other":
            continue
        if block.markers.get("check") == "parse":
            assert block.kind == "shell", f"{block.where}: only palaestra commands can be parse-checked"
            parse_commands(block)
            count += 1
            continue
        assert block.markers.get("check") is None, f"{block.where}: unknown check {block.markers['check']!r}"
        extra = _server_env(request) if block.markers.get("needs") == "server" else {}
        assert block.markers.get("needs") in (None, "server"), f"{block.where}: unknown needs"
        run_block(block, cwd, base_env(cwd, extra))
        count += 1
    return count


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
        "scoreboard.md",
        "benchmarks.md",
        "board-games.md",
        "atari.md",
        "migrating.md",
    ):
        assert expected in names


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_examples_run(page: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    blocks = extract_blocks(page)
    run_page(blocks, tmp_path, request)


def test_every_python_and_palaestra_block_is_covered() -> None:
    """No example hides in a block kind the runner skips (```py, or a shell block it cannot see)."""
    for page in [*PAGES, README]:
        for block in extract_blocks(page):
            assert block.lang not in ("py", "python3", "pycon"), f"{block.where}: use ```python"
            if block.lang in ("console", "bash", "shell", "sh") and block.kind == "other":
                for command in block.commands():
                    assert not command.lstrip().startswith("palaestra"), (
                        f"{block.where}: a palaestra command after other commands is never run; "
                        "start the block with it or split the block"
                    )


def test_readme_quick_start_runs_word_for_word(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The README's "## Quick start": its Python block as written, then the commands its text names."""
    text = README.read_text(encoding="utf-8")
    quick = section(text, "## Quick start")
    blocks = [b for b in extract_blocks(README, quick) if b.kind != "other"]
    assert blocks, "the README's quick start has no runnable example"
    code_lines = sum(len([ln for ln in b.code.splitlines() if ln.strip()]) for b in blocks)
    assert code_lines <= 5, f"the quick start should stay at 5 lines, it has {code_lines}"
    run_page(blocks, tmp_path, request)
    env = base_env(tmp_path, _server_env(request))
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
