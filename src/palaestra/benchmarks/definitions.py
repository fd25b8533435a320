"""The registered benchmarks: the twelve of 2017 (spec §5.2) and their current equivalents.

The 2017 definitions are kept exactly as written, ids, floors, ceilings and budgets included (also
``Mujoco10M-v0``'s 1,000,000 steps and ``PrivateEyeNoFrameskip-v4``'s floor above its ceiling), so
that 2017 runs score as they did, and they run on the 2017 env ids that palaestra registers
(:mod:`palaestra.envs.legacy`: ``Pendulum-v0``, and the MuJoCo ``-v1`` ids where MuJoCo is
installed). Env ids that no installation can make (all of Minecraft) stay in the definitions;
:meth:`Benchmark.unavailable_env_ids` names them and the runner skips them.

Current equivalents re-create a 2017 benchmark with today's env ids and the same tasks, floors,
ceilings and budgets (``equivalent_of`` names the original):

* ``ClassicControl-v1``, ``ClassicControl2-v1``: Pendulum-v0 -> Pendulum-v1.
* ``Mujoco1M-v1``, ``Mujoco10M-v1``: the MuJoCo ``-v1`` ids -> ``-v5`` (needs ``gymnasium[mujoco]``).
* The Atari benchmarks need no new definition: palaestra registers the very ids they use, with their
  2017 semantics (``BreakoutNoFrameskip-v4``, ...: :mod:`palaestra.envs.legacy.atari`), so
  ``Atari40M`` etc. run as they are (needs ``ale-py``, the ``atari`` extra).
* Minecraft has no equivalent (its Malmo-based envs were never part of gym).

The human-normalised Atari benchmarks (:func:`_register_atari_normalised`) score each trial as the
human-normalised mean of its last 100 evaluation episodes (:class:`~.scoring.HumanNormalised`, on the
``atari57`` table of :mod:`palaestra.benchmarks.normalisation`), five trials per game:

* ``Atari-57``: the 57 games of R2D2/Agent57 on ``ALE/{Game}-v5`` (ale-py's protocol: frameskip 4,
  sticky actions 0.25, 108,000-frame cap), 200M frames = 50M agent steps per trial;
* ``Atari-100k``: the 26 games of Kaiser et al. 2020 on ``{Game}NoFrameskip-v4`` (no sticky actions,
  as the 100k papers run them; the agent skips frames, 4 per step), 400,000 frames = 100k agent steps;
* ``Atari-5``: Aitchison et al. 2022's five games (Battle Zone, Double Dunk, Name This Game, Phoenix,
  Q*bert), on the ``Atari-57`` ids and budget.

palaestra adds ``BoardGames-v0`` (Go9x9-v0 and Hex9x9-v0; rewards are +1 win, 0 draw, -1 loss, so
with floor -1 and ceiling 1 the score is the mean over the last 100 evaluation games of 1 per win,
0.5 per draw and 0 per loss).

:data:`CURRENT_EQUIVALENTS` maps every 2017 id to the id to run today (itself for Atari, ``None`` for
Minecraft).
"""

from __future__ import annotations

from typing import Any

from palaestra.benchmarks import normalisation, scoring
from palaestra.benchmarks.registry import register_benchmark

__all__ = ["ATARI_5_GAMES", "ATARI_100K_GAMES", "BENCHMARKS_2017", "CURRENT_EQUIVALENTS", "register_all"]


def _atari(games: list[tuple[str, float, float]], max_timesteps: int) -> list[dict[str, Any]]:
    return [
        {
            "env_id": f"{game}NoFrameskip-v4",
            "trials": 2,
            "max_timesteps": max_timesteps,
            "reward_floor": floor,
            "reward_ceiling": ceiling,
        }
        for game, floor, ceiling in games
    ]


_ATARI7 = [
    ("BeamRider", 363.9, 60000.0),
    ("Breakout", 1.7, 800.0),
    ("Enduro", 0.0, 5000.0),
    ("Pong", -20.7, 21.0),
    ("Qbert", 163.9, 40000.0),
    ("Seaquest", 68.4, 100000.0),
    ("SpaceInvaders", 148.0, 30000.0),
]
_ATARI_EXPLORATION = [
    ("Freeway", 0.1, 31.0),
    ("Gravitar", 245.5, 1000.0),
    ("MontezumaRevenge", 25.0, 10000.0),
    ("Pitfall", -348.8, 1000.0),
    ("PrivateEye", 662.8, 100.0),  # the floor is above the ceiling, as written in 2017
    ("Solaris", 2047.2, 5000.0),
    ("Venture", 18.0, 100.0),
]


