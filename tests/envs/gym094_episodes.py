"""Scripted episodes of the 2017 pure-Python environments, played by palaestra and by gym 0.9.4.

:func:`play_in_palaestra` plays each plan's episodes (its actions come from a scripted player that
may read the environment, so that the episodes solve, fail, time out and level up); the actions it
took are then replayed in one gym 0.9.4 process (:data:`GYM094_SCRIPT`), which also dumps gym
0.9.4's registry. Equal dynamics give equal observations, rewards and ends.

Seeds: palaestra's own 2017 environments are seeded the 2017 way, so ``reset(seed=s)`` is gym's
``env.seed(s); env.reset()``. The ids that today's Gymnasium code makes keep Gymnasium's seeding;
for those, the replay gives the Gymnasium environment a generator seeded the 2017 way, so that the
comparison is of the dynamics alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np

from palaestra.envs.legacy.seeding import random_state_2017

# Shared by both sides (exec'd in the gym 0.9.4 process too): JSON-able observations, and the
# scripted Hex opponent (it takes the first empty cell of a fixed order).
SHARED_SOURCE = '''
import numpy as _np

def plain(x):
    if isinstance(x, (tuple, list)):
        return [plain(v) for v in x]
    if isinstance(x, _np.ndarray):
        return [plain(v) for v in x.tolist()] if x.ndim else plain(x.item())
    if isinstance(x, (bool, _np.bool_)):
        return bool(x)
    if isinstance(x, (int, _np.integer)):
        return int(x)
    if isinstance(x, (float, _np.floating)):
        return float(x)
    return x

HEX_OPPONENT_ORDER = list(range(36, 45))  # the middle row, left to right: white joins left and right

def hex_opponent(state):
    empty = _np.asarray(state)[2].reshape(-1)
    for cell in HEX_OPPONENT_ORDER + list(range(len(empty))):
        if empty[cell] == 1:
            return cell
'''
_shared: dict[str, Any] = {}
exec(SHARED_SOURCE, _shared)
plain: Callable[[Any], Any] = _shared["plain"]
hex_opponent: Callable[[Any], int] = _shared["hex_opponent"]


@dataclass
class Plan:
    """One env id's scripted episodes: what was played in palaestra, to replay in gym 0.9.4."""

    env_id: str
    seed: int
    #: "algorithmic" (renders ansi frames), "own" (palaestra's), "successor" (Gymnasium code), "hex"
    kind: str
    episodes: list[list[Any]] = field(default_factory=list)  # actions, JSON-able
    trajectories: list[list[Any]] = field(default_factory=list)  # [obs, reward, done, frame]
    render_episodes: int = 0
    #: an algorithmic env's curriculum (min_length) before and after the episodes
    starting_min_length: int | None = None
    final_min_length: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.env_id, "seed": self.seed, "kind": self.kind, "episodes": self.episodes,
                "render_episodes": self.render_episodes}


#: ``player(env, observation, episode, step, rng) -> action`` (JSON-able)
Player = Callable[[gymnasium.Env[Any, Any], Any, int, int, np.random.Generator], Any]


def _play(plan: Plan, env: gymnasium.Env[Any, Any], n_episodes: int, player: Player, max_steps: int,
          rng: np.random.Generator, seed_first: bool = True) -> Plan:
    plan.starting_min_length = getattr(env.unwrapped, "min_length", None)
    for episode in range(n_episodes):
        obs, _ = env.reset(seed=plan.seed if (episode == 0 and seed_first) else None)
        render = episode < plan.render_episodes
        steps = [[plain(obs), None, False, env.render() if render else None]]
        actions: list[Any] = []
        for t in range(max_steps):
            action = player(env, obs, episode, t, rng)
            obs, reward, terminated, truncated, _ = env.step(_decode(plan.kind, action))
            actions.append(action)
            steps.append([plain(obs), float(reward), bool(terminated or truncated), env.render() if render else None])
            if terminated or truncated:
                break
        plan.episodes.append(actions)
        plan.trajectories.append(steps)
    plan.final_min_length = getattr(env.unwrapped, "min_length", None)
    env.close()
    return plan


def _decode(kind: str, action: Any) -> Any:
    if isinstance(action, list) and kind in ("algorithmic", "own") and len(action) == 3:
        return tuple(action)
    if isinstance(action, float):
        return np.array([action])
    return action


