"""Go against Pachi as in 2017: the registered ids, whole games against the real binary, Pachi's count
deciding the winner, and the process checks (lazy start, close, exit, a killed engine, a hung one)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import palaestra.envs  # noqa: F401
from palaestra.envs.board.go import GoEnv
from palaestra.envs.board.opponents import PACHI_2017, GTPOpponent, pachi
from palaestra.envs.board.rules import BLACK, GoGame, area_score
from palaestra.errors import DependencyNotInstalled, EngineError, Error

REPO = Path(__file__).resolve().parents[2]
#: A short time setting for whole games in tests: 0.1 s a move, the least Pachi takes (it checks its
#: search every 100 ms; and it needs at least 500 playouts a move, which take longer).
QUICK = "pachi:uct:0.1"


def play_game(env: GoEnv | gymnasium.Env, seed: int, quiet_moves: int = 40) -> tuple[float, dict, int]:
    """A whole game by a random agent that neither resigns nor passes in its first ``quiet_moves``."""
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    n = env.unwrapped.board_size
    done, moves, reward = False, 0, 0.0
    while not done:
        mask = info["action_mask"][: n * n + 1].copy()
        if moves < quiet_moves and mask[: n * n].any():
            mask[n * n] = False
        _, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        done = terminated or truncated
        moves += 1
    return float(reward), info, moves


def test_the_2017_ids_are_registered_with_the_2017_arguments() -> None:
    for size in (9, 19):
        spec = gymnasium.spec(f"Go{size}x{size}-v0")
        assert spec.kwargs == {
            "player_color": "black",
            "opponent": "pachi:uct:_2400",
            "observation_type": "image3c",
            "illegal_move_mode": "lose",
            "board_size": size,
            "komi": 0.0,
            "scoring": "engine",
        }
        assert spec.nondeterministic and spec.max_episode_steps is None and spec.reward_threshold is None
    go13 = gymnasium.spec("Go13x13-v0")  # not a 2017 id: GNU Go, komi 7.5, reproducible
    assert go13.kwargs["opponent"] == "gnugo" and "komi" not in go13.kwargs and not go13.nondeterministic


def test_the_2017_opponent_is_pachi_at_a_tenth_of_a_second_a_move(pachi_binary: str) -> None:
    env = gymnasium.make("Go9x9-v0")
    opponent = env.unwrapped.opponent
    assert opponent.name == PACHI_2017 and env.unwrapped.komi == 0.0
    argv = opponent.engine.argv
    assert argv[0] == pachi_binary
    assert argv[1:] == ["-d", "0", "-e", "uct", "-t", "0.1", "threads=1,pondering=0"]
    # Pachi's own time strings keep Pachi's meaning (here 5 s a game, 500 playouts a move).
    assert pachi("uct", "_5").engine.argv[-2:] == ["_5", "threads=1,pondering=0"]
    assert pachi("uct", "=500").engine.argv[-2:] == ["=500", "threads=1,pondering=0"]
    with pytest.raises(Error, match="Pachi needs at least 500 playouts a move.*'pachi:uct:0.1'"):
        GoEnv(opponent="pachi:uct:=30")
    env.close()


@pytest.mark.slow
def test_go9x9_v0_plays_a_whole_game_against_the_2017_pachi_decided_by_pachis_count(
    pachi_binary: str, alive
) -> None:
    env = gymnasium.make("Go9x9-v0")
    started = time.monotonic()
    reward, info, moves = play_game(env, seed=0)
    per_move = (time.monotonic() - started) / moves
    pid = env.unwrapped.opponent.engine.pid
    assert info["reason"] in ("two passes", "resignation", "move limit")
    assert info["winner"] == "white" and reward == -1.0  # a random agent loses to Pachi
    if info["reason"] != "resignation":
        assert info["score"] < 0  # Pachi's count, from black's side
    assert per_move < 5  # not 2400 s a game's worth of thinking (about 0.1 s; never timed exactly)
    env.close()
    assert pid is None or not alive(pid)


def test_whole_games_at_a_short_time_setting_are_scored_by_pachi(pachi_binary: str, alive) -> None:
    env = GoEnv(opponent=QUICK, komi=0.0, scoring="engine", board_size=7)
    assert env.opponent.engine.pid is None  # started lazily, at its first move
    for seed in (1, 2):
        reward, info, _ = play_game(env, seed=seed, quiet_moves=20)
        assert info["reason"] in ("two passes", "resignation", "move limit")
        if info["reason"] != "resignation":
            expected = 1.0 if info["score"] > 0 else -1.0 if info["score"] < 0 else 0.0
            assert reward == expected and info["winner"] == {1.0: "black", -1.0: "white", 0.0: None}[reward]
    pid = env.opponent.engine.pid
    assert pid is not None and alive(pid) and env.opponent.engine.starts == 1  # one process, game after game
    env.close()
    assert not alive(pid) and env.opponent.engine.pid is None


def test_pachi_judges_dead_stones_where_the_2017_binding_counted_them_alive(pachi_binary: str) -> None:
    # Black walls off column A with a wall on B, white holds C-J; then a lone white stone at A5, dead.
    game = GoGame(9, komi=0.0)
    moves = []
    for row in range(1, 10):
        moves += [f"B{row}", f"C{row}"]
    moves += ["pass", "A5", "pass", "pass"]
    state = game.new_state()
    for move in moves:
        state.apply_action(game.to_engine[game.string_to_action(move)])
    assert state.is_terminal()
    opponent = pachi("uct", "0.1")
    opponent.bind(game, 1 - BLACK)
    opponent.reset(0)
    try:
        # Pachi takes A5 off the board: black 9 stones + 9 points of column A, white 63.
        assert opponent.final_score(state) == -45.0
    finally:
        opponent.close()
    # Counting the board as it stands (what 2017's binding did: its dead-stone judgement saw a single
    # sample, the board itself, so it never removed a stone), A5 makes column A neutral: white by 55.
    planes = game.make_observer().planes(state)
    assert area_score(planes, 0.0) == -55.0


def test_the_engines_count_decides_even_against_the_board(fake_engine) -> None:
    # The agent's stone alone on the board wins on a plain count; the engine says white won.
    env = GoEnv(opponent=GTPOpponent(fake_engine("score=W+0.5")), komi=0.0, scoring="engine")
    env.reset(seed=0)
    env.step(env.string_to_action("E5"))
    _, reward, done, _, info = env.step(env.pass_action)
    assert done and (reward, info["winner"], info["score"], info["reason"]) == (-1.0, "white", -0.5, "two passes")
    env.close()
    draw = GoEnv(opponent=GTPOpponent(fake_engine("score=0")), komi=0.0, scoring="engine")
    draw.reset(seed=0)
    _, reward, done, _, info = draw.step(draw.pass_action)
    assert done and (reward, info["winner"], info["score"]) == (0.0, None, 0.0)
    draw.close()


def test_the_vector_env_lets_each_boards_engine_count_its_game(fake_engine) -> None:
    from palaestra.envs.board.vector import GoVectorEnv

    command = " ".join(fake_engine("score=W+0.5"))
    envs = GoVectorEnv(num_envs=2, opponent=f"gtp:{command}", komi=0.0, scoring="engine")
    envs.reset(seed=0)
    envs.step(np.array([envs.game.string_to_action("E5")] * 2))
    _, reward, terminated, _, info = envs.step(np.array([envs.game.pass_action] * 2))
    assert terminated.all() and reward.tolist() == [-1.0, -1.0]
    assert info["winner"].tolist() == ["white", "white"] and info["score"].tolist() == [-0.5, -0.5]
    envs.close()


def test_make_vec_of_go9x9_v0_plays_pachi_on_every_board(pachi_binary: str) -> None:
    envs = gymnasium.make_vec("Go9x9-v0", num_envs=2, opponent=QUICK, board_size=7)
    assert [o.name for o in envs.unwrapped.opponents] == [QUICK, QUICK] and envs.unwrapped.scoring == "engine"
    rng = np.random.default_rng(0)
    _, info = envs.reset(seed=0)
    pids = set()
    for _ in range(4):
        legal = info["action_mask"][:, :49]
        actions = (rng.random(legal.shape) * legal).argmax(1)
        _, _, _, _, info = envs.step(actions)
        pids |= {o.engine.pid for o in envs.unwrapped.opponents}
    assert len(pids - {None}) == 2  # an engine process per board
    envs.close()
    assert all(o.engine.pid is None for o in envs.unwrapped.opponents)


def test_a_final_score_that_is_not_a_score_is_a_clear_error(fake_engine) -> None:
    env = GoEnv(opponent=GTPOpponent(fake_engine("score=maybe black")), scoring="engine")
    env.reset(seed=0)
    with pytest.raises(EngineError, match="answered final_score with 'maybe black', which is not a score"):
        env.step(env.pass_action)
    env.close()


def test_engine_scoring_counts_the_board_when_the_opponent_is_no_engine(scripted) -> None:
    # The 2017 id with another opponent (here a scripted one that passes).
    env = gymnasium.make("Go9x9-v0", opponent=scripted(GoGame(9), ["pass", "pass"]))
    env.reset(seed=0)
    env.step(env.unwrapped.string_to_action("E5"))
    _, reward, done, _, info = env.step(env.unwrapped.pass_action)
    assert done and (reward, info["winner"], info["score"]) == (1.0, "black", 81.0)  # komi 0
    with pytest.raises(Error, match="scoring must be 'tromp-taylor' or 'engine', not 'japanese'"):
        GoEnv(opponent="random", scoring="japanese")


def test_without_pachi_the_2017_ids_say_how_to_get_it_and_what_to_play_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("palaestra.envs.board.gtp.ENVIRONMENT_BIN_DIRS", ())
    monkeypatch.setattr("palaestra.envs.board.gtp.EXTRA_BIN_DIRS", ())
    with pytest.raises(DependencyNotInstalled) as raised:
        gymnasium.make("Go9x9-v0")
    message = str(raised.value)
    assert "\n" not in message
    assert "'pachi' was not found" in message and "scripts/build-pachi.sh" in message
    assert "opponent='gnugo'" in message


# -- the set-up's build ---------------------------------------------------------------------------------


def _path_with_only(tmp_path: Path, *tools: str) -> str:
    """A PATH holding only ``tools`` (links to the real ones)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in tools:
        (folder / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    return str(folder)


def test_the_build_says_in_one_line_what_is_missing_without_a_c_compiler(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    done = subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(REPO / "scripts" / "build-pachi.sh"), str(venv)],
        capture_output=True, text=True, timeout=60, env={"PATH": _path_with_only(tmp_path, "dirname")},
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert "no 'cc' here, so Pachi" in line and "opponent='gnugo'" in line and "build-essential" in line
    assert not (venv / "bin" / "pachi").exists()


def test_the_build_does_nothing_when_pachi_is_there(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "pachi").write_text("#!/bin/sh\n")
    (venv / "bin" / "pachi").chmod(0o755)
    done = subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(REPO / "scripts" / "build-pachi.sh"), str(venv)],
        capture_output=True, text=True, timeout=60, env={"PATH": _path_with_only(tmp_path, "dirname")},
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


