"""Go and Hex as native vector environments: B boards stepped in one call.

* :class:`GoVectorEnv`, :class:`HexVectorEnv` -- what ``gym.make_vec("Go9x9-v0", num_envs=B)`` and
  ``gym.make_vec("Hex9x9-v0", num_envs=B)`` build (the ids' ``vector_entry_point``; Gymnasium takes
  it by default, or with ``vectorization_mode="vector_entry_point"``). They take the arguments of
  :class:`~palaestra.envs.board.go.GoEnv` / :class:`~palaestra.envs.board.hex.HexEnv`, plus
  ``num_envs`` and ``autoreset_mode``, and play the same games: each board is what one single env
  would play, with its own opponent (its own engine process for GTP opponents), seeded from the
  vector env's generator at every new game (the random opponent: once per board at
  ``reset(seed=...)``, its moves then continue from game to game).

Every board's observation planes and legal moves live in arrays allocated once. The legal moves are
one ``bytearray`` of B rows in OpenSpiel's action order (Go's board core: the env's) plus a resign
column, which the per-board loop reads (is the agent's move legal?) and writes, and numpy views as a
(B, columns) array: ``info["action_mask"]`` is a copy of it in env-action order, one numpy call per
step. How a step is played:

* Go, and Hex without the swap rule, against the random opponent: the game's board core
  (``_goboard.c``, ``_hexboard.c``, C extensions built by setup.py) plays the whole batch in one call:
  per board the agent's move and the opponent's reply (the same draw from the board's generator as
  ``RandomOpponent``'s), writing the legal row and the planes in place (Go in env order, so that the
  batch's mask and observations are plain copies). OpenSpiel is not called on the way: a board's
  engine state is rebuilt from the core's moves when it is needed (``render()``), and a finished Go
  game is scored from the core's planes as OpenSpiel scores it. Without a core (not built,
  ``PALAESTRA_GO_CORE=0`` / ``PALAESTRA_HEX_CORE=0``, a 1x1 Hex board) the engine applies the moves
  and lists the legal ones, and the same rows are written from Python.
* Any other opponent, or Hex with the swap rule: the single env's general path, board by board.

The speed of each path against raw OpenSpiel (``bench/board_games.py``) is in docs/board-games.md,
"Speed: the board cores".

Autoreset: ``NEXT_STEP`` (the default: a board whose game ended is reset by the next step, which
ignores its action and returns the new game, reward 0), ``SAME_STEP`` (reset in the same step; the
final planes are in ``info["final_obs"]``) or ``DISABLED`` (a finished board stays finished until
``reset(options={"reset_mask": mask})``, as the single env does). ``info`` holds, like a
``SyncVectorEnv`` of the single env: ``action_mask`` (B, actions) bool; ``opponent_action`` (B,)
int, -1 where the opponent did not move (``_opponent_action`` marks where it did); and, on boards
whose game ended in the step, ``winner``, ``reason``, ``score`` (Go) and ``illegal_move``, each with
its ``_key`` mask.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from palaestra.envs.board.go import DEFAULT_KOMI, SCORING_RULES, count_by_engine
from palaestra.envs.board.opponents import GTPOpponent, Opponent, Policy, RandomOpponent, make_opponent
from palaestra.envs.board.rules import (
    COLOR_NAMES,
    RESIGN,
    STEP_ENDED,
    STEP_RESIGNED,
    BoardGame,
    GoGame,
    HexGame,
    parse_color,
)
from palaestra.errors import Error, IllegalMove

__all__ = ["BoardGameVectorEnv", "GoVectorEnv", "HexVectorEnv"]

ILLEGAL_MOVE_MODES = ("lose", "raise")


class BoardGameVectorEnv(VectorEnv[np.ndarray, np.ndarray, np.ndarray]):
    """B boards of one game, each an agent against its own opponent (see the module docstring)."""

    metadata: dict[str, Any] = {
        "render_modes": ["ansi", "rgb_array"],
        "render_fps": 2,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        num_envs: int,
        game: BoardGame,
        player_color: str,
        opponent: str | Opponent | Policy,
        illegal_move_mode: str,
        render_mode: str | None,
        autoreset_mode: AutoresetMode | str,
    ) -> None:
        if not isinstance(num_envs, int) or num_envs < 1:
            raise Error(f"num_envs must be a whole number of at least 1, not {num_envs!r}")
        if illegal_move_mode not in ILLEGAL_MOVE_MODES:
            raise Error(f"illegal_move_mode must be 'lose' or 'raise', not {illegal_move_mode!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise Error(f"render_mode must be one of {self.metadata['render_modes']} or None, not {render_mode!r}")
        if isinstance(opponent, Opponent) and num_envs > 1:
            raise Error(
                f"One {type(opponent).__name__} instance cannot play {num_envs} boards at once: give the "
                "opponent as a string (e.g. 'random', 'mcts:200', 'gnugo') or a callable policy, and every "
                "board gets its own"
            )
        self.num_envs = num_envs
        self.game = game
        self.player_color = player_color
        self.illegal_move_mode = illegal_move_mode
        self.render_mode = render_mode
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self._player = parse_color(player_color)
        self.opponents = [make_opponent(opponent, game) for _ in range(num_envs)]
        for each in self.opponents:
            each.bind(game, 1 - self._player)
        n = game.board_size
        self.single_observation_space = spaces.Box(0.0, 1.0, (3, n, n), np.float32)
        self.single_action_space = spaces.Discrete(game.num_actions)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

        # Legal moves: per board one row of the engine's actions plus resign, in one bytearray.
        engine_actions = game.spiel_game.num_distinct_actions()
        self._resign_column = engine_actions
        self._width = engine_actions + 1
        self._legal = bytearray(num_envs * self._width)
        self._legal_rows = np.frombuffer(self._legal, np.bool_).reshape(num_envs, self._width)
        #: env action -> column of a legal row (the engine action; resign's is the last column)
        self._to_column = [self._resign_column if e == RESIGN else e for e in game.to_engine]
        columns = np.array(self._to_column, np.intp)
        self._mask_columns = None if (columns == np.arange(len(columns))).all() else columns
        self._from_engine = game.from_engine

        # Observations: each board's engine buffer, gathered into one (B, tensor) array per step; or,
        # for Hex against the random opponent, planes kept up to date cell by cell.
        self._observers = [game.make_observer() for _ in range(num_envs)]
        self._set_from = [observer.set_from for observer in self._observers]
        self._tensors = [observer.tensor for observer in self._observers]
        self._gathered = np.zeros((num_envs, self._tensors[0].size), np.float32)
        cells = game.num_cells
        planes = self._gathered[:, : 3 * cells].reshape(num_envs, 3, n, n)
        self._planes_view = planes[:, :, ::-1, :] if isinstance(game, GoGame) else planes
        self._planes_memory = self._gathered.data.cast("B").cast("f")
        self._cells = cells

        self._states: list[Any] = [None] * num_envs
        self._over = [True] * num_envs
        self._resigned: list[int | None] = [None] * num_envs
        self._end_info: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        self._randoms = [o.random if isinstance(o, RandomOpponent) else None for o in self.opponents]
        random_opponents = all(r is not None for r in self._randoms)
        alternating = random_opponents and game.swap_action is None
        self._incremental = alternating and isinstance(game, HexGame)
        #: The game's board core (C: Go's or Hex's), writing every board's legal row and planes in place,
        #: in env order (so that the batch's mask and observations are plain copies); None without it.
        self._core_planes = np.zeros((num_envs, 3, n, n), np.float32)
        self._core = game.board_core(num_envs, self._legal, self._core_planes, env_order=True) if alternating else None
        if self._core is not None:
            self._mask_columns = None
            self._incremental = False  # (Hex's Python path below: the core writes the cells itself)
            self._step_boards = self._step_core
        elif self._incremental:
            self._step_boards = self._step_hex_random
        elif alternating and isinstance(game, GoGame):
            self._step_boards = self._step_go_random
        else:
            self._step_boards = self._step_any
        # A new game on a board of this env starts from a position known in advance (the agent is
        # black and nobody moves before it): its legal row and planes are copied, not recomputed.
        self._fresh_start = alternating and self._player == 0
        initial = game.new_state()
        self._initial_row = bytes([*initial.legal_actions_mask(), 1])
        start_observer = game.make_observer()
        start_observer.set_from(initial, 0)
        self._initial_tensor = start_observer.tensor.copy()
        self._no_moves_row = bytes(self._width)
        self._np_random_seed = None
        self._np_random: np.random.Generator | None = None
        self._seeds: list[int] = []

    # -- the VectorEnv API --------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a game on every board (or on the boards of ``options["reset_mask"]``)."""
        if seed is not None or self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
            self._seeds = []
            if self._fresh_start:
                # The random opponents are seeded here and play on across their boards' games (seeding
                # a random.Random costs more than a whole Hex game's moves; bench/board_games.py).
                for opponent in self.opponents:
                    opponent.reset(self._next_seed())
        mask = (options or {}).get("reset_mask")
        boards = range(self.num_envs) if mask is None else np.flatnonzero(mask).tolist()
        replies = [-1] * self.num_envs
        for b in boards:
            replies[b] = self._restart(b)
        return self._observations(), self._info(replies, {})

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One move for the agent on every board, then each opponent's reply."""
        if self._np_random is None:
            raise Error("Call reset() before step()")
        chosen = self._check_actions(actions)
        replies = [-1] * self.num_envs
        restarting = [b for b, over in enumerate(self._over) if over]
        ended: list[int] = []
        self._step_boards(chosen, replies, ended)  # (boards whose game is over are left alone)
        if restarting and self.autoreset_mode is AutoresetMode.NEXT_STEP:
            for b in restarting:  # their actions are ignored: this step starts their next game
                replies[b] = self._restart(b)
            restarting = []
        rewards = np.zeros(self.num_envs)
        terminated = np.zeros(self.num_envs, np.bool_)
        terminated[restarting] = True  # DISABLED: a finished board stays finished
        endings = {b: self._end_info[b] for b in ended}
        for b, ending in endings.items():
            rewards[b] = ending.pop("reward")
            terminated[b] = True
        final_obs = None
        if ended and self.autoreset_mode is AutoresetMode.SAME_STEP:
            final_obs = self._observations()[ended]
            for b in ended:
                replies[b] = self._restart(b)
        observations = self._observations()
        info = self._info(replies, endings)
        if final_obs is not None:
            info["final_obs"] = np.full(self.num_envs, None, object)
            info["final_obs"][ended] = list(final_obs)
            info["_final_obs"] = terminated.copy()
        return observations, rewards, terminated, np.zeros(self.num_envs, np.bool_), info

    def render(self) -> tuple[Any, ...] | None:
        """Every board's frame (``ansi`` text or ``rgb_array`` image), in board order."""
        from palaestra.envs.board import rendering

        if self.render_mode is None:
            return None
        frames = []
        for b in range(self.num_envs):
            if self._states[b] is None:
                raise Error("Call reset() before render()")
            state = self._engine_state(b)
            info = self._end_info[b]
            outcome = None
            if self._over[b] and info.get("reason") in ("resignation", "illegal move"):
                outcome = f"{info['winner']} wins ({info['reason']})"
            planes = self._observers[b].planes(state)
            view = rendering.BoardView.of(self.game, state, planes, outcome)
            frames.append(rendering.ansi(view) if self.render_mode == "ansi" else rendering.rgb_array(view))
        return tuple(frames)

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the opponents' engine processes (if any)."""
        for opponent in self.opponents:
            opponent.close()

    # -- the three ways to step the boards ------------------------------------------------------------
    # Each loop is the hot path of every batched training loop: flat, with what it needs bound to locals
    # (bench/board_games.py). Rare cases (illegal moves, resignations, ended games) leave through methods.
    def _step_core(self, actions: list[int], replies: list[int], ended: list[int]) -> None:
        """Go or Hex against the random opponent with the board core: one C call plays every board's two
        moves (each opponent drawing from its board's generator, as the single env does) and updates
        the legal rows and planes in place; the engine states wait (see _engine_state())."""
        events = self._core.step_random(  # type: ignore[union-attr]
            actions, self._over, self._randoms, replies, self.illegal_move_mode == "raise"
        )
        for b, event in events:  # in board order, as the other loops meet them
            if event == STEP_ENDED:
                self._end(b, None if replies[b] < 0 else replies[b], ended)
            elif event == STEP_RESIGNED:
                self._resign(b, self._player, None, ended)
            else:
                self._illegal(b, actions[b], ended)

    def _step_go_random(self, actions: list[int], replies: list[int], ended: list[int]) -> None:
        """Go against the random opponent without the board core: the engine rewrites each board's
        planes and legal row."""
        legal, width, resign = self._legal, self._width, self._resign_column
        to_column, from_engine = self._to_column, self._from_engine
        states, randoms, set_from, over = self._states, self._randoms, self._set_from, self._over
        for b, action in enumerate(actions):
            if over[b]:
                continue
            base = b * width
            column = to_column[action]
            if not legal[base + column]:
                self._illegal(b, action, ended)
                continue
            if column == resign:
                self._resign(b, self._player, None, ended)
                continue
            state = states[b]
            state.apply_action(column)
            options = state.legal_actions()
            if not options:  # OpenSpiel lists no legal action exactly when the game is over
                self._end(b, None, ended)
                continue
            reply = options[int(randoms[b]() * len(options))]  # type: ignore[misc]
            state.apply_action(reply)
            replies[b] = from_engine[reply]
            row = state.legal_actions_mask()
            if 1 not in row:
                self._end(b, replies[b], ended)
                continue
            legal[base : base + resign] = row
            set_from[b](state, 0)

    def _step_hex_random(self, actions: list[int], replies: list[int], ended: list[int]) -> None:
        """Hex against the random opponent: only the two cells the moves filled change."""
        legal, width, resign, cells = self._legal, self._width, self._resign_column, self._cells
        states, randoms, over = self._states, self._randoms, self._over
        # The planes, flat, written cell by cell: a memoryview store is as cheap as a numpy scatter of
        # the step's cells would be per board, without collecting them first.
        planes, stride = self._planes_memory, 3 * cells
        mine, theirs, empty = self._player * cells, (1 - self._player) * cells, 2 * cells
        for b, action in enumerate(actions):
            if over[b]:
                continue
            base = b * width
            if not legal[base + action]:  # Hex's env actions are its columns
                self._illegal(b, action, ended)
                continue
            if action == resign:
                self._resign(b, self._player, None, ended)
                continue
            state = states[b]
            state.apply_action(action)
            legal[base + action] = 0
            if state.is_terminal():
                self._end(b, None, ended)
                continue
            # The random opponent's draw (RandomOpponent.act's, which the board core makes too): the
            # int(draw() * n)-th of the n empty cells (the legal Hex moves), in ascending order.
            options = state.legal_actions()
            reply = options[int(randoms[b]() * len(options))]  # type: ignore[misc]
            state.apply_action(reply)
            legal[base + reply] = 0
            replies[b] = reply
            if state.is_terminal():
                self._end(b, reply, ended)
                continue
            at = b * stride
            planes[at + mine + action] = 1.0
            planes[at + empty + action] = 0.0
            planes[at + theirs + reply] = 1.0
            planes[at + empty + reply] = 0.0

    def _step_any(self, actions: list[int], replies: list[int], ended: list[int]) -> None:
        """Any opponent, any rule: the single env's general path, board by board."""
        for b, action in enumerate(actions):
            if self._over[b]:
                continue
            column = self._to_column[action]
            if not self._legal[b * self._width + column]:
                self._illegal(b, action, ended)
                continue
            if column == self._resign_column:
                self._resign(b, self._player, None, ended)
                continue
            self._states[b].apply_action(column)
            reply = self._opponent_moves(b)
            replies[b] = -1 if reply is None else reply
            if self._resigned[b] is not None or self._states[b].is_terminal():
                self._end(b, reply, ended)
            else:
                self._refresh(b)

    # -- one board ------------------------------------------------------------------------------------
    def _restart(self, b: int) -> int:
        """A new game on board ``b``; the opponent's first move (env encoding) if it plays black, else -1."""
        self._states[b] = self.game.new_state()
        self._over[b] = False
        self._resigned[b] = None
        self._end_info[b] = {}
        if self._fresh_start:
            if self._core is not None:
                self._core.reset(b)  # its legal row and planes too
                return -1
            base = b * self._width
            self._legal[base : base + self._width] = self._initial_row
            if self._incremental:
                self._gathered[b] = self._initial_tensor
            else:
                self._tensors[b][:] = self._initial_tensor
            return -1
        self.opponents[b].reset(self._next_seed())
        reply = self._opponent_moves(b)
        if self._resigned[b] is not None or self._states[b].is_terminal():
            ended: list[int] = []
            self._end(b, reply, ended)
            self._end_info[b].pop("reward", None)
        else:
            self._refresh(b)
            if self._core is not None:  # the core follows the opening moves
                self._core.reset(b)
                for action in self._states[b].history():
                    self._core.play(b, action)
        return -1 if reply is None else reply

    def _engine_state(self, b: int) -> Any:
        """Board ``b``'s OpenSpiel state. The board core plays without it, so with the core it is
        rebuilt from the core's moves (the same game: tests/envs/test_go_core.py)."""
        if self._core is not None:
            state = self.game.new_state()
            for action in self._core.history(b):
                state.apply_action(action)
            self._states[b] = state
        return self._states[b]

    def _next_seed(self) -> int:
        """A seed for an opponent, from the env's generator (drawn 256 at a time: one draw costs as
        much as a few moves)."""
        if not self._seeds:
            assert self._np_random is not None
            self._seeds = self._np_random.integers(2**31 - 1, size=256).tolist()[::-1]
        return self._seeds.pop()

    def _refresh(self, b: int) -> None:
        """Board ``b``'s legal row and planes, from its engine state."""
        state = self._states[b]
        base = b * self._width
        self._legal[base : base + self._resign_column] = state.legal_actions_mask()
        self._legal[base + self._resign_column] = 1
        self._set_from[b](state, 0)
        if self._incremental:
            self._gathered[b] = self._tensors[b]

    def _opponent_moves(self, b: int) -> int | None:
        """Let board ``b``'s opponent play while it is its turn; its last action (env encoding) or None."""
        state = self._states[b]
        opponent = self.opponents[b]
        reply: int | None = None
        while not state.is_terminal() and state.current_player() != self._player:
            engine_action = opponent.act(state)
            if engine_action == RESIGN:
                self._resigned[b] = 1 - self._player
                return self.game.resign_action
            if not opponent.always_legal and not (
                0 <= engine_action < len(self._from_engine) and state.legal_actions_mask()[engine_action]
            ):
                raise IllegalMove(f"The opponent {opponent.name} of board {b} chose an illegal move ({engine_action})")
            state.apply_action(engine_action)
            reply = self._from_engine[engine_action]
        return reply

    def _illegal(self, b: int, action: int, ended: list[int]) -> None:
        name = self.game.action_to_string(action)
        if self.illegal_move_mode == "raise":
            raise IllegalMove(
                f"{name} (action {action}) on board {b} is not a legal move for {COLOR_NAMES[self._player]} "
                "there: the point is taken, or it is a ko recapture or suicide; info['action_mask'] lists "
                "the legal actions"
            )
        self._resign(b, self._player, None, ended)
        self._end_info[b].update(reason="illegal move", illegal_move=name)

    def _resign(self, b: int, loser: int, reply: int | None, ended: list[int]) -> None:
        self._resigned[b] = loser
        self._end(b, reply, ended)

    def _end(self, b: int, reply: int | None, ended: list[int]) -> None:
        """Board ``b``'s game is over: its final planes, an empty legal row, the reward and why."""
        self._over[b] = True
        base = b * self._width
        self._legal[base : base + self._width] = self._no_moves_row
        loser = self._resigned[b]
        if self._core is not None:  # the core's planes are the final ones; it knows why the game ended
            self._end_info[b] = self._core_ending(b, loser)
            ended.append(b)
            return
        state = self._states[b]
        self._set_from[b](state, 0)
        self._gathered[b] = self._tensors[b]
        if loser is not None:
            info: dict[str, Any] = {"winner": COLOR_NAMES[1 - loser], "reason": "resignation"}
            reward = -1.0 if loser == self._player else 1.0
        else:
            info = self.game.describe_end(state, self._observers[b].view)
            reward = float(state.returns()[self._player])
        info["reward"] = reward
        self._end_info[b] = info
        ended.append(b)

    def _core_ending(self, b: int, loser: int | None) -> dict[str, Any]:
        """The ending (info keys and reward) of board ``b``'s game, played by the board core."""
        if loser is not None:
            return {"winner": COLOR_NAMES[1 - loser], "reason": "resignation", "reward": -1.0 if loser == self._player else 1.0}
        info, black_return = self.game.describe_core_end(self._core, b, self._core_planes[b])
        info["reward"] = black_return if self._player == 0 else -black_return
        return info

    # -- the batch ------------------------------------------------------------------------------------
    def _check_actions(self, actions: Any) -> list[int]:
        chosen = np.asarray(actions)
        count = self.game.num_actions
        if (
            chosen.shape != (self.num_envs,)
            or chosen.dtype.kind not in "iu"
            or (self.num_envs and (chosen.min() < 0 or chosen.max() >= count))
        ):
            raise IllegalMove(
                f"{actions!r} are not actions for {self.num_envs} boards: give an int array of shape "
                f"({self.num_envs},) with values 0..{count - 1} (the action space is {self.action_space})"
            )
        return chosen.tolist()

    def _observations(self) -> np.ndarray:
        if self._core is not None:
            return self._core_planes.copy()
        if not self._incremental:
            np.stack(self._tensors, out=self._gathered)
        return self._planes_view.copy()

    def _info(self, replies: list[int], endings: dict[int, dict[str, Any]]) -> dict[str, Any]:
        mask = self._legal_rows.copy() if self._mask_columns is None else self._legal_rows[:, self._mask_columns]
        opponent_action = np.array(replies, np.int64)
        info: dict[str, Any] = {
            "action_mask": mask,
            "_action_mask": np.ones(self.num_envs, np.bool_),
            "opponent_action": opponent_action,
            "_opponent_action": opponent_action >= 0,
        }
        for key in ("winner", "reason", "score", "illegal_move"):
            present = [b for b, ending in endings.items() if key in ending]
            if not present:
                continue
            values = np.zeros(self.num_envs) if key == "score" else np.full(self.num_envs, None, object)
            for b in present:
                values[b] = endings[b][key]
            info[key] = values
            info[f"_{key}"] = np.zeros(self.num_envs, np.bool_)
            info[f"_{key}"][present] = True
        return info


