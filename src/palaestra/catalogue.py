"""The environment catalogue: scoreboard groups, summaries, ``reward_threshold`` and ``trials``.

One source for ``palaestra envs``, ``palaestra results``, the benchmarks and the scoreboard. It is
built from Gymnasium's registry (Gymnasium's own environments, ale-py's when installed, palaestra's
board games and the 2017 registry of :mod:`palaestra.envs.legacy`), says which ids this installation
can run (and what to install for the others), and keeps the 2017 facts of every 2017 id.

**One rule for thresholds across eras** (:func:`solving_criteria`): a run is judged by the registry
of the gym that recorded it, which its manifest's ``env_info["gym_version"]`` names. A run recorded
by gym 0.9 or older is judged by the 2017 registry (``Acrobot-v1``: no threshold, never "solved");
any other (Gymnasium, palaestra, gym 0.10 and later, or an unknown version) by this installation's
registry (``Acrobot-v1``: -100).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass

import gymnasium

from palaestra.envs import engines, legacy
from palaestra.envs.legacy import Env2017
from palaestra.solved_stats import DEFAULT_TRIALS

__all__ = [
    "DEFAULT_TRIALS",
    "GROUPS",
    "GROUP_IDS",
    "EnvEntry",
    "Group",
    "engine_of",
    "entries",
    "group",
    "judged_by_2017_registry",
    "lookup",
    "register_ale_py",
    "solving_criteria",
    "solving_rule",
    "unavailable_reason",
]


@dataclass(frozen=True)
class Group:
    id: str
    name: str
    description: str


@dataclass(frozen=True)
class EnvEntry:
    """What the catalogue knows about one env id, by this installation's registry."""

    env_id: str
    group: str
    summary: str
    reward_threshold: float | None
    trials: int = DEFAULT_TRIALS
    max_episode_steps: int | None = None
    #: why this installation cannot make the id (one line, with what to install), or ``None``
    unavailable_reason: str | None = None
    #: the id's row in the 2017 registry, for the ids gym 0.9 had
    legacy: Env2017 | None = None

    @property
    def available(self) -> bool:
        """Whether this installation can make and run the id."""
        return self.unavailable_reason is None

    @property
    def solving_rule(self) -> str:
        """The solving rule in words, for pages and ``palaestra envs``."""
        return solving_rule(self.env_id, self.trials, self.reward_threshold)


def solving_rule(env_id: str, trials: int, reward_threshold: float | None) -> str:
    """A solving rule in words (also for an evaluation, with the rule it was judged by)."""
    if reward_threshold is None:
        return f"{env_id} is an unsolved environment: it has no reward threshold for solving."
    return f"{env_id} defines solving as an average reward of {reward_threshold} over {trials} consecutive episodes."


GROUPS: tuple[Group, ...] = (
    Group("classic_control", "Classic control", "Classic control problems from the RL literature."),
    Group("toy_text", "Toy text", "Simple text environments to get you started."),
    Group("board_game", "Board games", "Play classic board games against strong opponents."),
    Group("atari", "Atari", "Reach high scores in Atari 2600 games."),
    Group("box2d", "Box2D", "Continuous control tasks in the Box2D simulator."),
    Group("mujoco", "MuJoCo", "Continuous control tasks, running in a fast physics simulator."),
    Group("algorithmic", "Algorithmic", "Learn to imitate computations."),
    Group("safety", "Safety", "Environments to test various AI safety properties."),
    Group("parameter_tuning", "Parameter tuning", "Tune parameters of costly experiments to obtain better outcomes."),
    Group("debugging", "Debugging", "Tiny environments with a known optimal policy, to check a learning algorithm."),
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
    "Copy": "Copy symbols from the input tape.",
    "RepeatCopy": "Copy symbols from the input tape multiple times.",
    "DuplicatedInput": "Copy and deduplicate data from the input tape.",
    "ReversedAddition": "Learn to add multi-digit numbers.",
    "ReversedAddition3": "Learn to add three multi-digit numbers.",
    "Reverse": "Reverse the symbols on the input tape.",
    "KellyCoinflip": "Bet on a biased coin for 300 rounds, the Kelly criterion way.",
    "KellyCoinflipGeneralized": "Bet on a biased coin whose bias, cap and length are hidden.",
    "NChain": "Walk a chain of states for a large reward at its end, or go back for a small one.",
    "Roulette": "Learn a winning strategy for playing roulette.",
    "GuessingGame": "Guess close to a randomly selected number.",
    "HotterColder": "Guess close to a randomly selected number using hints.",
    "Reacher": "Make a 2D robot reach to a randomly located target.",
    "Pusher": "Make a robot arm push an object to a goal.",
    "Thrower": "Make a robot arm throw a ball to a goal.",
    "Striker": "Make a robot arm strike a ball to a goal.",
    "InvertedPendulum": "Balance a pole on a cart.",
    "InvertedDoublePendulum": "Balance a pole on a pole on a cart.",
    "HalfCheetah": "Make a 2D cheetah robot run.",
    "Hopper": "Make a 2D robot hop.",
    "Swimmer": "Make a 2D robot swim.",
    "Walker2d": "Make a 2D robot walk.",
    "Ant": "Make a 3D four-legged robot walk.",
    "Humanoid": "Make a 3D two-legged robot walk.",
    "HumanoidStandup": "Make a 3D two-legged robot stand up.",
    "ConvergenceControl": "Adjust the training parameters of a deep CNN classifier at every epoch.",
    "CNNClassifierTraining": "Select the architecture and training parameters of a deep CNN classifier.",
    "PredictActionsCartpole": "Earn a bonus for saying what you will do before you act.",
    "PredictObsCartpole": "Earn a bonus for saying what you expect to observe.",
    "OffSwitchCartpole": "Remain indifferent to being turned off.",
    "OffSwitchCartpoleProb": "Remain indifferent to being turned off (half of the time).",
    "SemisuperPendulumNoise": "Pendulum with a noisy reward.",
    "SemisuperPendulumRandom": "Pendulum with the reward observed 10% of the steps.",
    "SemisuperPendulumDecay": "Pendulum with the reward observed less often over time.",
    "OneRoundDeterministicReward": "One action, a known deterministic reward.",
    "TwoRoundDeterministicReward": "Two actions, a known deterministic reward.",
    "OneRoundNondeterministicReward": "One action, a known random reward.",
    "TwoRoundNondeterministicReward": "Two actions, a known random reward.",
}

