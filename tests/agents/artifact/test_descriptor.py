"""The agent descriptor is strict: each error names the field, the value and what is allowed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from palaestra.agents.artifact import AgentDescriptor, DescriptorError, descriptor_path_for, load_descriptor


def _parse(document: object) -> AgentDescriptor:
    return AgentDescriptor.from_json(json.dumps(document))


def test_a_minimal_descriptor_gets_the_defaults_and_writes_them_back() -> None:
    descriptor = _parse({"env_id": "CartPole-v1", "action": "argmax", "deterministic": True})
    assert descriptor.preprocessing.name == "none"
    assert json.loads(descriptor.to_json()) == {
        "version": 1,
        "env_id": "CartPole-v1",
        "preprocessing": {"name": "none"},
        "action": "argmax",
        "deterministic": True,
    }


def test_atari_preprocessing_takes_the_wrappers_arguments_with_their_defaults() -> None:
    descriptor = _parse(
        {"env_id": "ALE/Pong-v5", "action": "sample", "deterministic": False,
         "preprocessing": {"name": "atari", "frame_skip": 1}}
    )
    pre = descriptor.preprocessing
    assert (pre.name, pre.frame_skip, pre.stack, pre.screen_size, pre.noop_max) == ("atari", 1, 4, 84, 30)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"env_id": "CartPole-v1", "action": "argmax", "deterministic": True, "gpu": True},
            "gpu: unknown field (the known fields are version, env_id, preprocessing, action, deterministic, "
            "input_name, output_name, observation_key)",
        ),
        (
            {"env_id": "CartPole-v1", "action": "greedy", "deterministic": True},
            'action: "greedy" is not an action mapping (allowed: argmax, sample, index, clip, rescale)',
        ),
        (
            {"env_id": "CartPole-v1", "action": "argmax", "deterministic": True, "preprocessing": {"name": "resnet"}},
            'preprocessing.name: "resnet" is not a preprocessing name (allowed: none, flatten, atari)',
        ),
        (
            {"env_id": "ALE/Pong-v5", "action": "argmax", "deterministic": True,
             "preprocessing": {"name": "atari", "terminal_on_life_loss": True}},
            "preprocessing.terminal_on_life_loss: unknown field (the known fields are name, noop_max, frame_skip",
        ),
        (
            {"env_id": "ALE/Pong-v5", "action": "argmax", "deterministic": True,
             "preprocessing": {"name": "atari", "stack": 100}},
            "preprocessing.stack: 100: Input should be less than or equal to 16",
        ),
        ({"env_id": "CartPole-v1", "action": "argmax"}, "deterministic: required field is missing"),
        (
            {"env_id": "CartPole-v1", "action": "sample", "deterministic": True},
            "action 'sample' draws actions at random, so 'deterministic' must be false",
        ),
        ({"env_id": "CartPole-v1", "action": "argmax", "deterministic": True, "version": 2}, "version: 2"),
    ],
    ids=["unknown_field", "unknown_action", "unknown_preprocessing", "unknown_argument", "argument_out_of_range",
         "missing_field", "sampling_said_deterministic", "future_version"],
)
def test_an_invalid_descriptor_is_refused_naming_the_field_and_the_allowed_values(document: object, message: str) -> None:
    with pytest.raises(DescriptorError) as refused:
        _parse(document)
    assert str(refused.value).startswith("invalid agent descriptor: ")
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"{not json", "is not valid JSON"), (b"[1, 2]", "must be a JSON object, not list"), (b" " * 70_000, "bytes; the limit is")],
    ids=["not_json", "not_an_object", "too_long"],
)
def test_a_descriptor_that_is_not_a_json_object_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(DescriptorError, match=message):
        AgentDescriptor.from_json(data)


def test_the_descriptor_lives_beside_the_model_and_a_missing_one_says_how_to_make_it(tmp_path: Path) -> None:
    assert descriptor_path_for(tmp_path / "agent.onnx") == str(tmp_path / "agent.json")
    with pytest.raises(DescriptorError, match="palaestra agent pack` writes one beside the model"):
        load_descriptor(tmp_path / "agent.json")
