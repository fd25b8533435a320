"""The human-normalised Atari benchmarks: their definitions, and a real short Atari-5 run recorded by the
Monitor, scored by ``benchmark_score_from_local`` and ``palaestra benchmark score``, giving the
statistics module's numbers on the human-normalised trial scores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import palaestra
from palaestra.benchmarks import benchmark_score_from_local, normalisation, registry, statistics
from palaestra.benchmarks.definitions import ATARI_5_GAMES, ATARI_100K_GAMES
from palaestra.benchmarks.scoring import HumanNormalised
from palaestra.errors import Error

ATARI_5_IDS = [
    "ALE/BattleZone-v5",
    "ALE/DoubleDunk-v5",
    "ALE/NameThisGame-v5",
    "ALE/Phoenix-v5",
    "ALE/Qbert-v5",
]
RECORDED_TRIALS = 3  # of Atari-5's five: the other two score null (0, random play)
REPS = 2000


def test_the_atari_benchmarks_are_defined_on_the_named_table() -> None:
    table = normalisation.table("atari57")
    a57, a100k, a5 = (registry.benchmarks[b] for b in ("Atari-57", "Atari-100k", "Atari-5"))
    assert [t.env_id for t in a57.tasks] == [f"ALE/{normalisation.game_name(g)}-v5" for g in table.games]
    assert len(a57.tasks) == 57 and len(a100k.tasks) == 26 and len(a5.tasks) == 5
    assert a5.env_id_order == ATARI_5_IDS and tuple(
        normalisation.game_of(e) for e in ATARI_5_IDS
    ) == ATARI_5_GAMES
    assert [t.env_id for t in a100k.tasks][:2] == ["AlienNoFrameskip-v4", "AmidarNoFrameskip-v4"]
    assert {normalisation.game_of(t.env_id) for t in a100k.tasks} == set(ATARI_100K_GAMES)
    for bench, steps in ((a57, 50_000_000), (a100k, 400_000), (a5, 50_000_000)):
        assert isinstance(bench.scorer, HumanNormalised) and bench.scorer.table == "atari57"
        for task in bench.tasks:
            game = normalisation.game_of(task.env_id)
            assert game is not None
            assert (task.reward_floor, task.reward_ceiling) == (
                table.scores[game].random,
                table.scores[game].human,
            )
            assert task.trials == 5 and task.max_timesteps == steps


@pytest.fixture(scope="module")
def atari5_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("ale_py")
    from tests.benchmarks.atari_recordings import record_atari_run

    return record_atari_run(tmp_path_factory.mktemp("atari5"), ATARI_5_IDS, RECORDED_TRIALS)


def _expected_table(run: Path) -> dict[str, list[float]]:
    """Per env id, each trial's human-normalised mean of its evaluation episodes, null for missing trials."""
    table = normalisation.table("atari57")
    out: dict[str, list[float]] = {}
    for env_id in ATARI_5_IDS:
        scores = []
        for trial in range(5):
            directory = run / f"{env_id}-{trial}"
            if not directory.exists():
                scores.append(0.0)
                continue
            results = palaestra.load_results(directory)
            rewards = [
                r
                for r, t in zip(results["episode_rewards"], results["episode_types"], strict=True)
                if t == "e"
            ]
            assert len(rewards) == 2
            game = normalisation.game_of(env_id)
            assert game is not None
            scores.append(table.normalise(game, float(np.mean(rewards))))
        out[env_id] = scores
    return out


def test_an_atari5_run_scores_the_statistics_modules_numbers(atari5_run: Path) -> None:
    result = benchmark_score_from_local("Atari-5", atari5_run, reps=REPS)
    expected = _expected_table(atari5_run)
    assert [t["env_id"] for t in result["tasks"]] == ATARI_5_IDS
    for task in result["tasks"]:
        assert task["trial_scores"] == pytest.approx(expected[task["env_id"]])
        assert task["trials_submitted"] == RECORDED_TRIALS and task["env_solved"] is False
    assert any(s != 0.0 for scores in expected.values() for s in scores), "some game scored off random"
    assert result["score"] == pytest.approx(np.mean([s for v in expected.values() for s in v]))

    stats = result["statistics"]
    intervals = statistics.interval_estimates(expected, reps=REPS, seed=0)
    for name in ("iqm", "mean", "median", "optimality_gap"):
        assert stats[name] == pytest.approx(intervals[name].to_dict()), name
    profile = statistics.performance_profile(expected, taus=np.linspace(0, 8, 81), reps=REPS, seed=0)
    assert stats["profile"]["taus"] == pytest.approx(list(np.linspace(0, 8, 81)))
    for key, values in profile.to_dict().items():
        assert stats["profile"][key] == pytest.approx(values), key
    assert stats["normalisation"]["table"] == "atari57" and stats["normalisation"]["version"] == 1


def test_benchmark_score_prints_the_human_normalised_statistics(atari5_run: Path) -> None:
    def score(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "palaestra", "benchmark", "score", str(atari5_run), "--benchmark", "Atari-5",
             "--reps", str(REPS), *extra],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    shown, as_json = score(), score("--json")
    assert shown.returncode == 0 and as_json.returncode == 0, shown.stderr + as_json.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split()[:4] == ["task", "trials", "random", "human"]
    assert any(line.startswith("ALE/Qbert-v5 ") and "3/5" in line and "163.9" in line for line in lines)
    assert "human-normalised (0 = random play, 1 = human) with the atari57 v1 table" in shown.stdout
    result = json.loads(as_json.stdout)
    stats = result["statistics"]
    for name, label in (("iqm", "IQM"), ("median", "median"), ("optimality_gap", "optimality gap")):
        line = next(line for line in lines if line.strip().startswith(label + " "))
        assert f"{stats[name]['value']:.3f}  [{stats[name]['low']:.3f}, {stats[name]['high']:.3f}]" in line
    profile_at_1 = next(line for line in lines if line.strip().startswith("tau = 1 "))
    assert f"{stats['profile']['fraction'][10]:.3f}" in profile_at_1


def test_a_scorer_on_an_unknown_table_is_refused_with_the_known_ones() -> None:
    with pytest.raises(Error, match="No score normalisation table 'atari58'; the tables are: atari57, dqn2015"):
        HumanNormalised(table="atari58")
    assert HumanNormalised(table="dqn2015").table == "dqn2015"


def test_a_trial_without_a_finished_episode_scores_random_play() -> None:
    bench = registry.benchmarks["Atari-5"]
    empty = {"episode_lengths": [], "episode_rewards": [], "timestamps": [], "initial_reset_timestamp": 1.0}
    assert bench.score_results("ALE/Qbert-v5", empty)["scores"] == [0.0]
    above_human = {
        "episode_lengths": [10],
        "episode_rewards": [26746.1],
        "timestamps": [2.0],
        "episode_types": ["e"],
    }
    scored = bench.score_results("ALE/Qbert-v5", above_human)
    assert scored["scores"] == [pytest.approx(2.0)], "not clipped: twice the human score's margin is 2"
    assert bool(scored["solves"][0][0]) is True