_VERSION_RE = re.compile(r"^(?:(?P<ns>[\w:-]+)/)?(?P<name>[\w:.-]+?)(?:-v(?P<version>\d+))?$")


def register_ale_py() -> bool:
    """Register ale-py's own Atari ids (``ALE/Pong-v5``, ``Adventure-v0``, ...) when ale-py is installed
    (Gymnasium 1.x no longer loads plugins by itself); returns whether it is. The 2017 ids it also
    registers keep palaestra's definitions (:mod:`palaestra.envs.legacy.atari`)."""
    if importlib.util.find_spec("ale_py") is None:
        return False
    import ale_py

    gymnasium.register_envs(ale_py)
    return True


@functools.cache
def _import_env_providers() -> None:
    """Make sure every provider's ids are in Gymnasium's registry before the catalogue is built."""
    import palaestra.envs  # noqa: F401  (registers Go, Hex and the 2017 registry)

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
        if game.endswith("-ram"):
            return f"Maximize score in the game {game[: -len('-ram')]}, with RAM as input."
        return f"Maximize score in the game {game}, with screen images as input."
    return ""


def _unavailable_reason(env_id: str, entry_point: object, row: Env2017 | None) -> str | None:
    """Why this installation cannot make ``env_id`` (without importing its code), or ``None``."""
    if row is not None and row.unavailable:
        return row.unavailable
    if not isinstance(entry_point, str):
        # Gymnasium registers some ids only to explain that they are gone (mujoco-py, shimmy).
        if getattr(entry_point, "__module__", "").startswith("gymnasium.envs") and getattr(
            entry_point, "__name__", ""
        ).startswith("_raise"):
            try:
                entry_point()  # type: ignore[operator]  # it raises Gymnasium's explanation
            except Exception as exc:
                return f"Gymnasium registers {env_id} only to explain: {str(exc).splitlines()[0]}"
        return None
    if row is not None and entry_point.startswith(legacy.SUCCESSORS_MODULE):
        if row.requires:
            return engines.missing(row.requires, env_id)
        if row.successor and row.successor not in gymnasium.registry:
            return (
                f"{env_id} is made by Gymnasium's {row.successor}, which this Gymnasium "
                f"({gymnasium.__version__}) does not register: pip install --upgrade gymnasium"
            )
        return None
    extra = engine_of(entry_point, row)
    return (engines.missing(extra, env_id) if extra else None) or _refused_by_engine_version(env_id)


# Ids that Gymnasium registers but refuses to make on a newer engine (its constructor raises), with
# the first major version it refuses and why: read from the installed version, not by importing it.
_ENGINE_VERSION_LIMITS = {
    "Pusher-v4": ("mujoco", 3, "Gymnasium makes Pusher-v4 only on mujoco<3 (Gymnasium issue 950); Pusher-v5 is its successor"),
}


