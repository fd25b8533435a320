"""Random-vs-random throughput of palaestra's Go9x9 / Hex9x9 against PettingZoo's go_v5 and raw OpenSpiel.

    .venv/bin/python bench/board_games.py [--seconds 2] [--rounds 3] [--boards 64]

Every contender plays whole games with uniformly random legal moves (resign never chosen):

* palaestra: ``gymnasium.make("Go9x9-v0", opponent="random")`` / ``"Hex9x9-v0"``, the agent picking
  from ``info["action_mask"]``; one ``env.step`` is two moves (the agent's and the opponent's reply),
  with the 3x9x9 observation and the legal mask built every step. Go against the random opponent
  runs on palaestra's Go board core (C, see palaestra/envs/board/_goboard.c) where it is built;
  ``PALAESTRA_GO_CORE=0`` measures the OpenSpiel path instead. The single Hex env likewise runs on
  palaestra's Hex board core (palaestra/envs/board/_hexboard.c; ``PALAESTRA_HEX_CORE=0`` turns it off);
  the Hex vector env has its own path on OpenSpiel.
* PettingZoo ``go_v5.env(board_size=9)`` (AEC): one ``env.step`` is one move; the agent picks from
  ``observation["action_mask"]``.
* palaestra's vector envs: ``gymnasium.make_vec("Go9x9-v0", num_envs=B, opponent="random")``
  (the ``vector_entry_point``, B boards per ``step``), the agent picking a random legal move on every
  board at once from ``info["action_mask"]`` with numpy; moves are the agent's and the opponent's.
* raw OpenSpiel: ``state.legal_actions()`` + ``state.apply_action()`` per move, nothing else.

Rounds are interleaved (A, B, C, A, B, C, ...) and the best round of each is kept; time is this
process's CPU time (``time.process_time``; ``--wall`` for wall-clock time), so that other processes
on a busy machine slow no contender down (all of them run in this one thread). Ratios are in moves per second (plies), the unit common to all three;
palaestra's env steps per second are printed too. Targets: palaestra Go >= 20x PettingZoo's, and
>= 0.5x raw OpenSpiel (issue 8); the vector envs >= 0.8x raw OpenSpiel at 64 boards (issue 19).
"""

from __future__ import annotations

import argparse
import random
import time
import warnings
from collections.abc import Callable

Result = tuple[float, float]  # (steps per second, moves per second)
clock = time.process_time


def palaestra_games(env_id: str, seconds: float) -> Result:
    """env.step()s and moves per second of a random agent against the random opponent."""
    import gymnasium

    import palaestra.envs  # noqa: F401  (registers the ids)

    env = gymnasium.make(env_id, opponent="random")
    resign = env.unwrapped.game.resign_action  # type: ignore[attr-defined]
    rng = random.Random(0)
    steps = moves = 0
    seed = 0
    start = clock()
    while clock() - start < seconds:
        _, info = env.reset(seed=seed)
        seed += 1
        terminated = truncated = False
        while not (terminated or truncated):
            legal = info["action_mask"][:resign].nonzero()[0]
            _, _, terminated, truncated, info = env.step(legal[int(rng.random() * len(legal))])
            steps += 1
            # the agent's move, and the opponent's reply where it made one (the agent never resigns)
            moves += 1 if info["opponent_action"] is None else 2
    elapsed = clock() - start
    env.close()
    return steps / elapsed, moves / elapsed


def palaestra_vector_games(env_id: str, boards: int, seconds: float) -> Result:
    """Board-steps and moves per second of ``boards`` boards in one vector env, agent random legal."""
    import gymnasium
    import numpy as np

    import palaestra.envs  # noqa: F401  (registers the ids)

    envs = gymnasium.make_vec(env_id, num_envs=boards, vectorization_mode="vector_entry_point", opponent="random")
    resign = envs.unwrapped.game.resign_action  # type: ignore[attr-defined]
    rng = np.random.default_rng(0)
    _, info = envs.reset(seed=0)
    restarting = np.zeros(boards, bool)
    steps = moves = 0
    start = clock()
    while clock() - start < seconds:
        scores = rng.random(info["action_mask"].shape) * info["action_mask"]
        scores[:, resign] = 0  # never resign
        _, _, terminated, _, info = envs.step(scores.argmax(1))
        # the agent moved on every board but those that restarted; the opponent where it replied
        moves += boards - int(restarting.sum()) + int(info["_opponent_action"].sum())
        steps += boards
        restarting = terminated
    elapsed = clock() - start
    envs.close()
    return steps / elapsed, moves / elapsed


