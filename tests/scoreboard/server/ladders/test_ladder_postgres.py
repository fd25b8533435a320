"""The ladder tables on PostgreSQL: a match upload is checked, stored and rated (migration 0006_ladder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from palaestra.ladder.match import play_match, read_match, rules_of_env
from palaestra.ladder.players import parse_player
from palaestra.scoreboard.client import ScoreboardClient


@pytest.mark.postgres
@pytest.mark.slow
def test_postgresql_stores_and_rates_a_match(scoreboard_factory: Any, postgres_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "match"
    play_match(rules_of_env("Go9x9-v0", komi=7.5), parse_player("mcts:5"), parse_player("rnd=random"), 2, folder)
    server = scoreboard_factory(database_url=postgres_url)
    with ScoreboardClient(server.url, server.api_key) as client:
        match = client.upload_match(folder)
        again = client.upload_match(folder)
    assert again.id == match.id and len(match.games) == 2
    with server.client() as http:
        ratings = http.get(f"/v1/ladders/{match.ladder}/ratings").json()
        player = http.get(f"/v1/ladders/{match.ladder}/players/rnd").json()
    assert ratings["games"] == 2
    assert sorted(r["player"] for r in ratings["ratings"]) == sorted(p["name"] for p in read_match(folder)["players"])
    assert player["head_to_head"]["mcts:5"]["games"] == 2
