"""The numbers of an episode batch, uploaded to a real server: JSON integers and finite JSON numbers
within their bounds, nothing else; a refusal is a 400 that names the field and the value, and the
store keeps nothing of the refused batch."""

from __future__ import annotations

import json
from typing import Any

import pytest

from palaestra.scoreboard import protocol
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    error_of,
    make_batch,
    post_upload,
    upload_evaluation,
)

# (case, field, the first value of that field, how the error shows the value)
REFUSED: list[tuple[str, str, Any, str]] = [
    ("a length of 2**63 (a 500 on SQLite before)", "episode_lengths", 2**63, "9223372036854775808"),
    ("a length beyond the bound", "episode_lengths", protocol.MAX_EPISODE_LENGTH + 1, "1000000000001"),
    ("a length that is a string", "episode_lengths", "5", '"5"'),
    ("a length that is a boolean", "episode_lengths", True, "true"),
    ("a length that is a fraction", "episode_lengths", 5.5, "5.5"),
    ("a length written as a float", "episode_lengths", 5.0, "5.0"),
    ("a negative length", "episode_lengths", -1, "-1"),
    ("a reward that is a string", "episode_rewards", "1.5", '"1.5"'),
    ("a reward that is a boolean", "episode_rewards", False, "false"),
    ("a timestamp that is a string", "timestamps", "1700000001", '"1700000001"'),
    ("a data source of 2**63", "data_sources", 2**63, "9223372036854775808"),
    ("a data source that is a boolean", "data_sources", True, "true"),
    ("a sub-environment index of 2**63 (a 500 before)", "env_index", 2**63, "9223372036854775808"),
    ("a sub-environment index that is a string", "env_index", "0", '"0"'),
]


def _batch_with(field: str, first: Any) -> dict[str, Any]:
    batch = make_batch(3)
    values = list(batch.get(field) or [0, 0, 0])
    values[0] = first
    batch[field] = values
    return batch


@pytest.mark.parametrize(("field", "value", "shown"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_an_episode_batch_number_of_the_wrong_type_or_out_of_bounds_is_a_400_naming_the_field_and_value(
    scoreboard_server: ScoreboardServer, field: str, value: Any, shown: str
) -> None:
    with scoreboard_server.client() as client:
        file_obj = create_file(client, "episode_batch")
        body = error_of(post_upload(file_obj, json.dumps(_batch_with(field, value)).encode()), 400)
        assert body["type"] == field
        assert f"{field}.0" in body["detail"] and f"(got {shown})" in body["detail"], body["detail"]
        # nothing of it was kept: the file is still waiting for an upload, and an evaluation of it is refused
        assert client.get(f"/v1/files/{file_obj['id']}").json()["status"] == "pending"
        refused = client.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": file_obj["id"]})
        assert 400 <= refused.status_code < 500, refused.text


def test_integers_within_the_bounds_still_pass_where_floats_are_expected(scoreboard_server: ScoreboardServer) -> None:
    """JSON does not tell 1 from 1.0: an integer reward or timestamp is a number, and the longest
    episode allowed is scored, its steps summed without overflow."""
    batch = make_batch(3)
    batch["episode_rewards"] = [1, 2, 3]
    batch["timestamps"] = [1_700_000_001, 1_700_000_002, 1_700_000_003]
    batch["episode_lengths"] = [protocol.MAX_EPISODE_LENGTH] * 3
    with scoreboard_server.client() as client:
        evaluation = upload_evaluation(client, batch=batch)
        page = client.get(f"/evaluations/{evaluation['id']}")
        assert page.status_code == 200


def test_the_client_refuses_the_same_batch_before_uploading_it() -> None:
    """The one validator both sides run: ``palaestra upload`` says the same before sending a byte."""
    with pytest.raises(protocol.EpisodeBatchError, match=r'episode_lengths\.0.*\(got "5"\)'):
        protocol.parse_episode_batch(json.dumps(_batch_with("episode_lengths", "5")))


@pytest.mark.parametrize("length", [2**63, "5", True], ids=["2**63", "a string", "a boolean"])
def test_a_live_chunk_holds_its_episode_lengths_to_the_same_bounds(
    scoreboard_server: ScoreboardServer, length: Any
) -> None:
    with scoreboard_server.client() as client:
        live = client.post("/v1/live_evaluations", json={"env": "CartPole-v1"})
        assert live.status_code == 201, live.text
        chunk = {"source": "0", "start": 0, "timestamps": [1.0], "episode_lengths": [length], "episode_rewards": [1.0]}
        refused = client.post(f"/v1/live_evaluations/{live.json()['id']}/chunks", json=chunk)
        assert refused.status_code in (400, 422) and "episode_lengths" in refused.text, refused.text
        assert client.get(f"/v1/live_evaluations/{live.json()['id']}").json()["episodes"] == 0
