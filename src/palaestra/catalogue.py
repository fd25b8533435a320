"""The environment catalogue: scoreboard groups, summaries, ``reward_threshold`` and ``trials``.

One source for ``palaestra envs``, ``palaestra results``, the benchmarks and the scoreboard. It is
built from Gymnasium's registry (Gymnasium's own environments, ale-py's when installed, palaestra's
board games) and completed with the 2017 facts (spec §4.5, §8.2) for ids that no longer exist, so
that a 2017 training directory is still scored against its original threshold.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass

import gymnasium

from palaestra.scoring import DEFAULT_TRIALS


@dataclass(frozen=True)
class Group:
    id: str
    name: str
    description: str


@dataclass(frozen=True)
class EnvEntry:
    """What the scoreboard knows about one env id."""

    env_id: str
    group: str
    summary: str
    reward_threshold: float | None
    trials: int = DEFAULT_TRIALS
    max_episode_steps: int | None = None
    #: registered in this installation's Gymnasium registry (can be made and run)
    available: bool = True

    @property
    def solving_rule(self) -> str:
        """The solving rule in words, for pages and ``palaestra envs``."""
        if self.reward_threshold is None:
            return f"{self.env_id} is an unsolved environment: it has no reward threshold for solving."
        return (
            f"{self.env_id} defines solving as an average reward of {self.reward_threshold} "
            f"over {self.trials} consecutive episodes."
        )


GROUPS: tuple[Group, ...] = (
    Group("classic_control", "Classic control", "Classic control problems from the RL literature."),
    Group("toy_text", "Toy text", "Simple text environments to get you started."),
    Group("board_game", "Board games", "Play classic board games against strong opponents."),
    Group("atari", "Atari", "Reach high scores in Atari 2600 games."),
    Group("box2d", "Box2D", "Continuous control tasks in the Box2D simulator."),
    Group("mujoco", "MuJoCo", "Continuous control tasks, running in a fast physics simulator."),
    Group("algorithmic", "Algorithmic", "Learn to imitate computations (2017 environments)."),
    Group("other", "Other", "Other environments registered with Gymnasium."),
)
GROUP_IDS = tuple(g.id for g in GROUPS)

# Entry-point module prefix -> group, for whatever is in Gymnasium's registry.
_ENTRY_POINT_GROUPS = (
    ("gymnasium.envs.classic_control", "classic_control"),
    ("gymnasium.envs.phys2d", "classic_control"),
    ("gymnasium.envs.toy_text", "toy_text"),
    ("gymnasium.envs.tabular", "toy_text"),
    ("gymnasium.envs.box2d", "box2d"),
    ("gymnasium.envs.mujoco", "mujoco"),
    ("ale_py", "atari"),
    ("palaestra.envs.board", "board_game"),
)

_SUMMARIES = {
    "CartPole": "Balance a pole on a cart.",
    "Acrobot": "Swing up a two-link robot.",
    "MountainCar": "Drive up a big hill.",
    "MountainCarContinuous": "Drive up a big hill with continuous control.",
    "Pendulum": "Swing up a pendulum.",
    "FrozenLake": "Find a safe path across a grid of ice and water tiles.",
    "FrozenLake8x8": "Find a safe path across a grid of ice and water tiles.",
    "Taxi": "As a taxi driver, you need to pick up and drop off passengers as fast as possible.",
    "CliffWalking": "Walk along a cliff without falling off.",
    "Blackjack": "Play Blackjack against the dealer.",
    "LunarLander": "Navigate a lander to its landing pad.",
    "LunarLanderContinuous": "Navigate a lander to its landing pad, with continuous control.",
    "BipedalWalker": "Train a bipedal robot to walk.",
    "BipedalWalkerHardcore": "Train a bipedal robot to walk over rough terrain.",
    "CarRacing": "Race a car around a track.",
    "Go9x9": "The ancient game of Go, played on a 9x9 board.",
    "Go13x13": "The ancient game of Go, played on a 13x13 board.",
    "Go19x19": "The ancient game of Go, played on a 19x19 board.",
    "Hex9x9": "Hex played on a 9x9 board.",
    "Hex11x11": "Hex played on an 11x11 board.",
}

# 2017 ids (spec §8.2) that today's registries no longer have, with their group and threshold.
_HISTORICAL: dict[str, tuple[str, float | None, int | None]] = {
    "Copy-v0": ("algorithmic", 25.0, 200),
    "RepeatCopy-v0": ("algorithmic", 75.0, 200),
    "ReversedAddition-v0": ("algorithmic", 25.0, 200),
    "ReversedAddition3-v0": ("algorithmic", 25.0, 200),
    "DuplicatedInput-v0": ("algorithmic", 9.0, 200),
    "Reverse-v0": ("algorithmic", 25.0, 200),
    "CartPole-v0": ("classic_control", 195.0, 200),
    "CartPole-v1": ("classic_control", 475.0, 500),
    "MountainCar-v0": ("classic_control", -110.0, 200),
    "MountainCarContinuous-v0": ("classic_control", 90.0, 999),
    "Pendulum-v0": ("classic_control", None, 200),
    "Acrobot-v1": ("classic_control", None, 500),
    "LunarLander-v2": ("box2d", 200.0, 1000),
    "LunarLanderContinuous-v2": ("box2d", 200.0, 1000),
    "BipedalWalker-v2": ("box2d", 300.0, 1600),
    "BipedalWalkerHardcore-v2": ("box2d", 300.0, 2000),
    "CarRacing-v0": ("box2d", 900.0, 1000),
    "FrozenLake-v0": ("toy_text", 0.78, 100),
    "FrozenLake8x8-v0": ("toy_text", 0.99, 200),
    "Taxi-v2": ("toy_text", 8.0, 200),
    "Blackjack-v0": ("toy_text", None, None),
    "Roulette-v0": ("toy_text", None, 100),
    "NChain-v0": ("toy_text", None, 1000),
    "GuessingGame-v0": ("toy_text", None, 200),
    "HotterColder-v0": ("toy_text", None, 200),
    "Reacher-v1": ("mujoco", -3.75, 50),
    "InvertedPendulum-v1": ("mujoco", 950.0, 1000),
    "InvertedDoublePendulum-v1": ("mujoco", 9100.0, 1000),
    "HalfCheetah-v1": ("mujoco", 4800.0, 1000),
    "Hopper-v1": ("mujoco", 3800.0, 1000),
    "Swimmer-v1": ("mujoco", 360.0, 1000),
    "Walker2d-v1": ("mujoco", None, 1000),
    "Ant-v1": ("mujoco", 6000.0, 1000),
    "Humanoid-v1": ("mujoco", None, 1000),
    "HumanoidStandup-v1": ("mujoco", None, 1000),
    "Go9x9-v0": ("board_game", None, None),
    "Go19x19-v0": ("board_game", None, None),
    "Hex9x9-v0": ("board_game", None, None),
}

_VERSION_RE = re.compile(r"^(?:(?P<ns>[\w:-]+)/)?(?P<name>[\w:.-]+?)(?:-v(?P<version>\d+))?$")


def register_ale_py() -> bool:
    """Register ale-py's Atari ids (``Pong-v0``, ``PongNoFrameskip-v4``, ``ALE/Pong-v5``) when ale-py is
    installed (Gymnasium 1.x no longer loads plugins by itself); returns whether it is."""
    if importlib.util.find_spec("ale_py") is None:
        return False
    import ale_py

    gymnasium.register_envs(ale_py)
    return True


def _import_env_providers() -> None:
    """Make sure every provider's ids are in Gymnasium's registry before the catalogue is built."""
    import palaestra.envs  # noqa: F401  (registers Go and Hex)

    register_ale_py()


def _group_of(entry_point: object) -> str:
    text = entry_point if isinstance(entry_point, str) else getattr(entry_point, "__module__", "")
    for prefix, group in _ENTRY_POINT_GROUPS:
        if str(text).startswith(prefix):
            return group
    return "other"


def _summary(env_id: str, group: str) -> str:
    match = _VERSION_RE.match(env_id)
    name = match.group("name") if match else env_id
    if name in _SUMMARIES:
        return _SUMMARIES[name]
    if group == "atari":
        game = name.replace("NoFrameskip", "").replace("Deterministic", "")
        return f"Maximize score in the game {game}, with screen images as input."
    return ""


@functools.cache
def _catalogue() -> dict[str, EnvEntry]:
    _import_env_providers()
    entries: dict[str, EnvEntry] = {}
    for env_id, spec in gymnasium.registry.items():
        group = _group_of(spec.entry_point)
        entries[env_id] = EnvEntry(
            env_id=env_id,
            group=group,
            summary=_summary(env_id, group),
            reward_threshold=spec.reward_threshold,
            max_episode_steps=spec.max_episode_steps,
        )
    for env_id, (group, threshold, steps) in _HISTORICAL.items():
        if env_id not in entries:
            entries[env_id] = EnvEntry(
                env_id=env_id, group=group, summary=_summary(env_id, group), reward_threshold=threshold,
                max_episode_steps=steps, available=False,
            )
    return entries


def lookup(env_id: str) -> EnvEntry | None:
    """The catalogue entry of ``env_id``, or ``None`` for an env the scoreboard does not list."""
    return _catalogue().get(env_id)


def entries(group: str | None = None, include_unavailable: bool = True) -> list[EnvEntry]:
    """Every known env id (optionally of one group), in group order, then by id."""
    if group is not None and group not in GROUP_IDS:
        raise ValueError(f"Unknown group {group!r}; groups are: {', '.join(GROUP_IDS)}")
    order = {g: i for i, g in enumerate(GROUP_IDS)}
    selected = [
        e for e in _catalogue().values()
        if (group is None or e.group == group) and (include_unavailable or e.available)
    ]
    return sorted(selected, key=lambda e: (order[e.group], e.env_id.lower()))


def group(group_id: str) -> Group:
    for g in GROUPS:
        if g.id == group_id:
            return g
    raise ValueError(f"Unknown group {group_id!r}; groups are: {', '.join(GROUP_IDS)}")


def solving_criteria(env_id: str) -> tuple[int, float | None]:
    """``(trials, reward_threshold)`` for scoring ``env_id`` (100 and ``None`` when unlisted)."""
    entry = lookup(env_id)
    if entry is None:
        return DEFAULT_TRIALS, None
    return entry.trials, entry.reward_threshold
