"""The bytes the log of scores hashes: one canonical form, however a document is serialised."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Any

from palaestra.scoreboard.server.evaluations.coverage import (
    canonical_json,
    field_digests,
    hashed_document,
    plain,
)


def _match_document(games: int) -> dict[str, Any]:
    return {
        "kind": "ladder_match", "id": "ladder_match_1", "komi": 7.5, "board_size": 19.0, "verified": False,
        "players": ["black-bot", "wëiß"], "created": datetime(2026, 12, 5, 18, 0, tzinfo=timezone.utc),
        "agent_job_id": None, "notes": [1, {"id": "n", "v": 2.0}, "s", (1.0, float("nan"))], "empty": [],
        "games": [
            {"id": f"ladder_game_{n}", "number": n, "moves": ["D4", "pass", "Q16"] * n, "score": [6.5, 2.0, None][n % 3],
             "winner": "white", "record_sha256": "0" * 64}
            for n in range(games)
        ],
    }  # fmt: skip


def test_a_document_hashed_field_by_field_has_the_bytes_and_digests_of_the_whole_serialised_at_once() -> None:
    # the log appends with hashed_document (each game serialised on its own, so a 1,000-game upload
    # never holds the interpreter long); verify reads back with canonical_json: they must agree byte for byte
    doc = _match_document(games=7)
    whole = json.dumps(plain(doc), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    record, digests = hashed_document(doc)
    assert record == whole == canonical_json(doc)
    assert digests == field_digests(doc)
    assert digests["games"] == hashlib.sha256(canonical_json(doc["games"])).hexdigest()
    assert digests["games.ladder_game_3"] == hashlib.sha256(canonical_json(doc["games"][3])).hexdigest()
    assert digests["notes.n"] == hashlib.sha256(b'{"id":"n","v":2}').hexdigest()


def test_plain_gives_one_form_to_numbers_times_and_lists() -> None:
    assert plain({"b": 195.0, "a": (1.5, float("inf"), True, None)}) == {"a": [1.5, None, True, None], "b": 195}
    assert plain(datetime(2026, 1, 1, 12)) == "2026-01-01T12:00:00+00:00"
    moves = ["D4"] * 600
    assert plain(moves) == moves and plain(moves) is not moves  # a copy, as the walk made
