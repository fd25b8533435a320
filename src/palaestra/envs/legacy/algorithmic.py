"""The 2017 algorithmic environments: learn to imitate a computation by moving a read head.

* :class:`CopyEnv` (``Copy-v0``): copy the input tape.
* :class:`RepeatCopyEnv` (``RepeatCopy-v0``): the input, then reversed, then again.
* :class:`ReverseEnv` (``Reverse-v0``): the input reversed.
* :class:`DuplicatedInputEnv` (``DuplicatedInput-v0``): every symbol appears twice; write it once.
* :class:`ReversedAdditionEnv` (``ReversedAddition-v0``, ``ReversedAddition3-v0``): add the columns
  of a 2- or 3-row grid of base-3 digits, least significant first.

The agent sees one symbol, the one under its read head (``base`` means "off the input"). An action
is ``(move, write, symbol)``: move the head (left/right; also up/down on a grid), and if ``write``
is 1, write ``symbol`` to the output tape. Writing the right symbol earns +1, a wrong one -0.5 and
ends the episode; taking longer than the task's own time limit earns -1 and ends it; writing the
whole target ends it.

The curriculum is 2017's: inputs are ``min_length`` + 0..2 symbols long, and ``min_length`` (from 2,
or 1 for ``Reverse``) grows by one, up to 30, whenever each of the last 10 episodes (50 for
``RepeatCopy`` and ``Reverse``) fell short of the full reward by at most 1 (0.1 for those two).
Two 2017 defects are fixed: the curriculum belonged to the class, so two environments in one
process levelled each other up, and the constructor's own reset counted as a failed episode.

Seeded the 2017 way (:mod:`palaestra.envs.legacy.seeding`): ``reset(seed=s)`` gives the input that
gym 0.9's ``env.seed(s); env.reset()`` gave, and ``render_mode='ansi'`` the same text frames.
"""

from __future__ import annotations

import sys
from typing import Any, SupportsFloat

import gymnasium
from gymnasium import spaces
from gymnasium.utils import colorize

from palaestra.envs.legacy.seeding import Seeded2017

__all__ = ["CopyEnv", "DuplicatedInputEnv", "RepeatCopyEnv", "ReverseEnv", "ReversedAdditionEnv"]

Action = tuple[int, int, int]
_LABEL_WIDTH = len("Observation Tape    : ")