# -- scripted players -----------------------------------------------------------------------------
def algorithmic_player(perfect_episodes: int) -> Player:
    """Moves the head at random and writes the right symbol in the first ``perfect_episodes``
    episodes (so the curriculum levels up); later ones also idle, write wrong symbols, time out."""

    def play(env: gymnasium.Env[Any, Any], obs: Any, episode: int, t: int, rng: np.random.Generator) -> Any:
        u = env.unwrapped
        move = int(rng.integers(len(u.MOVEMENTS)))
        target = u.target[u.write_head_position] if u.write_head_position < len(u.target) else 0
        if episode < perfect_episodes:
            return [move, 1, int(target)]
        style = episode % 3
        if style == 0:  # never writes: runs out of time
            return [move, 0, int(rng.integers(u.base))]
        if style == 1 and t == 2:  # a wrong symbol on the third step
            return [move, 1, int((target + 1) % u.base)]
        return [move, int(rng.random() < 0.8), int(target)]

    return play


def _kelly(env: gymnasium.Env[Any, Any], obs: Any, episode: int, t: int, rng: np.random.Generator) -> Any:
    wealth = float(obs[0][0])  # bet a fifth (or half) of what you have, in cents
    return int(min(wealth * 100 * (0.2 if episode % 2 == 0 else 0.5), env.unwrapped.action_space.n - 1))


def _random_action(env: gymnasium.Env[Any, Any], obs: Any, episode: int, t: int, rng: np.random.Generator) -> Any:
    return int(rng.integers(env.action_space.n))  # type: ignore[attr-defined]


def _roulette(env: gymnasium.Env[Any, Any], obs: Any, episode: int, t: int, rng: np.random.Generator) -> Any:
    return 37 if t == 40 + 10 * episode else int(rng.integers(37))


class _BinarySearch:
    """Halves the interval on each hint (off-centre in the third episode, so it hits within 1%)."""

    def __init__(self) -> None:
        self.low, self.high, self.last = -1000.0, 1000.0, 0.0

    def __call__(self, env: gymnasium.Env[Any, Any], obs: Any, episode: int, t: int, rng: np.random.Generator) -> Any:
        if t == 0:
            self.low, self.high = -1000.0, 1000.0
        elif obs == 1:  # the last guess was too low
            self.low = self.last
        elif obs == 3:
            self.high = self.last
        self.last = (self.low + self.high) / 2 + (0.37 if episode == 2 else 0.0)
        return float(self.last)


