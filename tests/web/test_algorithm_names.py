"""``/algorithms/NAME`` opens an algorithm by its name, as people write it (the docs' ``/algorithms/ID``
with the id the upload printed is the other way in): a real server with algorithms made through the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scoreboard.server_helpers import ScoreboardServer


@pytest.fixture(scope="module")
def named_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ScoreboardServer, dict[str, str]]]:
    """A board where tester has ``cem`` and ``ppo``, and another user has a ``ppo`` too: ``(server, ids)``."""
    server = ScoreboardServer(Path(tmp_path_factory.mktemp("algorithm-names"))).start()
    other = server.create_user("second-lab")
    ids = {}
    for owner, key, name in (("tester", None, "cem"), ("tester", None, "ppo"), ("second-lab", other, "ppo")):
        r = httpx.post(f"{server.url}/v1/algorithms", json={"name": name}, headers=server.headers(key), timeout=30)
        assert r.status_code == 201, r.text
        ids[f"{owner}/{name}"] = r.json()["id"]
    yield server, ids
    server.stop()


def test_an_algorithm_opens_by_its_name_with_a_307_to_its_id_page(named_board: tuple[Any, dict[str, str]]) -> None:
    server, ids = named_board
    r = httpx.get(f"{server.url}/algorithms/cem?stat=iqm", timeout=30)
    assert r.status_code == 307
    assert r.headers["location"] == f"/algorithms/{ids['tester/cem']}?stat=iqm"  # the query goes along
    page = httpx.get(f"{server.url}/algorithms/cem", follow_redirects=True, timeout=30)
    assert page.status_code == 200 and "<h1>Algorithm cem</h1>" in page.text


def test_a_name_that_several_users_have_lists_each_of_their_algorithms(named_board: tuple[Any, dict[str, str]]) -> None:
    server, ids = named_board
    r = httpx.get(f"{server.url}/algorithms/ppo", timeout=30)
    assert r.status_code == 200
    assert "<h1>Algorithms named ppo</h1>" in r.text
    assert "2 users have an algorithm called <strong>ppo</strong>" in r.text
    for owner in ("tester", "second-lab"):
        assert f'href="/algorithms/{ids[owner + "/ppo"]}"' in r.text
        assert f'href="/users/{owner}"' in r.text
    assert ids["tester/cem"] not in r.text


def test_an_unknown_name_is_a_404_that_says_where_algorithms_are_listed(
    named_board: tuple[Any, dict[str, str]],
) -> None:
    server, _ = named_board
    r = httpx.get(f"{server.url}/algorithms/dqn", timeout=30)
    assert r.status_code == 404
    assert "No algorithm has the id or the name &#39;dqn&#39;" in r.text
    assert "The algorithms page (/algorithms) lists every one" in r.text
