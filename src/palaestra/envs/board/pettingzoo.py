"""Go and Hex as two-player PettingZoo AEC environments, for self-play, on the same rules engine.

    from palaestra.envs.board.pettingzoo import go_env, hex_env
    env = go_env(board_size=9)            # agents "black_0" and "white_0"
    env.reset(seed=0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        mask = observation["action_mask"]
        env.step(None if terminated or truncated else policy(observation["observation"], mask))

Observations are dicts: ``observation`` (float32 planes (3, N, N): black, white, empty, the same for
both agents, as in the Gymnasium envs) and ``action_mask`` (int8, zeros when it is not the agent's
turn). Actions are the Gymnasium envs' (Go: pass N², resign N²+1; Hex: resign N², swap N²+1). An
illegal move or a resignation loses: -1 to the mover, +1 to the other. Needs ``pip install pettingzoo``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from palaestra.envs.board import rendering
from palaestra.envs.board.rules import BLACK, COLOR_NAMES, RESIGN, BoardGame, GoGame, HexGame
from palaestra.errors import DependencyNotInstalled, Error

try:
    from pettingzoo import AECEnv
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise DependencyNotInstalled(
        f"palaestra's two-player board games need PettingZoo ({exc}): pip install 'palaestra[pettingzoo]'"
    ) from exc

AGENTS = ("black_0", "white_0")


class BoardGameAEC(AECEnv):
    """Two agents, black (``black_0``, moves first) and white (``white_0``), on one OpenSpiel game."""

    metadata: dict[str, Any] = {
        "render_modes": ["ansi", "rgb_array", "human"],
        "name": "palaestra_board_game_v0",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(self, game: BoardGame, render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise Error(
                f"render_mode must be one of {self.metadata['render_modes']} or None, not {render_mode!r}"
            )
        self.game = game
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        n = game.board_size
        self.observation_spaces = {
            agent: spaces.Dict(
                {
                    "observation": spaces.Box(0.0, 1.0, (3, n, n), np.float32),
                    "action_mask": spaces.Box(0, 1, (game.num_actions,), np.int8),
                }
            )
            for agent in self.possible_agents
        }
        self.action_spaces = {agent: spaces.Discrete(game.num_actions) for agent in self.possible_agents}
        self._observer = game.make_observer()
        self._state: Any = None
        self._viewer: Any = None
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    @property
    def state_object(self) -> Any:
        """The OpenSpiel state of the game in progress."""
        return self._state

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new game, black to move. (The rules are deterministic; ``seed`` is accepted for the API.)"""
        self._state = self.game.new_state()
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in self.agents}
        self.agent_selection = AGENTS[BLACK]
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """The planes, and the agent's legal actions (all zeros when it is not its turn)."""
        state = self._state
        planes = self._observer.planes(state)
        if (
            agent == self.agent_selection
            and not state.is_terminal()
            and not self.terminations.get(agent, True)
        ):
            mask = self.game.legal_mask(state).astype(np.int8)
        else:
            mask = np.zeros(self.game.num_actions, np.int8)
        return {"observation": planes, "action_mask": mask}

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        state = self._state
        player = AGENTS.index(agent)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        try:
            a = int(action)
        except (TypeError, ValueError):
            raise Error(
                f"{action!r} is not an action: use an int in 0..{self.game.num_actions - 1}"
            ) from None
        if not self.game.is_legal(state, a):
            self._end(loser=player, reason="illegal move")
        elif self.game.to_engine[a] == RESIGN:
            self._end(loser=player, reason="resignation")
        else:
            state.apply_action(self.game.to_engine[a])
            if state.is_terminal():
                returns = state.returns()
                for index, name in enumerate(AGENTS):
                    self.rewards[name] = float(returns[index])
                self._end(loser=None, reason=self.game.end_reason(state))
            else:
                self.agent_selection = AGENTS[state.current_player()]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _end(self, loser: int | None, reason: str) -> None:
        if loser is not None:
            self.rewards[AGENTS[loser]] = -1.0
            self.rewards[AGENTS[1 - loser]] = 1.0
            winner: int | None = 1 - loser
        else:
            winner = self.game.winner(self._state)
        info: dict[str, Any] = {"winner": None if winner is None else COLOR_NAMES[winner], "reason": reason}
        if isinstance(self.game, GoGame):
            info["score"] = self.game.describe_end(self._state, self._observer.planes(self._state))["score"]
        for name in self.agents:
            self.terminations[name] = True
            self.infos[name] = dict(info)

    def render(self) -> Any:
        if self.render_mode is None:
            return None
        view = rendering.BoardView.of(self.game, self._state, self._observer.planes(self._state))
        if self.render_mode == "ansi":
            return rendering.ansi(view)
        frame = rendering.rgb_array(view)
        if self.render_mode == "rgb_array":
            return frame
        if self._viewer is None:
            self._viewer = rendering.HumanWindow(f"palaestra {self.game.kind} (self-play)")
        self._viewer.show(frame, self.metadata["render_fps"])
        return None

    def close(self) -> None:
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None


def go_env(
    board_size: int = 9, komi: float = 7.5, max_moves: int | None = None, render_mode: str | None = None
) -> BoardGameAEC:
    """Two-player Go (the rules of :class:`~palaestra.envs.board.go.GoEnv`)."""
    env = BoardGameAEC(GoGame(board_size, komi, max_moves), render_mode)
    env.metadata = {**env.metadata, "name": "palaestra_go_v0"}
    return env


def hex_env(board_size: int = 9, swap: bool = False, render_mode: str | None = None) -> BoardGameAEC:
    """Two-player Hex (the rules of :class:`~palaestra.envs.board.hex.HexEnv`)."""
    env = BoardGameAEC(HexGame(board_size, swap), render_mode)
    env.metadata = {**env.metadata, "name": "palaestra_hex_v0"}
    return env


__all__ = ["AGENTS", "BoardGameAEC", "go_env", "hex_env"]
