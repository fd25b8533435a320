"""The benchmark registry: 2017 definitions and semantics, current equivalents, availability."""

from __future__ import annotations

import importlib.util

import gymnasium
import pytest

from palaestra.benchmarks import (
    BENCHMARKS_2017,
    CURRENT_EQUIVALENTS,
    Benchmark,
    ClipTo01ThenAverage,
    Registry,
    Task,
    TotalReward,
    benchmark_spec,
    registry,
)
from palaestra.errors import Error, Unregistered, UnregisteredBenchmark


def test_all_twelve_2017_benchmarks_are_registered_as_written() -> None:
    assert len(BENCHMARKS_2017) == 12
    for bench_id in BENCHMARKS_2017:
        assert benchmark_spec(bench_id).id == bench_id
    atari = benchmark_spec("Atari40M")
    assert isinstance(atari.scorer, TotalReward)
    assert [(t.env_id, t.trials, t.max_timesteps, t.reward_floor, t.reward_ceiling) for t in atari.tasks][
        3
    ] == ("PongNoFrameskip-v4", 2, 40_000_000, -20.7, 21.0)
    assert benchmark_spec("Atari200M").tasks[0].max_timesteps == 200_000_000
    private_eye = benchmark_spec("AtariExploration40M").task_specs("PrivateEyeNoFrameskip-v4")[0]
    assert (private_eye.reward_floor, private_eye.reward_ceiling) == (662.8, 100.0)  # as written in 2017
    cc2 = benchmark_spec("ClassicControl2-v0")
    assert [(t.env_id, t.trials, t.max_timesteps, t.reward_floor, t.reward_ceiling) for t in cc2.tasks] == [
        ("CartPole-v0", 1, 2000, 0.0, 100.0),
        ("Pendulum-v0", 1, 1000, 0.0, 100.0),
    ]
    assert {t.max_timesteps for t in benchmark_spec("Mujoco10M-v0").tasks} == {1_000_000}
    reacher = benchmark_spec("Mujoco1M-v0").task_specs("Reacher-v1")[0]
    assert (reacher.trials, reacher.reward_floor, reacher.reward_ceiling) == (3, -43.0, -0.5)
    assert benchmark_spec("MinecraftImpossible-v0").tasks[0].max_timesteps == 6_000_000
    groups = {
        bench_id: registry.benchmark_views[benchmark_spec(bench_id).name or bench_id].group
        for bench_id in BENCHMARKS_2017
    }
    assert groups["Atari40M"] == "Atari" and groups["ClassicControl-v0"] == "Control"
    assert groups["MinecraftHard-v0"] == "Minecraft"


def test_vanished_envs_are_kept_and_marked_unavailable() -> None:
    # the 2017 registry (palaestra.envs.legacy) brings Pendulum-v0 and the MuJoCo -v1 ids back
    assert benchmark_spec("ClassicControl-v0").unavailable_env_ids() == []
    mujoco = importlib.util.find_spec("mujoco") is not None
    assert benchmark_spec("Mujoco1M-v0").available is mujoco
    reasons = benchmark_spec("MinecraftEasy-v0").unavailable_reasons()
    assert len(reasons) == 4 and all("not registered" in why for why in reasons.values())
    assert Task("Nope-v9", 1, 10, None).available is False


def test_current_equivalents_use_todays_env_ids() -> None:
    cc = benchmark_spec("ClassicControl-v1")
    assert [t.env_id for t in cc.tasks] == ["CartPole-v1", "Acrobot-v1", "MountainCar-v0", "Pendulum-v1"]
    assert cc.available and cc.equivalent_of == "ClassicControl-v0"
    mujoco = benchmark_spec("Mujoco1M-v1")
    assert all(t.env_id.endswith("-v5") for t in mujoco.tasks)
    for old_id, new_id in CURRENT_EQUIVALENTS.items():
        if new_id is None:
            continue
        old, new = benchmark_spec(old_id), benchmark_spec(new_id)
        assert [(t.trials, t.max_timesteps, t.reward_floor, t.reward_ceiling) for t in old.tasks] == [
            (t.trials, t.max_timesteps, t.reward_floor, t.reward_ceiling) for t in new.tasks
        ]
        for task in new.tasks:  # registered today (MuJoCo may still need its extra)
            assert task.env_id in gymnasium.registry or task.env_id.endswith("NoFrameskip-v4"), task.env_id
    board = benchmark_spec("BoardGames-v0")
    assert [t.env_id for t in board.tasks] == ["Go9x9-v0", "Hex9x9-v0"]
    assert {(t.reward_floor, t.reward_ceiling) for t in board.tasks} == {(-1.0, 1.0)}


