"""No module of the scoreboard is over 500 lines: each concept has a room a reader can hold at once."""

from __future__ import annotations

from pathlib import Path

SCOREBOARD = Path(__file__).resolve().parent.parent / "src" / "palaestra" / "scoreboard"
MAX_LINES = 500


def test_no_scoreboard_module_is_over_500_lines() -> None:
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in SCOREBOARD.rglob("*.py")}
    too_long = {str(path.relative_to(SCOREBOARD)): n for path, n in sizes.items() if n > MAX_LINES}
    assert too_long == {}, f"split these by concept (README's layout picture names the rooms): {too_long}"