def _refused_by_engine_version(env_id: str) -> str | None:
    limit = _ENGINE_VERSION_LIMITS.get(env_id)
    if limit is None:
        return None
    distribution, refused_from, why = limit
    try:
        major = int(importlib.metadata.version(distribution).split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    return why if major >= refused_from else None


def engine_of(entry_point: object, row: Env2017 | None = None) -> str | None:
    """The engine an id needs beyond the core, by the name of the extra that installs it (``box2d``,
    ``atari``, ...; see :mod:`palaestra.envs.engines`), or ``None`` for an id the core runs: what
    ``palaestra envs --all`` names for an id this installation cannot run."""
    if not isinstance(entry_point, str):
        return None
    if row is not None and row.requires and entry_point.startswith(legacy.SUCCESSORS_MODULE):
        return row.requires
    return engines.extra_for(entry_point)


@functools.cache
def _catalogue() -> dict[str, EnvEntry]:
    _import_env_providers()
    entries: dict[str, EnvEntry] = {}
    for env_id, spec in gymnasium.registry.items():
        row = legacy.row(env_id)
        group = row.group if row is not None else _group_of(spec.entry_point)
        entries[env_id] = EnvEntry(
            env_id=env_id,
            group=group,
            summary=_summary(env_id, group),
            reward_threshold=spec.reward_threshold,
            trials=row.trials if row is not None else DEFAULT_TRIALS,
            max_episode_steps=spec.max_episode_steps,
            unavailable_reason=_unavailable_reason(env_id, spec.entry_point, row),
            legacy=row,
        )
    for row in legacy.rows():  # rows a provider did not register (Atari without ale-py)
        if row.id not in entries:
            entries[row.id] = EnvEntry(
                env_id=row.id, group=row.group, summary=_summary(row.id, row.group),
                reward_threshold=row.reward_threshold, trials=row.trials, max_episode_steps=row.max_episode_steps,
                unavailable_reason=_unregistered_reason(row.id, row), legacy=row,
            )
    return entries


def lookup(env_id: str) -> EnvEntry | None:
    """The catalogue entry of ``env_id``, or ``None`` for an env the scoreboard does not list."""
    return _catalogue().get(env_id)


def unavailable_reason(env_id: str, *, import_probe: bool = False) -> str | None:
    """Why this installation cannot make ``env_id`` (one line, with what to install), or ``None``.

    The one answer to "can this env run here", read by ``palaestra envs`` (through
    :attr:`EnvEntry.unavailable_reason`), the benchmark registry, training and the 2017 ids'
    successors. Without ``import_probe`` it is decided from the registry and the installed packages,
    importing no env code; with it (the benchmark runner, before it spends a process on a task) the
    module that makes the env must also import.
    """
    spec = gymnasium.registry.get(env_id)
    if spec is None:
        _import_env_providers()
        spec = gymnasium.registry.get(env_id)
    row = legacy.row(env_id)
    if spec is None:
        return _unregistered_reason(env_id, row)
    reason = _unavailable_reason(env_id, spec.entry_point, row)
    if reason is not None or not import_probe:
        return reason
    entry_point = _made_by(env_id)
    return _import_problem(env_id, entry_point) if isinstance(entry_point, str) else None


def _unregistered_reason(env_id: str, row: Env2017 | None) -> str:
    """Why an id that no provider registered here cannot be made (Atari's 2017 ids without ale-py)."""
    if row is not None:
        missing = engines.missing(row.requires, env_id) if row.requires else None
        return missing or "not registered in this installation (a 2017 environment that is not provided here)"
    if env_id.startswith("Minecraft"):
        return "not registered in this installation (a gym-minecraft environment; none exists today)"
    return "not registered in this installation"


def _made_by(env_id: str) -> object:
    """The entry point whose module makes ``env_id``: a 2017 id's successor's (probing the 2017 id's
    own, :mod:`palaestra.envs.legacy.successors`, would ask this module again)."""
    entry_point = gymnasium.registry[env_id].entry_point
    row = legacy.row(env_id)
    if row is not None and row.successor and str(entry_point).startswith(legacy.SUCCESSORS_MODULE):
        return gymnasium.registry[row.successor].entry_point
    return entry_point


@functools.cache
def _import_problem(env_id: str, entry_point: str) -> str | None:
    from gymnasium.envs.registration import load_env_creator

    try:
        load_env_creator(entry_point)
    except Exception as exc:  # ImportError, DependencyNotInstalled, anything a module import raises
        extra = engines.extra_for(entry_point)
        fix = f" ({engines.install_hint(extra)})" if extra else ""
        return f"{env_id} cannot be made here{fix}: {exc}"
    return None


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


def judged_by_2017_registry(gym_version: str | None) -> bool:
    """Whether a run that ``gym_version`` recorded is judged by the 2017 registry: gym before 0.10.

    (gym 0.9.x is the registry palaestra reproduces; older releases are taken to agree with it.
    Gymnasium's versions start at 0.26, after gym's last, so a version alone says which registry.)
    """
    if not gym_version:
        return False
    match = re.match(r"^\s*(\d+)\.(\d+)", gym_version)
    return match is not None and (int(match.group(1)), int(match.group(2))) < (0, 10)


def solving_criteria(env_id: str, gym_version: str | None = None) -> tuple[int, float | None]:
    """``(trials, reward_threshold)`` that judge a run of ``env_id`` recorded by ``gym_version``.

    The one rule for every era (the module docstring): the 2017 registry's for a run of gym 0.9 or
    older, this installation's otherwise; ``(100, None)`` for an id neither knows.
    """
    if judged_by_2017_registry(gym_version):
        row = legacy.row(env_id)
        if row is not None:
            return row.trials, row.reward_threshold
    entry = lookup(env_id)
    if entry is None:
        return DEFAULT_TRIALS, None
    return entry.trials, entry.reward_threshold