class AlgorithmicEnv(Seeded2017, gymnasium.Env[Any, Any]):
    """A read head over an input, an output tape, a target computed from the input."""

    metadata: dict[str, Any] = {"render_modes": ["human", "ansi"], "render_fps": 2}  # 2017: 0.5 s a frame
    MOVEMENTS: tuple[str, ...] = ()
    READ_HEAD_START: Any = 0
    #: promote only if the worst of the last ``window`` episodes fell short by at most this much
    MIN_REWARD_SHORTFALL_FOR_PROMOTION = -1.0
    #: the longest ``min_length`` the curriculum reaches
    MAX_MIN_LENGTH = 30

    def __init__(
        self, base: int = 10, chars: bool = False, starting_min_length: int = 2, window: int = 10,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise gymnasium.error.Error(
                f"{type(self).__name__} renders as 'human' or 'ansi', not {render_mode!r}"
            )
        self.render_mode = render_mode
        self.base = base
        self.charmap = [chr(ord("A") + i) for i in range(base)] if chars else [str(i) for i in range(base)]
        self.charmap.append(" ")
        self.min_length = starting_min_length
        self.window = window
        self.reward_shortfalls: list[float] = []
        self.action_space = spaces.Tuple([spaces.Discrete(len(self.MOVEMENTS)), spaces.Discrete(2), spaces.Discrete(base)])
        self.observation_space = spaces.Discrete(base + 1)
        self.episode_total_reward: float | None = None
        self.input_data: list[Any] = []
        self.target: list[int] = []

    # -- the task, per subclass -------------------------------------------------------------------
    def generate_input_data(self, size: int) -> list[Any]:
        raise NotImplementedError

    def target_from_input_data(self, input_data: list[Any]) -> list[int]:
        raise NotImplementedError

    def _move(self, movement: int) -> None:
        raise NotImplementedError

    def _get_obs(self, pos: Any = None) -> int:
        raise NotImplementedError

    def _render_observation(self) -> str:
        raise NotImplementedError

    @property
    def input_width(self) -> int:
        return len(self.input_data)

    @property
    def time_limit(self) -> int:
        """More steps than this end the episode with reward -1."""
        return self.input_width + len(self.target) + 4

    # -- the Gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        random = self._seed_2017(seed)
        self._check_levelup()
        self.last_action: Action | None = None
        self.last_reward = 0.0
        self.read_head_position: Any = self.READ_HEAD_START
        self.write_head_position = 0
        self.episode_total_reward = 0.0
        self.time = 0
        length = random.randint(3) + self.min_length
        self.input_data = self.generate_input_data(length)
        self.target = self.target_from_input_data(self.input_data)
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), {}

    def step(self, action: Action) -> tuple[int, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.episode_total_reward is None:
            raise gymnasium.error.ResetNeeded(f"{type(self).__name__}: call reset() before step()")
        if not self.action_space.contains(action):
            raise gymnasium.error.InvalidAction(
                f"{type(self).__name__}: {action!r} is not an action of {self.action_space} "
                "(move, write 0/1, symbol)"
            )
        move, write, symbol = (int(a) for a in action)
        self.last_action = (move, write, symbol)
        done = False
        reward = 0.0
        self.time += 1
        if write == 1:
            position = self.write_head_position
            # Past the end only when stepped after the episode ended (2017: a logged IndexError).
            if position < len(self.target) and symbol == self.target[position]:
                reward = 1.0
            else:
                reward = -0.5  # the first wrong symbol ends the episode
                done = True
            self.write_head_position += 1
            if self.write_head_position >= len(self.target):
                done = True
        self._move(move)
        if self.time > self.time_limit:
            reward = -1.0
            done = True
        self.last_reward = reward
        self.episode_total_reward += reward
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), reward, done, False, {}

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn(
                f"{type(self).__name__}.render() without a render_mode: make it with render_mode='ansi' or 'human'"
            )
            return None
        text = self._render_text()
        if self.render_mode == "ansi":
            return text
        sys.stdout.write(text)
        return None

    # -- internals --------------------------------------------------------------------------------
    def _check_levelup(self) -> None:
        """Between episodes: record how far the last one fell short, and maybe lengthen inputs."""
        if self.episode_total_reward is None:  # the first reset: no episode was played
            return
        self.reward_shortfalls.append(self.episode_total_reward - len(self.target))
        self.reward_shortfalls = self.reward_shortfalls[-self.window :]
        if (
            len(self.reward_shortfalls) == self.window
            and min(self.reward_shortfalls) >= self.MIN_REWARD_SHORTFALL_FOR_PROMOTION
            and self.min_length < self.MAX_MIN_LENGTH
        ):
            self.min_length += 1
            self.reward_shortfalls = []

    def _char(self, index: int) -> str:
        return self.charmap[index]

    def _target_char(self, pos: int) -> str:
        return self.charmap[self.target[pos]] if 0 <= pos < len(self.target) else " "

    def _render_text(self) -> str:
        header = f"Total length of input instance: {self.input_width}, step: {self.time}\n"
        lines = [header, "=" * (len(header) - 1) + "\n", self._render_observation()]
        written = self.write_head_position
        output, targets = "Output Tape         : ", "Targets             : "
        for i in range(-2, len(self.target) + 2):
            targets += self._target_char(i)
            if i < written - 1:
                output += self._target_char(i)
            elif i == written - 1:
                if self.last_action is not None and self.last_action[1] == 1:
                    symbol = self.last_action[2]
                    color = "green" if symbol == self.target[i] else "red"
                    output += colorize(self._char(symbol), color, highlight=True)
                else:
                    output += self._target_char(i)
        lines += [output + "\n", targets + "\n\n"]
        if self.last_action is None:
            lines.append("\n" * 5)
        else:
            move, write, symbol = self.last_action
            lines += [
                f"Current reward      :   {self.last_reward:.3f}\n",
                f"Cumulative reward   :   {self.episode_total_reward:.3f}\n",
                f"Action              :   Tuple(move over input: {self.MOVEMENTS[move]},\n",
                f"                              write to the output tape: {write == 1},\n",
                f"                              prediction: {self._char(symbol)})\n",
            ]
        return "".join(lines)


class TapeAlgorithmicEnv(AlgorithmicEnv):
    """An algorithmic env over a 1-d input tape."""

    MOVEMENTS = ("left", "right")
    READ_HEAD_START: Any = 0

    def _move(self, movement: int) -> None:
        self.read_head_position += 1 if self.MOVEMENTS[movement] == "right" else -1

    def _get_obs(self, pos: Any = None) -> int:
        pos = self.read_head_position if pos is None else pos
        if 0 <= pos < self.input_width:
            return int(self.input_data[pos])
        return self.base

    def generate_input_data(self, size: int) -> list[Any]:
        random = self.random_2017
        assert random is not None
        return [random.randint(self.base) for _ in range(size)]

    def _render_observation(self) -> str:
        text = "Observation Tape    : "
        for i in range(-2, self.input_width + 2):
            char = self._char(self._get_obs(i))
            text += colorize(char, "green", highlight=True) if i == self.read_head_position else char
        return text + "\n"


