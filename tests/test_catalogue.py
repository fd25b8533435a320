"""The environment catalogue: one source of groups, thresholds and trials."""

from __future__ import annotations

import pytest

from palaestra import catalogue


def test_gymnasium_envs_carry_their_registry_threshold():
    entry = catalogue.lookup("CartPole-v1")
    assert entry is not None
    assert (entry.group, entry.reward_threshold, entry.trials, entry.available) == ("classic_control", 475.0, 100, True)
    assert entry.solving_rule == (
        "CartPole-v1 defines solving as an average reward of 475.0 over 100 consecutive episodes."
    )


def test_2017_ids_that_no_longer_exist_keep_their_2017_threshold():
    entry = catalogue.lookup("FrozenLake-v0")
    assert entry is not None and entry.reward_threshold == 0.78 and not entry.available
    assert catalogue.lookup("Copy-v0").group == "algorithmic"  # type: ignore[union-attr]


def test_unknown_env_is_unlisted_and_scored_without_threshold():
    assert catalogue.lookup("MyOwnEnv-v3") is None
    assert catalogue.solving_criteria("MyOwnEnv-v3") == (100, None)


def test_atari_ids_are_grouped_when_ale_py_is_installed():
    pytest.importorskip("ale_py")
    entry = catalogue.lookup("PongNoFrameskip-v4")
    assert entry is not None and entry.group == "atari" and "Pong" in entry.summary
    assert catalogue.lookup("ALE/Pong-v5") is not None


def test_entries_by_group_and_bad_group():
    classic = catalogue.entries("classic_control")
    assert classic and all(e.group == "classic_control" for e in classic)
    with pytest.raises(ValueError, match="Unknown group 'nope'"):
        catalogue.entries("nope")


def test_unsolved_env_says_so():
    entry = catalogue.lookup("Pendulum-v1")
    assert entry is not None and entry.reward_threshold is None
    assert "no reward threshold" in entry.solving_rule
