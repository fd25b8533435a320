"""Do the ladder's 95 % rating intervals hold the truth 95 % of the time? Simulated tournaments of known strength.

    PYTHONPATH=src .venv/bin/python bench/rating_calibration.py [--tournaments 200] [--players 20] [--games 5000]

Each tournament: ``--players`` players, the anchor ``gnugo:10`` (held at 1800) among them; their
true strengths either 100 Elo apart (``spaced``: the field of ``bench/ladder.py``) or drawn from a
normal distribution 400 Elo wide (``drawn``); ``--games`` games between uniformly drawn pairs, each
won with the Elo curve's probability. :func:`palaestra.ladder.ratings.rate` rates them; an interval
covers when it holds the player's true strength relative to the anchor. Printed per field: the
share of the non-anchor players' 95 % intervals that cover (the target: 93-97 %), the mean bias
(estimate minus truth, Elo), the slope of the estimates on the truths (1: no pull to the mean), the
mean interval width, and the time to rate one tournament.

A last field adds to the spaced field a player 3,000 Elo above the best, who wins every game: its
rating must be finite, above everyone it beat, and the truth must not lie below its interval.

Last, the server's cost: the time to rate one ladder of 100,000 games among 20 and among 500 players
(what a server derives again after an upload, in its background worker).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from palaestra.ladder.ratings import rate

ANCHOR = ("gnugo:10", 1800.0)


def tournament(truth: np.ndarray, games: int, rng: np.random.Generator) -> list[tuple[str, str, float]]:
    """``games`` games between uniformly drawn pairs of players of strengths ``truth`` (Elo)."""
    count = len(truth)
    first = rng.integers(0, count, games)
    second = (first + rng.integers(1, count, games)) % count  # any other player, uniformly
    won = rng.random(games) < 1.0 / (1.0 + 10.0 ** ((truth[second] - truth[first]) / 400.0))
    names = ["gnugo:10", *(f"p{i}" for i in range(1, count))]
    return [(names[a], names[b], float(w)) for a, b, w in zip(first, second, won)]


def calibrate(field: str, tournaments: int, players: int, games: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    covered, errors, truths, estimates, widths, seconds = [], [], [], [], [], []
    for _ in range(tournaments):
        truth = rng.normal(0.0, 400.0, players) if field == "drawn" else 100.0 * rng.permutation(players)
        played = tournament(truth, games, rng)
        start = time.perf_counter()
        ratings = {r.player: r for r in rate(played, (ANCHOR,))}
        seconds.append(time.perf_counter() - start)
        for i in range(1, players):
            r = ratings[f"p{i}"]
            value = truth[i] - truth[0] + ANCHOR[1]
            covered.append(r.low <= value <= r.high)
            errors.append(r.rating - value)
            truths.append(value)
            estimates.append(r.rating)
            widths.append(r.high - r.low)
    slope = float(np.polyfit(truths, estimates, 1)[0])
    return {
        "coverage": float(np.mean(covered)), "intervals": len(covered), "bias": float(np.mean(errors)),
        "slope": slope, "width": float(np.mean(widths)), "seconds": float(np.median(seconds)),
    }  # fmt: skip


def undefeated(tournaments: int, players: int, games: int, seed: int) -> dict[str, float]:
    """The spaced field plus a player far above it: its rating and interval."""
    rng = np.random.default_rng(seed)
    finite = above = held = 0
    for _ in range(tournaments):
        truth = np.append(100.0 * rng.permutation(players), 100.0 * players + 3000.0)
        played = [(a.replace(f"p{players}", "champion"), b.replace(f"p{players}", "champion"), s)
                  for a, b, s in tournament(truth, games, rng)]  # fmt: skip
        ratings = {r.player: r for r in rate(played, (ANCHOR,))}
        champion = ratings["champion"]
        best_other = max(r.rating for name, r in ratings.items() if name != "champion")
        finite += math.isfinite(champion.rating) and math.isfinite(champion.high)
        above += champion.rating > best_other
        held += champion.low <= truth[-1] - truth[0] + ANCHOR[1]
    return {"finite": finite / tournaments, "above": above / tournaments, "low_below_truth": held / tournaments}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tournaments", type=int, default=200)
    parser.add_argument("--players", type=int, default=20)
    parser.add_argument("--games", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{args.tournaments} tournaments of {args.players} players and {args.games} games each")
    for field in ("spaced", "drawn"):
        r = calibrate(field, args.tournaments, args.players, args.games, args.seed)
        print(
            f"  {field:<7} 95 % intervals cover {100 * r['coverage']:.1f} % of {r['intervals']} "
            f"(target 93-97 %); mean bias {r['bias']:+.2f} Elo; slope {r['slope']:.4f}; "
            f"mean width {r['width']:.0f} Elo; rating one tournament {1000 * r['seconds']:.1f} ms"
        )
    for players in (20, 500):
        rng = np.random.default_rng(args.seed)
        played = tournament(rng.normal(0.0, 400.0, players), 100_000, rng)
        start = time.perf_counter()
        rate(played, (ANCHOR,))
        print(f"  rating a ladder of 100,000 games among {players} players: {time.perf_counter() - start:.2f} s")
    u = undefeated(max(args.tournaments // 4, 1), args.players, args.games, args.seed)
    print(
        f"  a player who wins every game: finite {100 * u['finite']:.0f} %, rated above everyone "
        f"{100 * u['above']:.0f} %, truth not below its interval {100 * u['low_below_truth']:.0f} %"
    )


if __name__ == "__main__":
    main()