class GoVectorEnv(BoardGameVectorEnv):
    """``num_envs`` Go boards; the other arguments are :class:`~palaestra.envs.board.go.GoEnv`'s."""

    def __init__(
        self,
        num_envs: int = 1,
        player_color: str = "black",
        opponent: str | Opponent | Policy = "gnugo",
        observation_type: str = "image3c",
        illegal_move_mode: str = "lose",
        board_size: int = 9,
        komi: float = DEFAULT_KOMI,
        max_moves: int | None = None,
        scoring: str = "tromp-taylor",
        render_mode: str | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ) -> None:
        if observation_type != "image3c":
            raise Error(f"observation_type must be 'image3c' for Go, not {observation_type!r}")
        if scoring not in SCORING_RULES:
            raise Error(f"scoring must be 'tromp-taylor' or 'engine', not {scoring!r}")
        game = GoGame(board_size, komi, max_moves)
        super().__init__(num_envs, game, player_color, opponent, illegal_move_mode, render_mode, autoreset_mode)
        self.board_size = board_size
        self.komi = float(komi)
        self.scoring = scoring
        self._engine_counts = scoring == "engine" and isinstance(self.opponents[0], GTPOpponent)

    def _end(self, b: int, reply: int | None, ended: list[int]) -> None:
        super()._end(b, reply, ended)
        if self._engine_counts:  # as GoEnv does (scoring='engine'): the board's engine counts its game
            ending = self._end_info[b]
            counted = count_by_engine(self.opponents[b], self._states[b], ending, self._player)
            if counted is not None:
                ending["reward"] = counted


class HexVectorEnv(BoardGameVectorEnv):
    """``num_envs`` Hex boards; the other arguments are :class:`~palaestra.envs.board.hex.HexEnv`'s."""

    def __init__(
        self,
        num_envs: int = 1,
        player_color: str = "black",
        opponent: str | Opponent | Policy = "random",
        observation_type: str = "numpy3c",
        illegal_move_mode: str = "lose",
        board_size: int = 9,
        swap: bool = False,
        render_mode: str | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ) -> None:
        if observation_type != "numpy3c":
            raise Error(f"observation_type must be 'numpy3c' for Hex, not {observation_type!r}")
        game = HexGame(board_size, swap)
        super().__init__(num_envs, game, player_color, opponent, illegal_move_mode, render_mode, autoreset_mode)
        self.board_size = board_size
        self.swap = bool(swap)