def _classic_control(pendulum: str) -> list[dict[str, Any]]:
    return [
        {
            "env_id": "CartPole-v1",
            "trials": 3,
            "max_timesteps": 100000,
            "reward_floor": 0.0,
            "reward_ceiling": 500.0,
        },
        {
            "env_id": "Acrobot-v1",
            "trials": 3,
            "max_timesteps": 100000,
            "reward_floor": -500.0,
            "reward_ceiling": 0.0,
        },
        {
            "env_id": "MountainCar-v0",
            "trials": 3,
            "max_timesteps": 100000,
            "reward_floor": -200.0,
            "reward_ceiling": -100.0,
        },
        {
            "env_id": pendulum,
            "trials": 3,
            "max_timesteps": 200000,
            "reward_floor": -1400.0,
            "reward_ceiling": 0.0,
        },
    ]


def _classic_control2(pendulum: str) -> list[dict[str, Any]]:
    return [
        {"env_id": "CartPole-v0", "trials": 1, "max_timesteps": 2000},
        {"env_id": pendulum, "trials": 1, "max_timesteps": 1000},
    ]


def _mujoco10m(version: str) -> list[dict[str, Any]]:
    names = ["Ant", "Hopper", "Humanoid", "HumanoidStandup", "Walker2d"]
    # 1,000,000 steps, as written in 2017 despite the name
    return [{"env_id": f"{n}-{version}", "trials": 1, "max_timesteps": 1000000} for n in names]


def _mujoco1m(version: str) -> list[dict[str, Any]]:
    tasks = [
        ("HalfCheetah", -280.0, 4000.0),
        ("Hopper", 16.0, 4000.0),
        ("InvertedDoublePendulum", 53.0, 10000.0),
        ("InvertedPendulum", 5.6, 1000.0),
        ("Reacher", -43.0, -0.5),
        ("Swimmer", 0.23, 500.0),
        ("Walker2d", 1.6, 5500.0),
    ]
    return [
        {
            "env_id": f"{n}-{version}",
            "trials": 3,
            "max_timesteps": 1000000,
            "reward_floor": floor,
            "reward_ceiling": ceiling,
        }
        for n, floor, ceiling in tasks
    ]


def _minecraft(tasks: list[tuple[str, int, int, float, float]]) -> list[dict[str, Any]]:
    return [
        {
            "env_id": env_id,
            "trials": trials,
            "max_timesteps": steps,
            "reward_floor": floor,
            "reward_ceiling": ceiling,
        }
        for env_id, trials, steps, floor, ceiling in tasks
    ]


#: The twelve 2017 benchmark ids, in 2017's registration order.
BENCHMARKS_2017 = (
    "Atari200M",
    "Atari40M",
    "AtariExploration40M",
    "ClassicControl2-v0",
    "ClassicControl-v0",
    "Mujoco10M-v0",
    "Mujoco1M-v0",
    "MinecraftEasy-v0",
    "MinecraftMedium-v0",
    "MinecraftHard-v0",
    "MinecraftVeryHard-v0",
    "MinecraftImpossible-v0",
)

#: 2017 benchmark id -> the id to run today (the same id when its env ids still exist; None: no equivalent).
CURRENT_EQUIVALENTS: dict[str, str | None] = {
    "Atari200M": "Atari200M",
    "Atari40M": "Atari40M",
    "AtariExploration40M": "AtariExploration40M",
    "ClassicControl2-v0": "ClassicControl2-v1",
    "ClassicControl-v0": "ClassicControl-v1",
    "Mujoco10M-v0": "Mujoco10M-v1",
    "Mujoco1M-v0": "Mujoco1M-v1",
    "MinecraftEasy-v0": None,
    "MinecraftMedium-v0": None,
    "MinecraftHard-v0": None,
    "MinecraftVeryHard-v0": None,
    "MinecraftImpossible-v0": None,
}


