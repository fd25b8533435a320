"""The single-agent board-game environment that Go and Hex share: the agent plays one colour, an
opponent the other, on OpenSpiel's rules engine, with the 2017 gym observations and actions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces

from palaestra.envs.board.opponents import Opponent, Policy, RandomOpponent, make_opponent
from palaestra.envs.board.rules import (
    BLACK,
    COLOR_NAMES,
    ENDED_AFTER_MOVE,
    ENDED_AFTER_REPLY,
    RESIGN,
    BoardGame,
    parse_color,
)
from palaestra.errors import Error, IllegalMove, ResetNeeded

ILLEGAL_MOVE_MODES = ("lose", "raise")
frombuffer = np.frombuffer
BOOL = np.dtype(np.bool_)  # passed positionally: numpy parses keyword arguments slowly


class BoardGameEnv(gymnasium.Env[np.ndarray, np.int64]):
    """An agent against an opponent. Rewards: +1 win, -1 loss, 0 draw, at the end only.

    ``info`` always has ``action_mask`` (bool, one entry per action, resign included; all False once
    the game is over) and ``opponent_action`` (the opponent's last reply, or None). At the end it
    also has ``winner`` (``'black'``, ``'white'`` or None), ``reason`` and, for Go, ``score``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 2}

    def __init__(
        self,
        game: BoardGame,
        player_color: str,
        opponent: str | Opponent | Policy,
        illegal_move_mode: str,
        render_mode: str | None,
    ) -> None:
        if illegal_move_mode not in ILLEGAL_MOVE_MODES:
            raise Error(f"illegal_move_mode must be 'lose' or 'raise', not {illegal_move_mode!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise Error(
                f"render_mode must be one of {self.metadata['render_modes']} or None, not {render_mode!r}"
            )
        self.game = game
        self.player_color = player_color
        self.illegal_move_mode = illegal_move_mode
        self.render_mode = render_mode
        self._player = parse_color(player_color)
        self.opponent = make_opponent(opponent, game)
        self.opponent.bind(game, 1 - self._player)
        n = game.board_size
        self.observation_space = spaces.Box(0.0, 1.0, (3, n, n), np.float32)
        self.action_space = spaces.Discrete(game.num_actions)
        self._observer = game.make_observer()
        self._state: Any = None
        self._done = True
        # The engine's legal mask of the position the agent is to play in, with resign's 1 at its end
        # (game.engine_legal()), kept by the env for the next step's check: index it with
        # to_engine[action]. The array in info is a separate copy in env-action order that the agent
        # may change.
        self._no_moves: Sequence[int] = (0,) * game.num_actions
        self._legal: Sequence[Any] = self._no_moves
        self._end_info: dict[str, Any] = {}
        # Bound once: the hot path of step() looks nothing up twice.
        self._planes = self._observer.planes
        self._engine_legal = game.engine_legal
        self._mask_of = game.mask_of
        self._mask_index = game.mask_index
        self._to_engine = game.to_engine
        self._from_engine = game.from_engine
        self._opponent_act = self.opponent.act
        self._random_choice = self.opponent.random if isinstance(self.opponent, RandomOpponent) else None
        self._set_from = self._observer.set_from
        self._planes_view = self._observer.view
        # Hex without the swap: the legal moves are the empty cells, which set_from() has just written
        # into the observation, so step() copies its empty plane into this buffer instead of asking the
        # engine for its legal mask. Its last entry, 1.0, is resign's (the engine_legal() layout).
        self._empty_is_legal = game.empty_is_legal
        self._empty_plane = self._observer.empty
        self._empty_legal = np.ones(game.num_cells + 1, np.float32)
        self._empty_legal_cells = self._empty_legal[:-1]
        # Moves strictly alternate and the opponent's moves need no check: step() takes the short path.
        self._alternating = self.opponent.always_legal and game.swap_action is None
        # Go, and Hex without the swap, against the random opponent: the board core (C) plays both moves
        # of a step and keeps the legal row and the planes up to date, both in env order (info's mask and
        # the observation are plain copies); game.board_core(), None without it. step() then takes
        # _step_core(), which leaves the engine state behind (_stale): the state property rebuilds it
        # from the core's moves when it is read, and a finished game is described by the core
        # (_finish_core()).
        self._stale = False
        self._core_legal = bytearray(game.spiel_game.num_distinct_actions() + 1)
        self._core_row = frombuffer(self._core_legal, BOOL)  # a view, made once
        self._core_planes = np.zeros((3, n, n), np.float32)
        with_core = self._alternating and self._random_choice is not None
        self._core = (
            game.board_core(1, self._core_legal, self._core_planes, env_order=True) if with_core else None
        )
        self._human = render_mode == "human"
        self._resigned: int | None = None
        self._viewer: Any = None

    # -- Gymnasium API -----------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a game; if the agent is white, the opponent has already played black's first move."""
        super().reset(seed=seed)
        self._state = self.game.new_state()
        self._stale = False
        self._done = False
        self._resigned = None
        self._end_info = {}
        self.opponent.reset(int(self.np_random.integers(2**31 - 1)))
        if self._core is not None:
            return self._reset_core()
        reply = self._opponent_moves()
        observation, _, _, info = self._result(reply)
        if self._human:
            self.render()
        return observation, info

    def _reset_core(self) -> tuple[np.ndarray, dict[str, Any]]:
        """reset() with the board core, which plays the random opponent's opening move if it has one
        (the engine state is rebuilt from it when read, as after the core's steps)."""
        core = self._core
        assert core is not None
        core.reset(0)
        reply = None
        if self._player != BLACK:
            # On the empty board every engine action is legal (Go's pass too), so legal_actions() is
            # range(num_distinct_actions()): RandomOpponent.act()'s pick is the drawn index itself.
            engine_action = int(self._random_choice() * len(self._from_engine))  # type: ignore[misc]
            core.play(0, engine_action)
            reply = self._from_engine[engine_action]
            self._stale = True
        if self._human:
            self.render()
        return self._core_planes.copy(), {"action_mask": self._core_row.copy(), "opponent_action": reply}

    def _step_when_done(self) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._state is None:
            raise ResetNeeded("Call reset() before step()")
        # The 2017 behaviour: a finished game stays finished and pays nothing more.
        return self._planes(self.state), 0.0, True, False, self._info(None)

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        """Play ``action`` for the agent, then the opponent's reply."""
        # The hot path of every training loop: kept flat (no helper calls on the way) with everything
        # bound once in __init__; bench/board_games.py measures it. Rare cases leave through _finish().
        if self._done:
            return self._step_when_done()
        if self._core is not None:
            return self._step_core(action)
        try:
            a = int(action)
            if a < 0:
                raise IndexError(a)
            engine_action = self._to_engine[a]
        except (TypeError, ValueError, IndexError):
            raise self._not_an_action(action) from None
        if not self._legal[engine_action]:
            return self._illegal(a)
        if engine_action < 0:  # RESIGN
            self._resigned = self._player
            return self._finish(None)
        state = self._state
        state.apply_action(engine_action)
        if self._alternating:
            random_choice = self._random_choice
            if random_choice is not None:  # the random opponent, inlined
                options = state.legal_actions()
                # OpenSpiel lists no legal action exactly when the game is over (before that Go can
                # always pass and Hex has an empty cell): no is_terminal() call needed.
                if not options:
                    return self._finish(None)
                engine_action = options[int(random_choice() * len(options))]
            else:
                if state.is_terminal():
                    return self._finish(None)
                engine_action = self._opponent_act(state)
                if engine_action < 0:  # RESIGN
                    self._resigned = 1 - self._player
                    return self._finish(self.game.resign_action)
            state.apply_action(engine_action)
            reply: int | None = self._from_engine[engine_action]
        else:
            reply = self._opponent_moves()
            if self._resigned is not None:
                return self._finish(reply)
        # The legal mask (game.legal_mask(), inlined): self._legal in the engine's order for the next
        # step's check (see __init__), and the agent's own writable array in env-action order.
        if self._empty_is_legal:  # Hex without the swap: the empty cells, and resign
            if state.is_terminal():
                return self._finish(reply)
            self._set_from(state, 0)
            legal: Any = self._empty_legal
            self._empty_legal_cells[:] = self._empty_plane  # from the observation just written
            mask = legal.astype(BOOL)  # a new array (Hex's engine order is the env's)
        else:
            legal = state.legal_actions_mask()
            if 1 not in legal:  # all 0 exactly when the game is over: no is_terminal() call needed
                return self._finish(reply)
            legal.append(1)  # resign
            self._set_from(state, 0)
            mask = frombuffer(bytearray(legal), BOOL)
            mask_index = self._mask_index
            if mask_index is not None:
                mask = mask[mask_index]  # a copy in env-action order (Go flips the rows)
        self._legal = legal
        if self._human:
            self.render()
        return self._planes_view.copy(), 0.0, False, False, {"action_mask": mask, "opponent_action": reply}

    def _step_core(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        """step() of a game not over, with the board core: its legal row (env order, resign last) checks
        the action, it plays the random opponent's reply, and the engine state applies both moves."""
        try:
            a = int(action)
            if a < 0:
                raise IndexError(a)
            legal = self._core_legal[a]
        except (TypeError, ValueError, IndexError):
            raise self._not_an_action(action) from None
        if not legal:
            return self._illegal(a)
        engine_action = self._to_engine[a]
        if engine_action < 0:  # RESIGN
            self._resigned = self._player
            return self._finish(None)
        self._stale = True
        reply = self._core.play_random(0, engine_action, self._random_choice)  # type: ignore[union-attr]
        if reply < 0:  # the game ended with the agent's move, or with the reply
            return self._finish(
                None if reply == ENDED_AFTER_MOVE else self._from_engine[ENDED_AFTER_REPLY - reply]
            )
        if self._human:
            self.render()
        info = {"action_mask": self._core_row.copy(), "opponent_action": self._from_engine[reply]}
        return self._core_planes.copy(), 0.0, False, False, info

    def _not_an_action(self, action: Any) -> IllegalMove:
        count = self.game.num_actions
        return IllegalMove(
            f"{action!r} is not an action of this game: actions are ints 0..{count - 1} (Discrete({count}))"
        )

    def render(self) -> Any:
        """``ansi``: the board as text with coordinates; ``rgb_array``: an image; ``human``: a window."""
        from palaestra.envs.board import rendering

        if self._state is None:  # first, as gymnasium's OrderEnforcing wrapper would
            raise ResetNeeded("Call reset() before render()")
        if self.render_mode is None:
            gymnasium.logger.warn(
                "render() called without a render_mode; pass render_mode= to the constructor"
            )
            return None
        outcome = None
        if self._done and self._end_info.get("reason") in ("resignation", "illegal move"):
            outcome = f"{self._end_info['winner']} wins ({self._end_info['reason']})"
        state = self.state
        view = rendering.BoardView.of(self.game, state, self._observer.planes(state), outcome)
        if self.render_mode == "ansi":
            return rendering.ansi(view)
        frame = rendering.rgb_array(view)
        if self.render_mode == "rgb_array":
            return frame
        if self._viewer is None:
            n = self.game.board_size
            self._viewer = rendering.HumanWindow(f"palaestra {self.game.kind} {n}x{n}")
        self._viewer.show(frame, self.metadata["render_fps"])
        return None

    def close(self) -> None:
        """Stop the opponent's engine process (if any) and close the window (if any)."""
        self.opponent.close()
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None
        super().close()

    # -- helpers ---------------------------------------------------------------------------------
    def action_to_string(self, action: int) -> str:
        """``'D4'``, ``'pass'``, ``'resign'`` (Go), ``'c3'``, ``'swap'`` (Hex)."""
        return self.game.action_to_string(int(action))

    def string_to_action(self, text: str) -> int:
        """The action of a move written like ``'D4'`` or ``'pass'``."""
        return self.game.string_to_action(text)

    @property
    def state(self) -> Any:
        """The OpenSpiel state of the game in progress (read it; changing it breaks the env). With Go's
        board core (Go and Hex) it is rebuilt from the core's moves when read after steps (the same state)."""
        if self._stale:
            assert self._core is not None
            state = self.game.new_state()
            for engine_action in self._core.history(0):
                state.apply_action(engine_action)
            self._state = state
            self._stale = False
        return self._state

    def _opponent_moves(self) -> int | None:
        """Let the opponent play while it is its turn; its last action (env encoding) or None."""
        state = self._state
        opponent = self.opponent
        reply: int | None = None
        while not state.is_terminal() and state.current_player() != self._player:
            engine_action = opponent.act(state)
            if engine_action == RESIGN:
                self._resigned = 1 - self._player
                return self.game.resign_action
            if not opponent.always_legal and not (
                0 <= engine_action < len(self.game.from_engine) and state.legal_actions_mask()[engine_action]
            ):
                raise IllegalMove(f"The opponent {opponent.name} chose an illegal move ({engine_action})")
            state.apply_action(engine_action)
            reply = self.game.from_engine[engine_action]
        return reply

    def _illegal(self, action: int) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        name = self.game.action_to_string(action)
        if self.illegal_move_mode == "raise":
            raise IllegalMove(
                f"{name} (action {action}) is not a legal move for {COLOR_NAMES[self._player]} here: the point is "
                "taken, or it is a ko recapture or suicide; info['action_mask'] lists the legal actions"
            )
        self._resigned = self._player
        observation, reward, terminated, truncated, info = self._finish(None)
        self._end_info.update(reason="illegal move", illegal_move=name)
        info.update(self._end_info)
        return observation, reward, terminated, truncated, info

    def _finish(self, reply: int | None) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._core is not None:
            return self._finish_core(reply)
        observation, reward, terminated, info = self._result(reply)
        if self._human:
            self.render()
        return observation, reward, terminated, False, info

    def _finish_core(self, reply: int | None) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        """_finish() with the board core: the game is over (or resigned); the core's planes are the
        final ones, and the core says who won, without the engine state (game.describe_core_end())."""
        observation = self._core_planes.copy()
        self._done = True
        loser = self._resigned
        if loser is not None:
            self._end_info = {"winner": COLOR_NAMES[1 - loser], "reason": "resignation"}
            reward = -1.0 if loser == self._player else 1.0
        else:
            self._end_info, black_return = self.game.describe_core_end(self._core, 0, observation)
            reward = black_return if self._player == 0 else -black_return
        self._legal = self._no_moves
        if self._human:
            self.render()
        return observation, reward, True, False, self._info(reply)

    def _result(self, reply: int | None) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        """Observation, reward, terminated and info of the position now (used after reset and at the end)."""
        state = self._state
        observation = self._planes(state)
        reward = 0.0
        if self._resigned is not None:
            loser = self._resigned
            self._done = True
            self._end_info = {"winner": COLOR_NAMES[1 - loser], "reason": "resignation"}
            reward = -1.0 if loser == self._player else 1.0
        elif state.is_terminal():
            self._done = True
            self._end_info = self.game.describe_end(state, observation)
            reward = float(state.returns()[self._player])
        else:
            self._legal = self._engine_legal(state)
            return observation, reward, False, self._info(reply)
        self._legal = self._no_moves
        return observation, float(reward), True, self._info(reply)

    def _info(self, reply: int | None) -> dict[str, Any]:
        return {"action_mask": self._mask_of(self._legal), "opponent_action": reply, **self._end_info}