# -- the process checks, on the real binary ------------------------------------------------------------


def test_a_killed_pachi_is_restarted_and_the_game_replayed_into_it(pachi_binary: str, alive) -> None:
    env = GoEnv(opponent=QUICK, komi=0.0, board_size=9)
    rng = np.random.default_rng(3)
    _, info = env.reset(seed=3)

    def agent_moves(count: int) -> None:
        nonlocal info
        for _ in range(count):
            legal = np.flatnonzero(info["action_mask"][:81])
            _, _, done, _, info = env.step(int(rng.choice(legal)))
            assert not done

    agent_moves(4)
    first = env.opponent.engine.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    # The next moves restart Pachi, replay the eight moves so far, and go on: every reply is legal on
    # palaestra's board (a Pachi that had missed the replay would play on taken points, an EngineError).
    agent_moves(4)
    assert env.opponent.engine.starts == 2 and env.opponent.engine.pid not in (None, first)
    assert not alive(first)
    env.close()


def test_a_hung_pachi_is_stopped_after_the_move_timeout(pachi_binary: str, alive) -> None:
    env = GoEnv(opponent=pachi("uct", "0.1", move_timeout=1.0, command_timeout=1.0), board_size=9)
    env.reset(seed=0)
    env.step(40)
    pid = env.opponent.engine.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(EngineError, match=r"pachi:uct:0.1 did not answer 'play b C3' within 1 s"):
            env.step(env.string_to_action("C3"))
        assert env.opponent.engine.pid is None and not alive(pid)
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
        env.close()


def test_pachi_is_killed_at_interpreter_exit(pachi_binary: str, alive) -> None:
    code = textwrap.dedent(
        f"""
        import gymnasium, palaestra.envs
        env = gymnasium.make("Go9x9-v0", opponent={QUICK!r})
        env.reset(seed=0)
        env.step(40)
        print(env.unwrapped.opponent.engine.pid, flush=True)
        # no close(): the interpreter exits with Pachi running
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
