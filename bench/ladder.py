"""The ladder's two costs: rating many games, and the server's check of an uploaded game.

    .venv/bin/python bench/ladder.py [--games 10000] [--rounds 3]

* **Ratings**: :func:`palaestra.ladder.ratings.rate` on ``--games`` games among 20 players of known
  strength (Bradley-Terry with a weak prior and its Wald intervals), against OpenSpiel's
  Bradley-Terry (``pyspiel.elo.compute_ratings_from_matrices``, the point estimate only, no interval).
  The largest difference between palaestra's and OpenSpiel's ratings is printed too (0.4 Elo at
  10,000 games; the earlier prior of virtual games per pair was 37-39 Elo away).
* **Checking a game**: :func:`palaestra.scoreboard.server.ladders.checks.check_match` on a one-game
  upload (parse the SGF, replay every move through the rules, compare the result), for a 9x9 and a
  19x19 game between random players (long games, many captures: the dear case), against GNU Go
  loading and replaying the same SGF (``gnugo --mode gtp --infile``, then ``quit``; its start-up included).

Wall-clock seconds, best of ``--rounds``; numbers are noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np


def best(run, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_ratings(count: int, rounds: int) -> None:
    import pyspiel

    from palaestra.ladder.ratings import rate

    rng = np.random.default_rng(0)
    strength = {f"p{i}": 100.0 * i for i in range(20)}
    names = list(strength)
    games = []
    for _ in range(count):
        a, b = rng.choice(names, 2, replace=False)
        p = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400))
        games.append((str(a), str(b), float(rng.random() < p)))
    index = {n: i for i, n in enumerate(names)}

    def openspiel() -> list[float]:
        wins = [[0] * len(names) for _ in names]
        for a, b, s in games:
            winner, loser = (a, b) if s == 1.0 else (b, a)
            wins[index[winner]][index[loser]] += 1
        return pyspiel.elo.compute_ratings_from_matrices(wins)

    ours = best(lambda: rate(games, (("p0", 0.0),)), rounds)
    theirs = best(openspiel, rounds)
    mine = {r.player: r.rating for r in rate(games, (("p0", 0.0),))}
    spiel = openspiel()
    gap = max(abs((mine[n] - mine["p0"]) - (spiel[index[n]] - spiel[index["p0"]])) for n in names)
    print(f"ratings, {count} games, 20 players:")
    print(f"  palaestra with intervals {ours:.3f} s = {ours / theirs:.2f}x OpenSpiel's point estimate ({theirs:.3f} s)")
    print(f"  largest rating difference to OpenSpiel: {gap:.1f} Elo")


def bench_checks(rounds: int) -> None:
    from palaestra.envs.board.gtp import find_binary
    from palaestra.ladder.match import play_match, read_match, rules_of_env
    from palaestra.ladder.players import parse_player
    from palaestra.scoreboard.protocol.ladder import MatchUpload
    from palaestra.scoreboard.server.ladders.checks import check_match

    gnugo = find_binary("gnugo")
    folder = Path(tempfile.mkdtemp())
    try:
        for env_id in ("Go9x9-v0", "Go19x19-v0"):
            target = folder / env_id
            play_match(rules_of_env(env_id, komi=7.5), parse_player("random"), parse_player("r2=random"), 1, target)
            document = read_match(target)
            name = document["games"][0]["file"]
            upload = MatchUpload(match=document, games={name: (target / name).read_text()})
            ours = best(lambda upload=upload: check_match(upload), rounds)
            command = [gnugo, "--mode", "gtp", "--infile", str(target / name)]
            theirs = best(lambda c=command: subprocess.run(c, input=b"quit\n", capture_output=True, check=True), rounds)
            moves = document["games"][0]["moves"]
            print(
                f"check of one {env_id[2:-3]} game ({moves} moves): {ours * 1000:.1f} ms, "
                f"{ours / theirs:.2f}x GNU Go loading it ({theirs * 1000:.1f} ms)"
            )
    finally:
        shutil.rmtree(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bench_ratings(args.games, args.rounds)
    bench_checks(args.rounds)


if __name__ == "__main__":
    main()
