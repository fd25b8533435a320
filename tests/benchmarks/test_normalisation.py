"""The human-normalisation tables: the games and counts they claim, the formula on their numbers, and the
map from Atari env ids (the 2017 registry's rows, ale-py's registrations) to their games."""

from __future__ import annotations

import json
from importlib import resources

import gymnasium
import pytest

from palaestra.benchmarks import normalisation
from palaestra.envs.legacy import atari as legacy_atari
from palaestra.errors import Error

# The 49 games of Mnih et al. 2015 (Extended Data Table 2), by ale-py ROM id.
DQN_GAMES = {
    "alien", "amidar", "assault", "asterix", "asteroids", "atlantis", "bank_heist", "battle_zone",
    "beam_rider", "bowling", "boxing", "breakout", "centipede", "chopper_command", "crazy_climber",
    "demon_attack", "double_dunk", "enduro", "fishing_derby", "freeway", "frostbite", "gopher", "gravitar",
    "hero", "ice_hockey", "jamesbond", "kangaroo", "krull", "kung_fu_master", "montezuma_revenge",
    "ms_pacman", "name_this_game", "pong", "private_eye", "qbert", "riverraid", "road_runner", "robotank",
    "seaquest", "space_invaders", "star_gunner", "tennis", "time_pilot", "tutankham", "up_n_down",
    "venture", "video_pinball", "wizard_of_wor", "zaxxon",
}  # fmt: skip
# Atari-57 adds these 8 to DQN's 49.
ATARI57_EXTRA = {"berzerk", "defender", "phoenix", "pitfall", "skiing", "solaris", "surround", "yars_revenge"}


def test_the_tables_have_the_games_and_count_they_claim() -> None:
    dqn, a57 = normalisation.table("dqn2015"), normalisation.table("atari57")
    assert set(dqn.games) == DQN_GAMES and len(dqn.games) == 49
    assert set(a57.games) == DQN_GAMES | ATARI57_EXTRA and len(a57.games) == 57
    for name in normalisation.table_names():
        raw = json.loads(resources.files(normalisation).joinpath(f"{name}.json").read_text())
        chosen = normalisation.table(name)
        assert raw["game_count"] == len(chosen.games) and raw["name"] == name
        assert chosen.label == f"{name} v{raw['version']}"
        assert chosen.citation and chosen.table and chosen.url.startswith("https://")
        assert all(pair.human > pair.random for pair in chosen.scores.values()), "higher is better everywhere"
    assert normalisation.DEFAULT_TABLE == "atari57" and normalisation.table() is a57


def test_a_known_mean_normalises_to_the_formula_on_the_named_tables_values() -> None:
    # Pong: random -20.7 in both tables; human 14.6 (atari57) and 9.3 (dqn2015)
    for env_id in ("ALE/Pong-v5", "PongNoFrameskip-v4", "Pong-ramDeterministic-v0"):
        score = normalisation.human_normalised(env_id, 0.0)
        assert score is not None and score.game == "pong" and score.table == "atari57"
        assert score.value == pytest.approx((0.0 - -20.7) / (14.6 - -20.7))
    old = normalisation.human_normalised("ALE/Pong-v5", 0.0, "dqn2015")
    assert old is not None and old.value == pytest.approx(20.7 / (9.3 + 20.7)) and old.version == 1
    # Video Pinball: random 16256.9, human 17667.9 in atari57 (16257 / 17298 in dqn2015, as printed)
    pinball = normalisation.human_normalised("ALE/VideoPinball-v5", 20000.0)
    assert pinball is not None
    assert pinball.value == pytest.approx((20000.0 - 16256.9) / (17667.9 - 16256.9))
    assert normalisation.table("dqn2015").normalise("video_pinball", 20000.0) == pytest.approx(
        (20000 - 16257) / (17298 - 16257)
    )
    # the random score is 0 and the human score 1, for every game of every table
    for name in normalisation.table_names():
        chosen = normalisation.table(name)
        for game, pair in chosen.scores.items():
            assert chosen.normalise(game, pair.random) == 0.0
            assert chosen.normalise(game, pair.human) == pytest.approx(1.0)


def test_games_outside_a_table_and_non_atari_envs_have_no_normalised_score() -> None:
    assert normalisation.human_normalised("ALE/Phoenix-v5", 1000.0) is not None
    assert normalisation.human_normalised("ALE/Phoenix-v5", 1000.0, "dqn2015") is None  # not among the 49
    assert normalisation.human_normalised("CartPole-v1", 200.0) is None
    assert normalisation.human_normalised("ALE/Pong-v5", None) is None
    assert normalisation.human_normalised("ALE/Pong-v5", float("nan")) is None
    assert normalisation.game_of("ALE/Tetris-v5") is None  # an ale-py game no table scores
    assert (
        normalisation.game_of("ALE/Pong-v4") is None and normalisation.game_of("PongNoFrameskip-v5") is None
    )
    with pytest.raises(Error, match="atari57, dqn2015"):
        normalisation.table("atari200")
    with pytest.raises(Error, match="no scores for the game 'phoenix'"):
        normalisation.table("dqn2015").normalise("phoenix", 1.0)


def test_the_2017_registry_rows_map_to_their_games() -> None:
    scored = set(normalisation.table().games)
    rows = [row for row in legacy_atari.ROWS if row.kwargs["game"] in scored]
    assert len(rows) == 12 * len(scored & set(legacy_atari.GAMES))
    for row in rows:
        assert normalisation.game_of(row.id) == row.kwargs["game"], row.id
        assert row.id in normalisation.env_ids(row.kwargs["game"])


def test_ale_py_registrations_map_to_their_games() -> None:
    pytest.importorskip("ale_py")
    from palaestra import catalogue

    catalogue.register_ale_py()
    scored = set(normalisation.table().games)
    checked = 0
    for env_id, spec in gymnasium.registry.items():
        game = (spec.kwargs or {}).get("game")
        if game in scored:
            assert normalisation.game_of(env_id) == game, env_id
            assert env_id in normalisation.env_ids(game)
            checked += 1
    assert checked >= 57  # an ALE/{Name}-v5 id for every game of the table at least
    for game in scored:
        assert normalisation.env_ids(game)[0] in gymnasium.registry, game
