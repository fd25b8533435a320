"""Repeats (palaestra.scoreboard.server.evaluations.repeats): the same episodes uploaded again by their
uploader answer the evaluation they made, and other details for them are refused naming it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from palaestra.scoreboard import protocol
from tests.scoreboard.server_helpers import ScoreboardServer, error_of, make_batch, upload

ENV = "CartPole-v1"


@pytest.fixture
def user(scoreboard_server: ScoreboardServer) -> Iterator[tuple[str, httpx.Client]]:
    """A user of their own (the shared server's default user uploads in many tests) and their client."""
    name = f"rep-{uuid.uuid4().hex[:8]}"
    key = scoreboard_server.create_user(name)
    with httpx.Client(base_url=scoreboard_server.url, headers=scoreboard_server.headers(key), timeout=60) as c:
        yield name, c


def post_evaluation(c: httpx.Client, batch: dict[str, Any], **fields: Any) -> httpx.Response:
    """The 2017 flow, without idempotency keys: a new file for the batch each time, then the evaluation."""
    file_id = upload(c, "episode_batch", json.dumps(batch).encode())
    return c.post("/v1/evaluations", json={"env": ENV, "training_episode_batch": file_id, **fields})


def rows(c: httpx.Client, owner: str) -> list[str]:
    """The ids of the owner's evaluations on ENV: what the env's leaderboard ranks of theirs."""
    answer = c.get("/v1/evaluations", params={"env": ENV, "owner": owner, "limit": 100})
    assert answer.status_code == 200, answer.text
    return [e["id"] for e in answer.json()["data"]]


def test_the_same_episodes_again_answer_the_first_evaluation_already_uploaded(user) -> None:
    name, c = user
    batch = make_batch(12)
    first = post_evaluation(c, batch, algorithm={"id": "rep-cem"}, writeup="https://example.org/notes")
    assert first.status_code == 201 and first.json()["already_uploaded"] is False
    again = post_evaluation(c, batch, algorithm={"id": "rep-cem"}, writeup="https://example.org/notes")
    assert again.status_code == 200, again.text
    protocol.EvaluationCreated.model_validate(again.json())
    assert again.json() == {**first.json(), "already_uploaded": True}
    assert rows(c, name) == [first.json()["id"]]


def test_the_same_episodes_with_another_algorithm_or_writeup_are_refused_naming_the_first(user) -> None:
    name, c = user
    batch = make_batch(8)
    first = post_evaluation(c, batch, algorithm={"id": "rep-first"}).json()
    other = error_of(post_evaluation(c, batch, algorithm={"id": "rep-second"}), 409)
    assert other["type"] == "algorithm"
    assert f"evaluation {first['id']} ({first['web_url']}), with algorithm 'rep-first'" in other["detail"]
    assert "this upload asks for algorithm 'rep-second'" in other["detail"]
    assert "upload another run (other episodes)" in other["detail"]
    writeup = error_of(post_evaluation(c, batch, algorithm={"id": "rep-first"}, writeup="https://example.org/w"), 409)
    assert writeup["type"] == "writeup" and "writeup none" in writeup["detail"] and first["id"] in writeup["detail"]
    assert error_of(post_evaluation(c, batch), 409)["type"] == "algorithm"  # no algorithm is another one
    assert rows(c, name) == [first["id"]]
    # the refused algorithm was not created along the way
    names = [a["name"] for a in c.get("/v1/algorithms", params={"owner": name, "limit": 100}).json()["data"]]
    assert "rep-second" not in names


def test_other_episodes_make_a_new_evaluation(user) -> None:
    name, c = user
    first = post_evaluation(c, make_batch(6), algorithm={"id": "rep-runs"})
    second = post_evaluation(c, make_batch(6), algorithm={"id": "rep-runs"})
    assert first.status_code == second.status_code == 201
    assert sorted(rows(c, name)) == sorted([first.json()["id"], second.json()["id"]])


def test_the_same_episodes_from_another_user_are_their_own_evaluation(
    scoreboard_server: ScoreboardServer, user
) -> None:
    batch = make_batch(5)
    with scoreboard_server.client() as default_user:
        theirs = post_evaluation(default_user, batch, algorithm={"id": "rep-shared"})
    name, c = user
    mine = post_evaluation(c, batch, algorithm={"id": "rep-shared"})
    assert theirs.status_code == mine.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"] and rows(c, name) == [mine.json()["id"]]


def test_the_same_episodes_on_another_env_are_not_a_repeat(user) -> None:
    _, c = user
    batch = make_batch(5)
    post_evaluation(c, batch).raise_for_status()
    file_id = upload(c, "episode_batch", json.dumps(batch).encode())
    other = c.post("/v1/evaluations", json={"env": "Acrobot-v1", "training_episode_batch": file_id})
    assert other.status_code == 201 and other.json()["already_uploaded"] is False


def test_a_request_replayed_with_its_idempotency_key_says_already_uploaded(user) -> None:
    _, c = user
    file_id = upload(c, "episode_batch", json.dumps(make_batch(4)).encode())
    body = {"env": ENV, "training_episode_batch": file_id}
    key = {"Idempotency-Key": uuid.uuid4().hex}
    made = c.post("/v1/evaluations", json=body, headers=key)
    replayed = c.post("/v1/evaluations", json=body, headers=key)
    assert made.status_code == 201 and replayed.status_code == 200
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.json() == {**made.json(), "already_uploaded": True}