def test_task_and_benchmark_semantics() -> None:
    with pytest.raises(Error, match="Must provide at least one of max_timesteps and max_seconds"):
        Task("CartPole-v1", 1, None, None)
    with pytest.raises(Error, match="equal"):
        Task("CartPole-v1", 1, 10, None, 5.0, 5.0)
    bench = Benchmark(
        "T",
        ClipTo01ThenAverage(),
        [
            {"env_id": "A-v0", "trials": 2, "max_timesteps": 10},
            {"env_id": "B-v0", "trials": 1, "max_seconds": 5.0, "reward_floor": -1, "reward_ceiling": 1},
            {"env_id": "A-v0", "trials": 2, "max_timesteps": 20},
        ],
    )
    assert bench.env_ids == {"A-v0", "B-v0"} and bench.env_id_order == ["A-v0", "B-v0"]
    assert [t.max_timesteps for t in bench.task_specs("A-v0")] == [10, 20]
    assert (bench.tasks[0].reward_floor, bench.tasks[0].reward_ceiling) == (0.0, 100.0)  # 2017 defaults
    assert str(bench.tasks[1]).startswith("Task<env_id=B-v0 trials=1")
    with pytest.raises(Unregistered, match="No task with env_id C-v0 registered for benchmark T"):
        bench.task_specs("C-v0")
    with pytest.raises(Error, match="needs 'env_id' and 'trials'"):
        Benchmark("U", ClipTo01ThenAverage(), [{"env_id": "A-v0"}])


def test_registry_views_and_errors() -> None:
    reg = Registry()
    reg.register_benchmark("One-v0", TotalReward(), [{"env_id": "A-v0", "trials": 1, "max_timesteps": 1}])
    reg.register_benchmark(
        "Two-v0",
        TotalReward(),
        [{"env_id": "A-v0", "trials": 1, "max_timesteps": 1}],
        name="Two",
        view_group="G",
    )
    assert reg.benchmark_views["One-v0"].group == "Miscellaneous"
    assert reg.benchmark_views["Two"] == ("Two", ["Two-v0"], "Two-v0", "G")
    reg.register_benchmark(
        "Two-v0",
        TotalReward(),
        [{"env_id": "B-v0", "trials": 1, "max_timesteps": 1}],
        name="Two",
        view_group="H",
    )
    assert "G" not in reg.benchmark_view_groups and [v.name for v in reg.benchmark_view_groups["H"]] == [
        "Two"
    ]
    assert reg.benchmark_spec("Two-v0").env_ids == {"B-v0"}
    reg.register_benchmark(
        "Hidden-v0", TotalReward(), [{"env_id": "A-v0", "trials": 1, "max_timesteps": 1}], add_view=False
    )
    assert "Hidden-v0" not in reg.benchmark_views
    with pytest.raises(UnregisteredBenchmark, match="No registered benchmark with id: Nope"):
        reg.benchmark_spec("Nope")
    with pytest.raises(Error, match="letters, numbers"):
        reg.register_benchmark_view("bad name!", ["One-v0"], "One-v0", None)
    with pytest.raises(Error, match="primary"):
        reg.register_benchmark_view("V", ["One-v0"], "Two-v0", None)


def test_palaestra_exposes_benchmark_spec() -> None:
    import palaestra

    assert palaestra.benchmark_spec("Atari40M") is benchmark_spec("Atari40M")