def _register_2017() -> None:
    atari_description = "7 Atari games, with pixel observations"
    register_benchmark(
        id="Atari200M",
        scorer=scoring.TotalReward(),
        name="Atari200M",
        view_group="Atari",
        description=atari_description,
        tasks=_atari(_ATARI7, int(2e8)),
    )
    register_benchmark(
        id="Atari40M",
        scorer=scoring.TotalReward(),
        name="Atari40M",
        view_group="Atari",
        description=atari_description,
        tasks=_atari(_ATARI7, int(4e7)),
    )
    register_benchmark(
        id="AtariExploration40M",
        scorer=scoring.TotalReward(),
        name="AtariExploration40M",
        view_group="Atari",
        description=atari_description,
        tasks=_atari(_ATARI_EXPLORATION, int(4e7)),
    )
    register_benchmark(
        id="ClassicControl2-v0",
        name="ClassicControl2",
        view_group="Control",
        description="Simple classic control benchmark",
        scorer=scoring.ClipTo01ThenAverage(),
        tasks=_classic_control2("Pendulum-v0"),
    )
    register_benchmark(
        id="ClassicControl-v0",
        name="ClassicControl",
        view_group="Control",
        description="Simple classic control benchmark",
        scorer=scoring.ClipTo01ThenAverage(),
        tasks=_classic_control("Pendulum-v0"),
    )
    register_benchmark(
        id="Mujoco10M-v0",
        name="Mujoco10M",
        view_group="Control",
        description="Mujoco benchmark with 10M steps",
        scorer=scoring.ClipTo01ThenAverage(),
        tasks=_mujoco10m("v1"),
    )
    register_benchmark(
        id="Mujoco1M-v0",
        name="Mujoco1M",
        view_group="Control",
        description="Mujoco benchmark with 1M steps",
        scorer=scoring.ClipTo01ThenAverage(),
        tasks=_mujoco1m("v1"),
    )
    minecraft: list[tuple[str, str, str, list[tuple[str, int, int, float, float]]]] = [
        (
            "MinecraftEasy-v0",
            "MinecraftEasy",
            "Minecraft easy benchmark",
            [
                ("MinecraftBasic-v0", 2, 600000, -2200.0, 1000.0),
                ("MinecraftDefaultFlat1-v0", 2, 2000000, -500.0, 0.0),
                ("MinecraftTrickyArena1-v0", 2, 300000, -1000.0, 2800.0),
                ("MinecraftEating1-v0", 2, 300000, -300.0, 300.0),
            ],
        ),
        (
            "MinecraftMedium-v0",
            "MinecraftMedium",
            "Minecraft medium benchmark",
            [
                ("MinecraftCliffWalking1-v0", 2, 400000, -100.0, 100.0),
                ("MinecraftVertical-v0", 2, 900000, -1000.0, 8040.0),
                ("MinecraftMaze1-v0", 2, 600000, -1000.0, 1000.0),
                ("MinecraftMaze2-v0", 2, 2000000, -1000.0, 1000.0),
            ],
        ),
        (
            "MinecraftHard-v0",
            "MinecraftHard",
            "Minecraft hard benchmark",
            [
                ("MinecraftObstacles-v0", 1, 900000, -1000.0, 2080.0),
                ("MinecraftSimpleRoomMaze-v0", 1, 900000, -1000.0, 4160.0),
                ("MinecraftAttic-v0", 1, 600000, -1000.0, 1040.0),
                ("MinecraftComplexityUsage-v0", 1, 600000, -1000.0, 1000.0),
            ],
        ),
        (
            "MinecraftVeryHard-v0",
            "MinecraftVeryHard",
            "Minecraft very hard benchmark",
            [
                ("MinecraftMedium-v0", 2, 1800000, -10000.0, 16280.0),
                ("MinecraftHard-v0", 2, 2400000, -10000.0, 32640.0),
            ],
        ),
        (
            "MinecraftImpossible-v0",
            "MinecraftImpossible",
            "Minecraft impossible benchmark",
            [
                ("MinecraftDefaultWorld1-v0", 2, 6000000, -1000.0, 1000.0),
            ],
        ),
    ]
    for bench_id, name, description, tasks in minecraft:
        register_benchmark(
            id=bench_id,
            name=name,
            view_group="Minecraft",
            description=description,
            scorer=scoring.ClipTo01ThenAverage(),
            tasks=_minecraft(tasks),
        )


def _register_current() -> None:
    register_benchmark(
        id="ClassicControl2-v1",
        name="ClassicControl2-current",
        view_group="Control",
        description="ClassicControl2-v0 on today's env ids (Pendulum-v1)",
        scorer=scoring.ClipTo01ThenAverage(),
        tasks=_classic_control2("Pendulum-v1"),
        equivalent_of="ClassicControl2-v0",
    )
    register_benchmark(
        id="ClassicControl-v1",
        name="ClassicControl-current",
        view_group="Control",
        description="ClassicControl-v0 on today's env ids: CartPole-v1, Acrobot-v1, MountainCar-v0, "
        "Pendulum-v1",
        scorer=scoring.ClipTo01ThenAverage(),
        tasks=_classic_control("Pendulum-v1"),
        equivalent_of="ClassicControl-v0",
    )
    register_benchmark(
        id="Mujoco10M-v1",
        name="Mujoco10M-current",
        view_group="Control",
        description="Mujoco10M-v0 on Gymnasium's MuJoCo v5 envs (1M steps per task, as in 2017)",
        scorer=scoring.ClipTo01ThenAverage(),
        tasks=_mujoco10m("v5"),
        equivalent_of="Mujoco10M-v0",
    )
    register_benchmark(
        id="Mujoco1M-v1",
        name="Mujoco1M-current",
        view_group="Control",
        description="Mujoco1M-v0 on Gymnasium's MuJoCo v5 envs",
        scorer=scoring.ClipTo01ThenAverage(),
        tasks=_mujoco1m("v5"),
        equivalent_of="Mujoco1M-v0",
    )
    register_benchmark(
        id="BoardGames-v0",
        name="BoardGames",
        view_group="Board games",
        description="Go 9x9 and Hex 9x9 against the envs' default opponents; score = mean over the "
        "last 100 evaluation games of 1 per win, 0.5 per draw, 0 per loss",
        scorer=scoring.ClipTo01ThenAverage(),
        tasks=[
            {
                "env_id": "Go9x9-v0",
                "trials": 2,
                "max_timesteps": 100000,
                "reward_floor": -1.0,
                "reward_ceiling": 1.0,
            },
            {
                "env_id": "Hex9x9-v0",
                "trials": 2,
                "max_timesteps": 100000,
                "reward_floor": -1.0,
                "reward_ceiling": 1.0,
            },
        ],
    )


