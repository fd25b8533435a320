"""Finding and running the code examples of the user guide (docs/*.md) and the README.

Rules (also written in docs/contributing-docs.md):

* a ```` ```python ```` block is run with the venv's Python in the page's working directory;
* a ```` ```console ```` block whose first command is ``$ palaestra ...`` and a ```` ```bash ````
  block whose first command is ``palaestra ...`` are run with bash (``set -e``), in order; in a
  console block only the ``$ `` lines are commands, the rest is output;
* every block of a page runs in one temporary directory, in page order, so later examples can
  use what earlier ones recorded;
* an HTML comment right before a block changes how it runs:
  ``<!-- needs: server -->`` runs it with ``PALAESTRA_SERVER`` and ``PALAESTRA_API_KEY`` of a real
  scoreboard; ``<!-- file: NAME -->`` writes the block into ``NAME`` instead of running it;
  ``<!-- check: parse -->`` parses each ``palaestra`` command with the real command-line parser
  instead of running it (for commands that need PostgreSQL, S3 or run forever);
* other blocks (``nginx``, ``ini``, ``text``, unlabelled output) are not code and are not run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
VENV_BIN = Path(sys.executable).parent
SHELL_LANGS = ("console", "bash", "shell", "sh")
BLOCK_TIMEOUT_S = 300

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<key>[\w-]+)\s*:\s*(?P<value>.*?)\s*-->\s*$")


@dataclass
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    lang: str
    code: str
    markers: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    def commands(self) -> list[str]:
        """The shell commands of a console/bash block (continuation lines joined)."""
        lines = self.code.splitlines()
        if self.lang == "console":
            lines = _console_command_lines(lines)
        out: list[str] = []
        pending = ""
        for ln in lines:
            if not pending and (not ln.strip() or ln.lstrip().startswith("#")):
                continue
            if ln.rstrip().endswith("\\"):
                pending += ln.rstrip()[:-1] + " "
                continue
            out.append(pending + ln)
            pending = ""
        if pending:
            out.append(pending)
        return out

    @property
    def kind(self) -> str:
        """``python``, ``shell`` (a palaestra block), or ``other`` (not run)."""
        if self.lang == "python":
            return "python"
        if self.lang in SHELL_LANGS:
            commands = self.commands()
            if commands and commands[0].lstrip().startswith("palaestra "):
                return "shell"
        return "other"


def _console_command_lines(lines: list[str]) -> list[str]:
    """The ``$ `` lines of a console block, with their ``\\`` continuation lines; output dropped."""
    kept: list[str] = []
    continuing = False
    for ln in lines:
        if continuing:
            kept.append(ln[2:] if ln.startswith("> ") else ln)
        elif ln.startswith("$ "):
            kept.append(ln[2:])
        else:
            continue
        continuing = ln.rstrip().endswith("\\")
    return kept


def extract_blocks(page: Path, text: str | None = None) -> list[Block]:
    """Every fenced block of ``page``, with the HTML-comment markers right before it."""
    text = page.read_text(encoding="utf-8") if text is None else text
    blocks: list[Block] = []
    markers: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = _MARKER.match(line)
        if marker:
            markers[marker["key"]] = marker["value"]
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            indent = fence["indent"]
            body: list[str] = []
            start = i + 1
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
                i += 1
            blocks.append(Block(page, start, fence["lang"].lower(), "\n".join(body) + "\n", markers))
            markers = {}
            i += 1
            continue
        if line.strip():
            markers = {}
        i += 1
    return blocks


def section(text: str, heading: str) -> str:
    """The text of the Markdown section ``heading`` (up to the next heading of the same level)."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == heading)
    except StopIteration:
        raise AssertionError(f"no section {heading!r}") from None
    end = len(lines)
    for j in range(start + 1, len(lines)):
        stripped = lines[j].lstrip()
        if stripped.startswith("#") and len(stripped) - len(stripped.lstrip("#")) <= level:
            end = j
            break
    return "\n".join(lines[start:end]) + "\n"


def base_env(cwd: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment examples run in: the venv first on PATH, no server configured, headless, and
    config/data directories inside ``cwd`` (so ``palaestra login`` never touches the real home)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PALAESTRA_", "OPENAI_GYM_"))}
    env["XDG_CONFIG_HOME"] = str(cwd / ".config")
    env["XDG_DATA_HOME"] = str(cwd / ".local" / "share")
    env["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env.setdefault("SDL_VIDEODRIVER", "dummy")
    env.update(extra or {})
    return env


def run_block(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one block; raises AssertionError with its output if it fails."""
    if block.kind == "python":
        argv = [sys.executable, "-c", block.code]
    else:
        script = "set -e\n" + "\n".join(block.commands()) + "\n"
        argv = ["bash", "-c", script]
    try:
        result = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"{block.where}: the example ran longer than {BLOCK_TIMEOUT_S}s") from exc
    if result.returncode != 0:
        raise AssertionError(
            f"{block.where}: the {block.lang} example failed with exit code {result.returncode}\n"
            f"--- code ---\n{block.code}--- stdout ---\n{result.stdout[-4000:]}\n"
            f"--- stderr ---\n{result.stderr[-4000:]}"
        )
    return result


def parse_commands(block: Block) -> None:
    """Parse each ``palaestra`` command of ``block`` with the real parser (usage errors fail)."""
    from palaestra.cli import build_parser

    parser = build_parser()
    for command in block.commands():
        argv = shlex.split(command, comments=True)
        if not argv or argv[0] != "palaestra":
            continue
        try:
            parser.parse_args(argv[1:])
        except SystemExit as exc:
            raise AssertionError(f"{block.where}: `{command}` is not a valid palaestra command") from exc