def pettingzoo_go(seconds: float) -> Result:
    """AEC steps (= moves) per second of PettingZoo's go_v5 on 9x9, both sides random."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pettingzoo.classic import go_v5

    env = go_v5.env(board_size=9, komi=7.5)
    rng = random.Random(0)
    steps = 0
    seed = 0
    start = clock()
    while clock() - start < seconds:
        env.reset(seed=seed)
        seed += 1
        for _agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                action = None
            else:
                legal = observation["action_mask"].nonzero()[0]
                action = int(legal[int(rng.random() * len(legal))])
            env.step(action)
            steps += 1
    elapsed = clock() - start
    return steps / elapsed, steps / elapsed


def openspiel_raw(game_string: str, seconds: float) -> Result:
    """apply_action()s (= moves) per second of random play driven from Python."""
    import pyspiel

    game = pyspiel.load_game(game_string)
    rng = random.Random(0)
    moves = 0
    start = clock()
    while clock() - start < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.random() * len(legal))])
            moves += 1
    elapsed = clock() - start
    return moves / elapsed, moves / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one round of one contender")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best is kept")
    parser.add_argument("--no-pettingzoo", action="store_true", help="skip PettingZoo (e.g. not installed)")
    parser.add_argument("--wall", action="store_true", help="time with the wall clock instead of CPU time")
    parser.add_argument("--boards", type=int, default=64, help="boards of the vector envs")
    args = parser.parse_args(argv)
    global clock
    if args.wall:
        clock = time.perf_counter

    contenders: dict[str, Callable[[], Result]] = {
        "palaestra Go9x9-v0": lambda: palaestra_games("Go9x9-v0", args.seconds),
        "raw OpenSpiel go 9x9": lambda: openspiel_raw("go(board_size=9,komi=7.5)", args.seconds),
        "palaestra Hex9x9-v0": lambda: palaestra_games("Hex9x9-v0", args.seconds),
        "raw OpenSpiel hex 9x9": lambda: openspiel_raw("hex(board_size=9)", args.seconds),
        "palaestra Go9x9 vector": lambda: palaestra_vector_games("Go9x9-v0", args.boards, args.seconds),
        "palaestra Hex9x9 vector": lambda: palaestra_vector_games("Hex9x9-v0", args.boards, args.seconds),
    }
    if not args.no_pettingzoo:
        contenders["PettingZoo go_v5 9x9"] = lambda: pettingzoo_go(args.seconds)
    best: dict[str, Result] = {}
    for round_number in range(args.rounds):
        for name, run in contenders.items():
            result = run()
            if name not in best or result[1] > best[name][1]:
                best[name] = result
        print(f"round {round_number + 1}/{args.rounds} done", flush=True)

    print(f"\n{'contender':26s} {'env steps/s':>12s} {'moves/s':>12s}")
    for name, (steps, moves) in best.items():
        print(f"{name:26s} {steps:12,.0f} {moves:12,.0f}")
    go, hex_ = best["palaestra Go9x9-v0"][1], best["palaestra Hex9x9-v0"][1]
    print()
    if "PettingZoo go_v5 9x9" in best:
        pz = best["PettingZoo go_v5 9x9"][1]
        print(f"palaestra Go / PettingZoo go_v5   {go / pz:8.1f}x  moves/s (target >= 20x)")
        print(
            f"  (env steps/s vs PettingZoo steps/s: {best['palaestra Go9x9-v0'][0] / pz:.1f}x; "
            "one palaestra step is two moves)"
        )
    print(
        f"palaestra Go / raw OpenSpiel go   {go / best['raw OpenSpiel go 9x9'][1]:8.2f}x  moves/s (target >= 0.5x)"
    )
    print(
        f"palaestra Hex / raw OpenSpiel hex {hex_ / best['raw OpenSpiel hex 9x9'][1]:8.2f}x  moves/s (target >= 0.5x)"
    )
    for game, raw in (("Go", "raw OpenSpiel go 9x9"), ("Hex", "raw OpenSpiel hex 9x9")):
        ratio = best[f"palaestra {game}9x9 vector"][1] / best[raw][1]
        print(f"palaestra {game} x{args.boards} vector / raw   {ratio:8.2f}x  moves/s (target >= 0.8x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