class GridAlgorithmicEnv(AlgorithmicEnv):
    """An algorithmic env over a 2-d input grid (``rows`` rows, read column by column)."""

    MOVEMENTS = ("left", "right", "up", "down")
    READ_HEAD_START: Any = (0, 0)
    _STEPS = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}

    def __init__(self, rows: int, *args: Any, **kwargs: Any) -> None:
        self.rows = rows
        super().__init__(*args, **kwargs)

    def _move(self, movement: int) -> None:
        dx, dy = self._STEPS[self.MOVEMENTS[movement]]
        x, y = self.read_head_position
        self.read_head_position = (x + dx, y + dy)

    def generate_input_data(self, size: int) -> list[Any]:
        random = self.random_2017
        assert random is not None
        return [[random.randint(self.base) for _ in range(self.rows)] for _ in range(size)]

    def _get_obs(self, pos: Any = None) -> int:
        x, y = self.read_head_position if pos is None else pos
        if 0 <= x < self.input_width and 0 <= y < self.rows:
            return int(self.input_data[x][y])
        return self.base

    def _render_observation(self) -> str:
        text = "Observation Grid    : "
        for j in range(-1, self.rows + 1):
            if j != -1:
                text += " " * _LABEL_WIDTH
            for i in range(-2, self.input_width + 2):
                char = self._char(self._get_obs((i, j)))
                text += colorize(char, "green", highlight=True) if (i, j) == tuple(self.read_head_position) else char
            text += "\n"
        return text


class CopyEnv(TapeAlgorithmicEnv):
    """Copy the symbols of the input tape to the output tape (arXiv:1511.07275)."""

    def __init__(self, base: int = 5, chars: bool = True, render_mode: str | None = None) -> None:
        super().__init__(base=base, chars=chars, render_mode=render_mode)

    def target_from_input_data(self, input_data: list[Any]) -> list[int]:
        return list(input_data)


class RepeatCopyEnv(TapeAlgorithmicEnv):
    """Write the input, then the input reversed, then the input again."""

    MIN_REWARD_SHORTFALL_FOR_PROMOTION = -0.1

    def __init__(self, base: int = 5, render_mode: str | None = None) -> None:
        super().__init__(base=base, chars=True, window=50, render_mode=render_mode)

    def target_from_input_data(self, input_data: list[Any]) -> list[int]:
        return list(input_data) + list(reversed(input_data)) + list(input_data)


class ReverseEnv(TapeAlgorithmicEnv):
    """Write the input tape reversed (a base-2 tape, inputs from one symbol long)."""

    MIN_REWARD_SHORTFALL_FOR_PROMOTION = -0.1

    def __init__(self, base: int = 2, render_mode: str | None = None) -> None:
        super().__init__(base=base, chars=True, starting_min_length=1, window=50, render_mode=render_mode)

    def target_from_input_data(self, input_data: list[Any]) -> list[int]:
        return list(reversed(input_data))


class DuplicatedInputEnv(TapeAlgorithmicEnv):
    """Every symbol of the input appears ``duplication`` times in a row; write each once."""

    def __init__(self, duplication: int = 2, base: int = 5, render_mode: str | None = None) -> None:
        self.duplication = duplication
        super().__init__(base=base, chars=True, render_mode=render_mode)

    def generate_input_data(self, size: int) -> list[Any]:
        random = self.random_2017
        assert random is not None
        data: list[Any] = []
        for _ in range(max(size, self.duplication) // self.duplication):
            data += [random.randint(self.base)] * self.duplication
        return data

    def target_from_input_data(self, input_data: list[Any]) -> list[int]:
        return list(input_data[:: self.duplication])


class ReversedAdditionEnv(GridAlgorithmicEnv):
    """Add the ``rows`` numbers of the grid, digits least significant first (base 3)."""

    def __init__(self, rows: int = 2, base: int = 3, render_mode: str | None = None) -> None:
        super().__init__(rows, base=base, chars=False, render_mode=render_mode)

    def target_from_input_data(self, input_data: list[Any]) -> list[int]:
        carry, target = 0, []
        for digits in input_data:
            total = sum(digits) + carry
            target.append(total % self.base)
            carry = total // self.base
        if carry > 0:
            target.append(carry)
        return target

    @property
    def time_limit(self) -> int:
        # 2017's: twice the input width (not input + target, which a final carry lengthens).
        return self.input_width * 2 + 4
