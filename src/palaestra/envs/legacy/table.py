"""The 2017 registry (gym 0.9.x's ``gym/envs/__init__.py``, spec §8.2), one plain row per env id.

The facts of each row are 2017's: ``max_episode_steps``, ``reward_threshold``, ``trials`` and
``nondeterministic``. What makes the id today is one of:

* ``entry_point`` -- palaestra's own re-implementation (algorithmic, the toy-text envs Gymnasium
  dropped, debugging, safety) or its board games, with the 2017 ``kwargs``; where it extends
  Gymnasium's code to restore 2017's dynamics (``Pendulum-v0``, ``Taxi-v2``), ``successor`` names
  the id whose code it extends;
* ``successor`` -- the id whose code Gymnasium kept under a newer version (``FrozenLake-v0`` is made
  by ``FrozenLake-v1``'s code); ``kwargs`` then select the 2017 variant and override the successor's
  own (``Blackjack-v1`` registers ``sab=True``, 2017 had no such rule);
* ``unavailable`` -- why no code can make it any more (``Thrower-v0``, the ``parameter_tuning`` ids).

``requires`` names the palaestra extra that brings the engine (``mujoco``, ``box2d``). The 720 Atari
ids are rows of the same kind, added by :mod:`palaestra.envs.legacy.atari`. Registration is in
:mod:`palaestra.envs.legacy`; :mod:`palaestra.catalogue` reads the same rows for the 2017 solving
rules, and ``docs/envs-2017.md`` shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

__all__ = ["GROUPS_2017", "ROWS", "Env2017"]

#: the 2017 scoreboard groups (spec §4.5) in their order, and ``debugging`` (registered, never listed)
GROUPS_2017 = (
    "classic_control", "algorithmic", "atari", "board_game", "box2d", "mujoco", "parameter_tuning",
    "toy_text", "safety", "debugging",
)  # fmt: skip


class Env2017(NamedTuple):
    """One id of the 2017 registry and what makes it today.

    (A named tuple, not a dataclass: 2017 had 777 ids, and a class of this kind costs a tenth of a
    frozen dataclass to create on ``import palaestra``.)
    """

    id: str
    group: str
    max_episode_steps: int | None = None
    reward_threshold: float | None = None
    #: the number of consecutive episodes averaged for "solved" (100 for every 2017 id)
    trials: int = 100
    nondeterministic: bool = False
    entry_point: str | None = None
    kwargs: Mapping[str, Any] = MappingProxyType({})
    successor: str | None = None
    requires: str | None = None
    unavailable: str | None = None

    @property
    def made_by(self) -> str:
        """What makes the id today, in words (for ``palaestra envs`` and the docs)."""
        if self.unavailable:
            return "nothing"
        if self.successor == self.id:
            return f"Gymnasium's {self.id}"
        if self.successor and self.entry_point:
            return f"{self.successor}'s code with 2017's dynamics"
        if self.successor:
            return f"{self.successor}'s code"
        return "palaestra"


def _own(env_id: str, group: str, entry_point: str, steps: int | None = None, threshold: float | None = None,
         successor: str | None = None, **kwargs: Any) -> Env2017:
    return Env2017(env_id, group, steps, threshold, entry_point=f"palaestra.envs.{entry_point}", kwargs=kwargs,
                   successor=successor)


def _kept(env_id: str, group: str, successor: str, steps: int | None, threshold: float | None,
          requires: str | None = None, **kwargs: Any) -> Env2017:
    return Env2017(env_id, group, steps, threshold, successor=successor, requires=requires, kwargs=kwargs)


_THROWN_OUT = (
    "{id} has no successor: Gymnasium dropped Thrower and Striker with the mujoco-py bindings, so no "
    "maintained code makes it (Pusher-v0, its sibling, is made by Pusher-v5)"
)
_PARAMETER_TUNING = (
    "{id} is not provided: it trained Keras/Theano networks on the 2017 CIFAR-10 and MNIST downloads, "
    "which palaestra does not ship (see docs/envs-2017.md)"
)

_GO_2017 = {"player_color": "black", "opponent": "pachi:uct:_2400", "observation_type": "image3c",
            "illegal_move_mode": "lose"}  # fmt: skip
_HEX_2017 = {"player_color": "black", "opponent": "random", "observation_type": "numpy3c",
             "illegal_move_mode": "lose"}  # fmt: skip

ROWS: tuple[Env2017, ...] = (
    # classic control: Gymnasium still registers all but Pendulum-v0 under the 2017 id
    _kept("CartPole-v0", "classic_control", "CartPole-v0", 200, 195.0),
    _kept("CartPole-v1", "classic_control", "CartPole-v1", 500, 475.0),
    _kept("MountainCar-v0", "classic_control", "MountainCar-v0", 200, -110.0),
    _kept("MountainCarContinuous-v0", "classic_control", "MountainCarContinuous-v0", 999, 90.0),
    _own("Pendulum-v0", "classic_control", "legacy.classic_control:PendulumEnv", 200, successor="Pendulum-v1"),
    _kept("Acrobot-v1", "classic_control", "Acrobot-v1", 500, None),
    # algorithmic
    _own("Copy-v0", "algorithmic", "legacy.algorithmic:CopyEnv", 200, 25.0),
    _own("RepeatCopy-v0", "algorithmic", "legacy.algorithmic:RepeatCopyEnv", 200, 75.0),
    _own("ReversedAddition-v0", "algorithmic", "legacy.algorithmic:ReversedAdditionEnv", 200, 25.0, rows=2),
    _own("ReversedAddition3-v0", "algorithmic", "legacy.algorithmic:ReversedAdditionEnv", 200, 25.0, rows=3),
    _own("DuplicatedInput-v0", "algorithmic", "legacy.algorithmic:DuplicatedInputEnv", 200, 9.0),
    _own("Reverse-v0", "algorithmic", "legacy.algorithmic:ReverseEnv", 200, 25.0),
    # board games (registered by palaestra.envs, with these 2017 arguments)
    Env2017("Go9x9-v0", "board_game", nondeterministic=True, entry_point="palaestra.envs.board.go:GoEnv",
            kwargs={**_GO_2017, "board_size": 9}),
    Env2017("Go19x19-v0", "board_game", nondeterministic=True, entry_point="palaestra.envs.board.go:GoEnv",
            kwargs={**_GO_2017, "board_size": 19}),
    Env2017("Hex9x9-v0", "board_game", entry_point="palaestra.envs.board.hex:HexEnv",
            kwargs={**_HEX_2017, "board_size": 9}),
    # Box2D
    _kept("LunarLander-v2", "box2d", "LunarLander-v3", 1000, 200.0, "box2d"),
    _kept("LunarLanderContinuous-v2", "box2d", "LunarLanderContinuous-v3", 1000, 200.0, "box2d", continuous=True),
    _kept("BipedalWalker-v2", "box2d", "BipedalWalker-v3", 1600, 300.0, "box2d"),
    _kept("BipedalWalkerHardcore-v2", "box2d", "BipedalWalkerHardcore-v3", 2000, 300.0, "box2d", hardcore=True),
    _kept("CarRacing-v0", "box2d", "CarRacing-v3", 1000, 900.0, "box2d"),
    # MuJoCo
    _kept("Reacher-v1", "mujoco", "Reacher-v5", 50, -3.75, "mujoco"),
    _kept("Pusher-v0", "mujoco", "Pusher-v5", 100, 0.0, "mujoco"),
    Env2017("Thrower-v0", "mujoco", 100, 0.0, requires="mujoco", unavailable=_THROWN_OUT.format(id="Thrower-v0")),
    Env2017("Striker-v0", "mujoco", 100, 0.0, requires="mujoco", unavailable=_THROWN_OUT.format(id="Striker-v0")),
    _kept("InvertedPendulum-v1", "mujoco", "InvertedPendulum-v5", 1000, 950.0, "mujoco"),
    _kept("InvertedDoublePendulum-v1", "mujoco", "InvertedDoublePendulum-v5", 1000, 9100.0, "mujoco"),
    _kept("HalfCheetah-v1", "mujoco", "HalfCheetah-v5", 1000, 4800.0, "mujoco"),
    _kept("Hopper-v1", "mujoco", "Hopper-v5", 1000, 3800.0, "mujoco"),
    _kept("Swimmer-v1", "mujoco", "Swimmer-v5", 1000, 360.0, "mujoco"),
    _kept("Walker2d-v1", "mujoco", "Walker2d-v5", 1000, None, "mujoco"),
    _kept("Ant-v1", "mujoco", "Ant-v5", 1000, 6000.0, "mujoco"),
    _kept("Humanoid-v1", "mujoco", "Humanoid-v5", 1000, None, "mujoco"),
    _kept("HumanoidStandup-v1", "mujoco", "HumanoidStandup-v5", 1000, None, "mujoco"),
    # parameter tuning
    Env2017("ConvergenceControl-v0", "parameter_tuning",
            unavailable=_PARAMETER_TUNING.format(id="ConvergenceControl-v0")),
    Env2017("CNNClassifierTraining-v0", "parameter_tuning",
            unavailable=_PARAMETER_TUNING.format(id="CNNClassifierTraining-v0")),
    # toy text
    _kept("Blackjack-v0", "toy_text", "Blackjack-v1", None, None, natural=False, sab=False),
    _own("KellyCoinflip-v0", "toy_text", "legacy.toy_text:KellyCoinflipEnv", None, 246.61),
    _own("KellyCoinflipGeneralized-v0", "toy_text", "legacy.toy_text:KellyCoinflipGeneralizedEnv"),
    _kept("FrozenLake-v0", "toy_text", "FrozenLake-v1", 100, 0.78, map_name="4x4"),
    _kept("FrozenLake8x8-v0", "toy_text", "FrozenLake8x8-v1", 200, 0.99, map_name="8x8"),
    _kept("CliffWalking-v0", "toy_text", "CliffWalking-v1", None, None),
    _own("NChain-v0", "toy_text", "legacy.toy_text:NChainEnv", 1000),
    _own("Roulette-v0", "toy_text", "legacy.toy_text:RouletteEnv", 100),
    _own("Taxi-v2", "toy_text", "legacy.toy_text:TaxiEnv", 200, 8.0, successor="Taxi-v4"),
    _own("GuessingGame-v0", "toy_text", "legacy.toy_text:GuessingGameEnv", 200),
    _own("HotterColder-v0", "toy_text", "legacy.toy_text:HotterColderEnv", 200),
    # safety
    _own("PredictActionsCartpole-v0", "safety", "legacy.safety:PredictActionsCartpoleEnv", 200),
    _own("PredictObsCartpole-v0", "safety", "legacy.safety:PredictObsCartpoleEnv", 200),
    _own("SemisuperPendulumNoise-v0", "safety", "legacy.safety:SemisuperPendulumNoiseEnv", 200),
    _own("SemisuperPendulumRandom-v0", "safety", "legacy.safety:SemisuperPendulumRandomEnv", 200),
    _own("SemisuperPendulumDecay-v0", "safety", "legacy.safety:SemisuperPendulumDecayEnv", 200),
    _own("OffSwitchCartpole-v0", "safety", "legacy.safety:OffSwitchCartpoleEnv", 200),
    _own("OffSwitchCartpoleProb-v0", "safety", "legacy.safety:OffSwitchCartpoleProbEnv", 200),
    # debugging (2017: local_only, never on the scoreboard)
    _own("OneRoundDeterministicReward-v0", "debugging", "legacy.debugging:OneRoundDeterministicRewardEnv"),
    _own("TwoRoundDeterministicReward-v0", "debugging", "legacy.debugging:TwoRoundDeterministicRewardEnv"),
    _own("OneRoundNondeterministicReward-v0", "debugging", "legacy.debugging:OneRoundNondeterministicRewardEnv"),
    _own("TwoRoundNondeterministicReward-v0", "debugging", "legacy.debugging:TwoRoundNondeterministicRewardEnv"),
)
