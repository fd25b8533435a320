"""The user guide builds with ``mkdocs build --strict`` and its example runner reads blocks right."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.docs_examples import REPO, Block, extract_blocks, section


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    result = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "quickstart" / "index.html").exists()


PAGE = """\
# Title

<!-- needs: server -->
```console
$ palaestra upload runs/x \\
    --algorithm a
https://example/evaluations/1
$ palaestra results runs/x
```

Some text.

<!-- file: agent.py -->
```python
def make_agent(o, a): ...
```

```bash
pip install palaestra
palaestra envs
```

```nginx
server {}
```

## Next

```bash
palaestra envs --group atari
```
"""


def test_extract_blocks_reads_languages_markers_and_commands(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    blocks = extract_blocks(page, PAGE)
    assert [b.lang for b in blocks] == ["console", "python", "bash", "nginx", "bash"]
    console, python, pip, nginx, bash = blocks
    assert console.markers == {"needs": "server"}
    commands = [" ".join(c.split()) for c in console.commands()]
    assert commands == ["palaestra upload runs/x --algorithm a", "palaestra results runs/x"]
    assert console.kind == "shell"
    assert python.markers == {"file": "agent.py"} and python.kind == "python"
    assert pip.kind == "shell" and nginx.kind == "other"
    assert bash.kind == "shell" and bash.markers == {}
    assert isinstance(console, Block) and console.line == 4


def test_markers_apply_only_to_the_next_block(tmp_path: Path) -> None:
    text = "<!-- needs: server -->\n\nA paragraph.\n\n```python\nprint(1)\n```\n"
    (block,) = extract_blocks(tmp_path / "p.md", text)
    assert block.markers == {}


def test_section_stops_at_the_next_heading_of_its_level() -> None:
    assert "--group atari" in section(PAGE, "# Title")  # a level-1 section holds its subsections
    sub = section(PAGE, "## Next")
    assert "--group atari" in sub and "agent.py" not in sub