def _swing(env: gymnasium.Env[Any, Any], obs: Any, episode: int, t: int, rng: np.random.Generator) -> Any:
    return 2.0 if (t // 15) % 2 == 0 else -2.0  # full torque, alternating: reaches full speed


def _hotter(env: gymnasium.Env[Any, Any], obs: Any, episode: int, t: int, rng: np.random.Generator) -> Any:
    return float(rng.uniform(-2000, 2000))


def _two_rounds(env: gymnasium.Env[Any, Any], obs: Any, episode: int, t: int, rng: np.random.Generator) -> Any:
    return [(0, 0), (0, 1), (1, 0), (1, 1)][episode % 4][t]


def _hex_moves(env: gymnasium.Env[Any, Any], obs: Any, episode: int, t: int, rng: np.random.Generator) -> Any:
    games = [
        [36, 27, 45, 18, 54, 9, 63, 0, 72],  # black (the agent) joins top and bottom down the first column
        list(range(9)),  # black fills the top row while white joins left and right: black loses
        [10, 36],  # 36 is white's: an illegal move loses
        [7, 81],  # resigns
    ]
    moves = games[episode % len(games)]
    return moves[t] if t < len(moves) else int(np.flatnonzero(np.asarray(obs)[2].reshape(-1))[0])


def play_in_palaestra() -> list[Plan]:
    """Every plan, played in palaestra (one environment each)."""
    rng = np.random.default_rng(2017)
    plans = []
    for env_id, n_episodes, perfect in (
        ("Copy-v0", 30, 12), ("RepeatCopy-v0", 60, 52), ("Reverse-v0", 62, 52), ("DuplicatedInput-v0", 30, 12),
        ("ReversedAddition-v0", 30, 12), ("ReversedAddition3-v0", 30, 12),
    ):
        plan = Plan(env_id, 11, "algorithmic", render_episodes=2)
        plans.append(_play(plan, gymnasium.make(env_id, render_mode="ansi"), n_episodes,
                           algorithmic_player(perfect), 200, rng))
    for env_id, seed, n_episodes, player, max_steps in (
        ("KellyCoinflip-v0", 3, 2, _kelly, 400),
        ("KellyCoinflipGeneralized-v0", 4, 3, _kelly, 400),
        ("NChain-v0", 5, 2, _random_action, 150),
        ("Roulette-v0", 6, 2, _roulette, 100),
        ("GuessingGame-v0", 7, 3, _BinarySearch(), 200),
        ("HotterColder-v0", 8, 1, _hotter, 200),
        ("OneRoundDeterministicReward-v0", 9, 2, _random_action, 5),
        ("OneRoundNondeterministicReward-v0", 10, 6, _random_action, 5),
        ("TwoRoundDeterministicReward-v0", 11, 4, _two_rounds, 5),
        ("TwoRoundNondeterministicReward-v0", 12, 8, _two_rounds, 5),
    ):
        plans.append(_play(Plan(env_id, seed, "own"), gymnasium.make(env_id), n_episodes, player, max_steps, rng))
    for env_id, seed, n_episodes, player, max_steps in (
        ("FrozenLake-v0", 13, 12, _random_action, 100), ("FrozenLake8x8-v0", 14, 6, _random_action, 200),
        ("Taxi-v2", 15, 4, _random_action, 200), ("CliffWalking-v0", 16, 2, _random_action, 100),
        ("Pendulum-v0", 18, 1, _swing, 200), ("CartPole-v0", 19, 5, _random_action, 200),
        ("CartPole-v1", 20, 3, _random_action, 500), ("MountainCar-v0", 21, 1, _random_action, 200),
        ("MountainCarContinuous-v0", 22, 1, _swing, 300), ("Acrobot-v1", 23, 1, _random_action, 200),
    ):
        env = gymnasium.make(env_id)
        env.unwrapped._np_random = random_state_2017(seed)[0]  # type: ignore[attr-defined]  # see the module doc
        plans.append(_play(Plan(env_id, seed, "successor"), env, n_episodes, player, max_steps, rng, seed_first=False))
    hex_env = gymnasium.make("Hex9x9-v0", opponent=hex_opponent)
    plans.append(_play(Plan("Hex9x9-v0", 17, "hex"), hex_env, 4, _hex_moves, 81, rng))
    return plans


# -- the gym 0.9.4 side ---------------------------------------------------------------------------
GYM094_SCRIPT = SHARED_SOURCE + '''
import importlib.util, json, os, sys
import numpy as np
np.bool = bool  # gym 0.9.4's CliffWalking uses np.bool, which numpy 1.24 removed
import gym
import gym.spaces.prng

def hex_env():
    # gym.envs.board_game imports Go, which needs pachi_py; load hex.py on its own
    path = os.path.join(os.path.dirname(gym.__file__), "envs", "board_game", "hex.py")
    spec = importlib.util.spec_from_file_location("hex2017", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HexEnv(player_color="black", opponent=hex_opponent, observation_type="numpy3c",
                         illegal_move_mode="lose", board_size=9)

def decode(action):
    if isinstance(action, list):
        return tuple(action)
    if isinstance(action, float):
        return np.array([action])
    return action

def play(plan):
    env = hex_env() if plan["kind"] == "hex" else gym.make(plan["id"])
    u = env.unwrapped
    if plan["kind"] == "algorithmic":
        u.episode_total_reward = None  # no phantom episode from the constructor's reset (palaestra has none)
    env.seed(plan["seed"])
    if plan["id"] == "KellyCoinflipGeneralized-v0":
        gym.spaces.prng.np_random = u.np_random  # game parameters from the env's generator, as in palaestra
    trajectories = []
    for k, actions in enumerate(plan["episodes"]):
        render = k < plan["render_episodes"]
        frame = lambda: env.render(mode="ansi").getvalue() if render else None
        obs = env.reset()
        steps = [[plain(obs), None, False, frame()]]
        for action in actions:
            obs, reward, done, _ = env.step(decode(action))
            steps.append([plain(obs), float(reward), bool(done), frame()])
            if done:
                break
        trajectories.append(steps)
    return trajectories

plans = json.load(open(sys.argv[1] if len(sys.argv) > 1 else PLANS_PATH))
registry = [
    {"id": s.id, "entry_point": s._entry_point, "kwargs": s._kwargs, "max_episode_steps": s.max_episode_steps,
     "reward_threshold": s.reward_threshold, "trials": s.trials, "nondeterministic": s.nondeterministic}
    for s in gym.envs.registry.all()
]
print(json.dumps({"registry": registry, "episodes": {p["id"]: play(p) for p in plans}}))
'''


def gym094_code(plans_path: str) -> str:
    """The gym 0.9.4 program, reading the plans from ``plans_path``."""
    return f"PLANS_PATH = {plans_path!r}\n" + GYM094_SCRIPT


def write_plans(plans: list[Plan], path: str) -> None:
    with open(path, "w") as handle:
        json.dump([p.to_json() for p in plans], handle)
