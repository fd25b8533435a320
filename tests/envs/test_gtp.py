"""GTP engines as opponents: the real GNU Go, and a fake engine process that misbehaves on purpose."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import palaestra.envs  # noqa: F401
from palaestra.envs.board.go import GoEnv
from palaestra.envs.board.gtp import GTPEngine, find_binary
from palaestra.envs.board.opponents import GTPOpponent, make_opponent
from palaestra.envs.board.rules import GoGame
from palaestra.errors import DependencyNotInstalled, EngineError, Error

REPO = Path(__file__).resolve().parents[2]


def first_moves(env: GoEnv, moves: list[str]) -> list[int | None]:
    """Play ``moves`` (or, where one is taken, the first legal point) and return the replies."""
    replies = []
    mask = np.ones(env.action_space.n, bool)
    for move in moves:
        action = env.string_to_action(move)
        if not mask[action]:
            action = int(np.flatnonzero(mask)[0])
        _, _, done, _, info = env.step(action)
        mask = info["action_mask"]
        replies.append(info["opponent_action"])
        if done:
            break
    return replies


# -- GNU Go, the real engine ------------------------------------------------------------------------


def test_gnugo_plays_legal_moves_and_is_stopped_by_close(gnugo: str, alive) -> None:
    env = gymnasium.make("Go9x9-v0", opponent="gnugo:0")
    opponent = env.unwrapped.opponent
    env.reset(seed=1)
    assert opponent.engine.pid is None  # started lazily, at its first move
    replies = first_moves(env.unwrapped, ["E5", "C3", "G7"])
    pid = opponent.engine.pid
    assert pid is not None and alive(pid)
    assert all(r is not None and 0 <= r <= 82 for r in replies)
    board = env.unwrapped._observer.planes(env.unwrapped.state)
    assert board[1].sum() >= 1  # GNU Go's stones are on palaestra's board
    env.close()
    assert not alive(pid) and opponent.engine.pid is None


def test_gnugo_is_reproducible_from_the_seed(gnugo: str) -> None:
    def game(seed: int) -> list[int | None]:
        env = GoEnv(opponent="gnugo:0", board_size=9)
        try:
            env.reset(seed=seed)
            return first_moves(env, ["C3", "G7", "C7", "G3"])
        finally:
            env.close()

    assert game(5) == game(5)


def test_gnugo_check_env_and_reuse_across_games(gnugo: str) -> None:
    env = GoEnv(opponent="gnugo:0", board_size=5)
    try:
        check_env(env, skip_render_check=True)
        starts = env.opponent.engine.starts
        env.reset(seed=2)
        first_moves(env, ["C3"])
        env.reset(seed=3)
        first_moves(env, ["B2"])
        assert env.opponent.engine.starts == starts  # one process, game after game (clear_board)
    finally:
        env.close()


def test_gnugo_as_black_moves_first(gnugo: str) -> None:
    env = GoEnv(player_color="white", opponent="gnugo:0", board_size=9)
    try:
        obs, info = env.reset(seed=0)
        assert obs[0].sum() == 1 and info["opponent_action"] is not None
    finally:
        env.close()


def test_engine_is_killed_at_interpreter_exit(gnugo: str, alive) -> None:
    code = textwrap.dedent(
        """
        import gymnasium, palaestra.envs
        env = gymnasium.make("Go9x9-v0", opponent="gnugo:0")
        env.reset(seed=0)
        env.step(40)
        print(env.unwrapped.opponent.engine.pid, flush=True)
        # no close(): the interpreter exits with the engine running
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO, check=True
    )
    pid = int(done.stdout.split()[-1])
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_engine_is_killed_when_the_env_is_garbage_collected(gnugo: str, alive) -> None:
    import gc

    env = GoEnv(opponent="gnugo:0")
    env.reset(seed=0)
    env.step(40)
    pid = env.opponent.engine.pid
    assert pid is not None
    del env
    gc.collect()
    assert not alive(pid)


# -- the fake engine: death, garbage, timeouts ---------------------------------------------------------


def test_a_dead_engine_is_restarted_and_the_game_replayed(fake_engine, tmp_path: Path) -> None:
    env = GoEnv(opponent=GTPOpponent(fake_engine("die-once"), move_timeout=10))
    env.reset(seed=0)
    _, _, _, _, info = env.step(env.string_to_action("E5"))
    assert info["opponent_action"] == env.pass_action
    assert env.opponent.engine.starts == 2
    log = (tmp_path / "gtp.log").read_text().splitlines()
    # The second process got the board set up and black's E5 replayed before genmove.
    second = log[log.index("genmove w") + 1 :]
    assert second[:3] == ["boardsize 9", "clear_board", "komi 7.5"]
    assert "play b E5" in second and second[-1] == "genmove w"
    env.close()


def test_an_engine_that_keeps_dying_is_an_error(fake_engine, alive) -> None:
    env = GoEnv(opponent=GTPOpponent(fake_engine("always-die"), move_timeout=10, max_restarts=2))
    env.reset(seed=0)
    with pytest.raises(EngineError, match=r"died \(exit status 3\).*giving up"):
        env.step(0)
    assert env.opponent.engine.starts == 3 and env.opponent.engine.pid is None


