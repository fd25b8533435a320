"""Board-game agent artifacts: a Go model's scores become its best legal move (the illegal ones
masked), it plays a match as ``onnx:PATH`` (``palaestra match``'s player spec), and a model that does
not fit refuses to load with the problem named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from palaestra.agents.artifact import AgentDescriptor, check_artifact_bytes
from palaestra.agents.artifact.board import board_policy, is_board_game
from palaestra.agents.artifact.examples import go_model, write_agent
from palaestra.errors import Error
from palaestra.ladder.match import play_match, read_match, rules_of_env
from palaestra.ladder.players import make_player, parse_player

pytest.importorskip("onnxruntime")
pytest.importorskip("pyspiel")

GO = AgentDescriptor(env_id="Go9x9-v0", action="argmax", deterministic=True)


def test_a_go_model_plays_its_best_legal_move_and_never_an_illegal_one() -> None:
    model = go_model()
    policy = board_policy(model, GO, check_artifact_bytes(model, GO))
    empty = np.zeros((3, 9, 9), np.float32)
    empty[2] = 1.0
    everything = np.ones(83, bool)
    favourite = policy(empty, everything)
    assert 0 <= favourite < 81  # a point: pass and resign are scored last
    without = everything.copy()
    without[favourite] = False
    assert policy(empty, without) != favourite
    only_pass_or_resign = np.zeros(83, bool)
    only_pass_or_resign[81:] = True
    assert policy(empty, only_pass_or_resign) == 81  # it passes rather than resigns
    assert is_board_game("Go9x9-v0") and is_board_game("Hex11x11-v0") and not is_board_game("CartPole-v1")


def test_an_onnx_artifact_plays_a_match_as_a_player_spec(tmp_path: Path) -> None:
    model, _ = write_agent(go_model(), GO, tmp_path / "go.onnx")
    games = play_match(
        rules_of_env("Go9x9-v0"), parse_player(f"mine=onnx:{model}"), parse_player("random"), 2, tmp_path / "match",
        move_time=30.0,
    )  # fmt: skip
    assert [g.reason for g in games] != ["forfeit", "forfeit"] and all(g.moves > 20 for g in games)
    assert {p["name"] for p in read_match(tmp_path / "match")["players"]} == {"mine", "random"}


def test_an_onnx_player_whose_model_does_not_fit_the_board_is_refused_naming_the_sizes(tmp_path: Path) -> None:
    model, _ = write_agent(go_model(actions=82), GO, tmp_path / "go.onnx")
    with pytest.raises(Error, match=r"\[batch, 82\].*'Go9x9-v0': 83"):
        make_player(parse_player(f"onnx:{model}"), rules_of_env("Go9x9-v0").make(), 10.0)
