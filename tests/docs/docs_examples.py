"""Finding and running the code examples of the user guide (docs/*.md) and the README, as a user does.

Rules (also written in docs/contributing-docs.md):

* a page's blocks run in page order, in one fresh folder, as one bash session (``set -eo pipefail``):
  what one block records, exports or ``cd``s into, the next one sees;
* a ```` ```python ```` block is saved as a file and run with ``python FILE.py``, so that a script
  that needs ``if __name__ == "__main__":`` fails here as it would for a user;
* a ```` ```console ```` or ```` ```bash ```` block runs as shell commands; in a console block only
  the ``$ `` lines are commands, the rest is output;
* an HTML comment right before a block changes how it runs:
  ``<!-- needs: server -->`` runs it with ``PALAESTRA_SERVER`` and ``PALAESTRA_API_KEY`` of a real
  scoreboard; ``<!-- file: NAME -->`` saves the block as ``NAME`` instead of running it;
  ``<!-- check: parse -->`` parses each ``palaestra`` command with the real command-line parser
  instead of running it (for commands that need PostgreSQL or S3); ``<!-- check: none -->`` does not
  run it (installing palaestra, ``make``); ``<!-- run: background -->`` starts it in the background,
  as in a second terminal, and waits until the page's server answers;
* the page's port 8000 (``127.0.0.1:8000``, ``--port 8000``) becomes a free port, since tests share the
  machine;
* other blocks (``nginx``, ``ini``, ``text``, ``diff``, unlabelled output) are not code and are not run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.server_process import free_port

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
VENV_BIN = Path(sys.executable).parent
SHELL_LANGS = ("console", "bash", "shell", "sh")

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
        """``python``, ``shell`` (commands), or ``other`` (not code: not run)."""
        if self.lang == "python":
            return "python"
        if self.lang in SHELL_LANGS and self.commands():
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


PORT_IN_DOCS = 8000
_DOCS_PORT = re.compile(rf"(127\.0\.0\.1:|localhost:|--port ){PORT_IN_DOCS}\b")
KNOWN_MARKERS = {"needs": {"server"}, "file": None, "check": {"parse", "none"}, "run": {"background"}}


PAGE_TIMEOUT_S = 600
SCRIPT_HEAD = """\
set -eo pipefail
background_pids=()
trap 'for pid in "${background_pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done' EXIT
wait_for_server() {  # what a user does by watching the other terminal
  python - "$1" <<'PY'
import sys, time, httpx
url = f"http://127.0.0.1:{sys.argv[1]}/v1/health"
for _ in range(600):
    try:
        if httpx.get(url, timeout=2).status_code == 200:
            sys.exit(0)
    except httpx.HTTPError:
        pass
    time.sleep(0.1)
sys.exit(f"no server answered on {url} within 60 s")
PY
}
"""


class PageFailed(AssertionError):
    """A page's examples stopped at one block; the message shows the block and the output."""


@dataclass
class PageRun:
    """A page's blocks turned into one bash session in ``cwd`` (see the module docstring)."""

    cwd: Path
    port: int
    server_env: Callable[[], dict[str, str]]
    lines: list[str] = field(default_factory=list)
    blocks: dict[str, Block] = field(default_factory=dict)
    count: int = 0

    def add(self, block: Block) -> None:
        for key, value in block.markers.items():
            assert key in KNOWN_MARKERS, f"{block.where}: unknown marker {key!r}"
            allowed = KNOWN_MARKERS[key]
            assert allowed is None or value in allowed, f"{block.where}: unknown {key} {value!r}"
        code = _DOCS_PORT.sub(rf"\g<1>{self.port}", block.code)
        if "file" in block.markers:
            self._save(block.markers["file"], code)
        elif block.kind == "other" or block.markers.get("check") == "none":
            return
        elif block.markers.get("check") == "parse":
            assert block.kind == "shell", f"{block.where}: only palaestra commands can be parse-checked"
            parse_commands(block)
        else:
            self._run(block, code)
        self.count += 1

    def _save(self, name: str, code: str) -> None:
        target = self.cwd / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code, encoding="utf-8")

    def _run(self, block: Block, code: str) -> None:
        self.blocks[block.where] = block
        self.lines.append(f"echo {shlex.quote(block.where)} > .docs-block")
        prefix = ""
        if block.markers.get("needs") == "server":
            prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.server_env().items()) + " "
        if block.kind == "python":
            name = f"{block.page.stem}_example_{block.line}.py"
            self._save(name, code)
            self.lines.append(f"{prefix}python {name}")
            return
        commands = Block(block.page, block.line, block.lang, code).commands()
        if block.markers.get("run") == "background":
            assert len(commands) == 1, f"{block.where}: a background block holds one command"
            self.lines.append(f"{prefix}{commands[0]} > .docs-background.log 2>&1 &")
            self.lines.append(f"background_pids+=($!); wait_for_server {self.port}")
        elif prefix:
            self.lines.append(f"( export {prefix.strip()}")
            self.lines.extend(commands)
            self.lines.append(")")
        else:
            self.lines.extend(commands)

    def script(self) -> str:
        return SCRIPT_HEAD + "\n".join(self.lines) + "\n"

    def run(self, env: dict[str, str], timeout: float = PAGE_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        """Run the session; raises :class:`PageFailed` naming the block that failed."""
        if not self.lines:
            return subprocess.CompletedProcess([], 0, "", "")
        try:
            result = subprocess.run(
                ["bash", "-c", self.script()], cwd=self.cwd, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as exc:
            raise PageFailed(f"{self._current()}: the page's examples ran longer than {timeout:.0f} s") from exc
        if result.returncode != 0:
            where = self._current()
            block = self.blocks.get(where)
            log = self.cwd / ".docs-background.log"
            background = f"--- background ---\n{log.read_text()[-2000:]}\n" if log.exists() else ""
            raise PageFailed(
                f"{where}: the {block.lang if block else ''} example failed with exit code {result.returncode}\n"
                f"--- code ---\n{block.code if block else ''}--- stdout ---\n{result.stdout[-4000:]}\n"
                f"--- stderr ---\n{result.stderr[-4000:]}\n{background}"
            )
        return result

    def _current(self) -> str:
        try:
            return (self.cwd / ".docs-block").read_text().strip()
        except OSError:
            return "(before the first block)"


def run_page(
    blocks: list[Block], cwd: Path, server_env: Callable[[], dict[str, str]]
) -> tuple[int, subprocess.CompletedProcess[str]]:
    """Run a page's examples as its reader would; returns how many ran or were checked, and the session."""
    page = PageRun(cwd, free_port(), server_env)
    for block in blocks:
        page.add(block)
    return page.count, page.run(base_env(cwd))


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