def test_garbage_from_the_engine_is_a_clear_error(fake_engine) -> None:
    env = GoEnv(opponent=GTPOpponent(fake_engine("garbage")))
    env.reset(seed=0)
    with pytest.raises(EngineError, match="malformed GTP answer to 'genmove w'.*I am not a GTP engine"):
        env.step(0)
    env.close()


def test_a_bad_vertex_is_a_clear_error(fake_engine) -> None:
    env = GoEnv(opponent=GTPOpponent(fake_engine("badvertex")))
    env.reset(seed=0)
    with pytest.raises(EngineError, match="'Z99', which is not a vertex on 9x9"):
        env.step(0)
    env.close()


def test_engine_resignation_wins_for_the_agent(fake_engine) -> None:
    env = GoEnv(opponent=GTPOpponent(fake_engine("resign")))
    env.reset(seed=0)
    _, reward, done, _, info = env.step(0)
    assert (reward, done, info["reason"]) == (1.0, True, "resignation")
    env.close()


def test_a_refused_command_is_reported_with_the_engines_reason(fake_engine) -> None:
    env = GoEnv(opponent=GTPOpponent(fake_engine("refuse")))
    env.reset(seed=0)
    with pytest.raises(EngineError, match="refused 'play b A9': illegal move"):
        env.step(0)
    env.close()


def test_a_slow_engine_is_stopped_after_the_move_timeout(fake_engine, alive) -> None:
    env = GoEnv(opponent=GTPOpponent(fake_engine("slow"), move_timeout=0.5))
    env.reset(seed=0)
    with pytest.raises(EngineError, match="did not answer 'genmove w' within 0.5 s"):
        env.step(0)
    assert env.opponent.engine.pid is None
    env.close()


def test_gtp_command_string_form(fake_engine) -> None:
    command = " ".join(fake_engine("pass"))
    env = GoEnv(opponent=f"gtp:{command}")
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert info["opponent_action"] == env.pass_action
    pid = env.opponent.engine.pid
    env.close()
    env.close()  # twice is fine
    assert env.opponent.engine.pid is None and pid is not None


def test_an_engines_stderr_is_kept_bounded(fake_engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("palaestra.envs.board.gtp.STDERR_LIMIT", 10_000)
    engine = GTPEngine(fake_engine("chatty"), command_timeout=5)
    try:
        for _ in range(50):  # 50 kB written in all
            engine.send("genmove b")
        assert engine._stderr is not None
        assert os.fstat(engine._stderr.fileno()).st_size <= 11_000
        assert engine.stderr_tail(100).endswith("x" * 90)  # the latest lines are still there
    finally:
        engine.close()


def test_gtp_engine_protocol_directly(fake_engine) -> None:
    engine = GTPEngine(fake_engine("pass"), command_timeout=5)
    assert engine.send("name") == ""
    assert engine.supports("genmove") and not engine.supports("kgs-genmove_cleanup")
    with pytest.raises(EngineError, match="single GTP command"):
        engine.send("play b A1\ngenmove w")
    engine.close()
    assert not engine.running


# -- choosing engines -----------------------------------------------------------------------------------


def test_missing_binaries_say_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("palaestra.envs.board.gtp.ENVIRONMENT_BIN_DIRS", ())
    monkeypatch.setattr("palaestra.envs.board.gtp.EXTRA_BIN_DIRS", ())
    with pytest.raises(DependencyNotInstalled, match="apt-get install gnugo"):
        GoEnv(opponent="gnugo")
    with pytest.raises(DependencyNotInstalled, match="build-pachi.sh"):
        GoEnv(opponent="pachi:uct:_2400")
    with pytest.raises(DependencyNotInstalled, match="katago"):
        GoEnv(opponent="gtp:katago gtp")


def test_find_binary_looks_in_usr_games(gnugo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not gnugo.startswith("/usr/games/"):
        pytest.skip("gnugo is not in /usr/games here")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert find_binary("gnugo") == gnugo


def test_opponent_strings() -> None:
    game = GoGame(9)
    assert make_opponent("random", game).name == "random"
    assert make_opponent("mcts:50", game).name == "mcts:50"
    for bad in ("gnugo:eleven", "gnugo:11", "pachi:uct", "gtp:", "mcts:x", "alphago", 42):
        with pytest.raises(Error):
            make_opponent(bad, game)  # type: ignore[arg-type]


def test_gnugo_game_to_the_end(gnugo: str) -> None:
    # A short whole game on 5x5 against level 0: it ends, scored, and the engine's moves were legal.
    env = GoEnv(opponent="gnugo:0", board_size=5)
    try:
        _, info = env.reset(seed=0)
        rng = np.random.default_rng(0)
        done = False
        while not done:
            options = np.flatnonzero(info["action_mask"][:26])
            _, reward, done, _, info = env.step(int(rng.choice(options)))
        assert info["reason"] in ("two passes", "resignation", "move limit", "superko")
        assert reward in (-1.0, 0.0, 1.0)
    finally:
        env.close()