#: The 26 games of Atari 100k (Kaiser et al. 2020, "Model-based reinforcement learning for Atari").
ATARI_100K_GAMES = (
    "alien", "amidar", "assault", "asterix", "bank_heist", "battle_zone", "boxing", "breakout",
    "chopper_command", "crazy_climber", "demon_attack", "freeway", "frostbite", "gopher", "hero",
    "jamesbond", "kangaroo", "krull", "kung_fu_master", "ms_pacman", "pong", "private_eye", "qbert",
    "road_runner", "seaquest", "up_n_down",
)  # fmt: skip
#: Atari-5 (Aitchison et al. 2022, "Atari-5: Distilling the Arcade Learning Environment down to Five Games").
ATARI_5_GAMES = ("battle_zone", "double_dunk", "name_this_game", "phoenix", "qbert")
#: 200M frames, the Atari-57 budget since DQN, in agent steps of the v5 ids (4 frames each).
ATARI_200M_FRAMES_IN_V5_STEPS = 50_000_000
#: 100k agent steps of 4 frames: the Monitor of a NoFrameskip id counts frames.
ATARI_100K_FRAMES = 400_000
ATARI_TRIALS = 5


def _human_normalised_tasks(
    games: tuple[str, ...], env_id_format: str, max_timesteps: int, table_name: str
) -> list[dict[str, Any]]:
    chosen = normalisation.table(table_name)
    return [
        {
            "env_id": env_id_format.format(name=normalisation.game_name(game)),
            "trials": ATARI_TRIALS,
            "max_timesteps": max_timesteps,
            "reward_floor": chosen.scores_of(game).random,
            "reward_ceiling": chosen.scores_of(game).human,
        }
        for game in games
    ]


def _register_atari_normalised(table_name: str = normalisation.DEFAULT_TABLE) -> None:
    scorer = scoring.HumanNormalised(table=table_name)
    label = normalisation.table(table_name).label
    register_benchmark(
        id="Atari-57",
        name="Atari-57",
        view_group="Atari",
        description=f"The 57 Atari games of R2D2 and Agent57 on ale-py's v5 ids, 200M frames (50M steps) "
        f"per trial; human-normalised scores ({label})",
        scorer=scorer,
        tasks=_human_normalised_tasks(
            normalisation.table(table_name).games, "ALE/{name}-v5", ATARI_200M_FRAMES_IN_V5_STEPS, table_name
        ),
    )
    register_benchmark(
        id="Atari-100k",
        name="Atari-100k",
        view_group="Atari",
        description="The 26 games of Atari 100k: 100k agent steps (400k frames of the NoFrameskip-v4 ids, "
        f"no sticky actions) per trial; human-normalised scores ({label})",
        scorer=scorer,
        tasks=_human_normalised_tasks(ATARI_100K_GAMES, "{name}NoFrameskip-v4", ATARI_100K_FRAMES, table_name),
    )
    register_benchmark(
        id="Atari-5",
        name="Atari-5",
        view_group="Atari",
        description="Aitchison et al. 2022's five games that predict Atari-57 (Battle Zone, Double Dunk, "
        f"Name This Game, Phoenix, Q*bert), as Atari-57 runs them; human-normalised scores ({label})",
        scorer=scorer,
        tasks=_human_normalised_tasks(ATARI_5_GAMES, "ALE/{name}-v5", ATARI_200M_FRAMES_IN_V5_STEPS, table_name),
    )


def register_all() -> None:
    """Register every built-in benchmark (done once, on import of :mod:`palaestra.benchmarks`)."""
    _register_2017()
    _register_current()
    _register_atari_normalised()
