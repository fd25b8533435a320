"""What a large ladder upload costs the other requests: the latency a concurrent ``GET /`` gains while
a 4 MB match upload of 19x19 games is checked, side by side with another checkout's server.

    PYTHONPATH=src .venv/bin/python bench/ladder_upload_stall.py [--peer /work/main/src] [--games 1000]

For each server (this checkout's ``src``, and ``--peer``'s, e.g. main's, when given) the script
starts a fresh ``palaestra server`` on SQLite, sends one small upload (to start what a first upload
starts), asks ``GET /`` back to back for 15 seconds to warm it and 10 quiet seconds more (the
baseline), then sends two uploads of the
same 19x19 game copied up to ``--games`` times (at most 4 MB): one whose last game is forged
(refused with a 422 after every game was replayed: the issue's case) and one that is accepted (the
games stored, the ladder rated again). While each is in flight a client asks ``GET /`` back to back;
last, ``--ladder-games`` games (100,000) are written into the database on the ladder of a 9x9 game,
and that one game is uploaded: the ladder is rated again. Printed for each: the largest, the 90th
percentile and the median latency it saw, and what the upload added
to the quiet ones (the target: under 50 ms added). On a loaded machine the largest is the
scheduler's as much as the server's: the load average is printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

MAX_BODY = 4 * 1024 * 1024


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(src: str) -> Iterator[tuple[str, str, str]]:
    """``(url, api key, data folder)`` of a fresh ``palaestra server`` running the code of ``src``."""
    with tempfile.TemporaryDirectory(prefix="palaestra-stall-") as data_dir:
        env = {**os.environ, "PALAESTRA_DATA_DIR": data_dir, "PYTHONPATH": src}
        env.pop("PALAESTRA_DATABASE_URL", None)
        env.pop("PALAESTRA_STORAGE", None)
        port = free_port()
        log = open(Path(data_dir) / "server.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "palaestra", "-q", "server", "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((Path(data_dir) / "server.log").read_text()[-3000:])
                time.sleep(0.1)
            created = subprocess.run(
                [sys.executable, "-m", "palaestra", "users", "create", "bench"],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            yield url, created.stdout.strip().splitlines()[-1], data_dir
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()


def played_game(folder: Path, env_id: str = "Go19x19-v0") -> tuple[dict[str, Any], str]:
    """One game between two random players: (its match document, its SGF)."""
    from palaestra.ladder.match import play_match, read_match, rules_of_env
    from palaestra.ladder.players import parse_player

    play_match(rules_of_env(env_id, komi=7.5), parse_player("stall-a=random"), parse_player("stall-b=random"), 1,
               folder, seed=5)  # fmt: skip
    document = read_match(folder)
    return document, (folder / document["games"][0]["file"]).read_text()


def upload_body(document: dict[str, Any], text: str, copies: int, forged: bool, seed: int) -> bytes:
    files = {f"game-{n:04d}.sgf": text for n in range(1, copies + 1)}
    if forged:
        last = f"game-{copies:04d}.sgf"
        files[last] = text.replace("RE[B+", "RE[X+").replace("RE[W+", "RE[B+").replace("RE[X+", "RE[W+")
    match = {**document, "seed": seed, "games": [{"file": name} for name in files]}
    return json.dumps({"match": match, "games": files}).encode()


def latencies_during(url: str, key: str, body: bytes) -> tuple[list[float], int, float]:
    """``GET /`` latencies (s) asked back to back while ``body`` is uploaded; the upload's status and time."""
    result: dict[str, Any] = {}

    def upload() -> None:
        start = time.perf_counter()
        response = httpx.post(f"{url}/v1/ladder_matches", content=body, timeout=600,
                              headers={"Authorization": f"Bearer {key}"})  # fmt: skip
        result.update(status=response.status_code, seconds=time.perf_counter() - start)

    thread = threading.Thread(target=upload)
    seen = []
    with httpx.Client(timeout=600) as client:
        thread.start()
        while thread.is_alive():
            start = time.perf_counter()
            client.get(f"{url}/")
            seen.append(time.perf_counter() - start)
    thread.join()
    return seen, result["status"], result["seconds"]


def summary(seen: list[float]) -> tuple[float, float, float]:
    """(largest, 90th percentile, median) of latencies, in ms."""
    ordered = sorted(seen)
    return 1000 * ordered[-1], 1000 * ordered[int(0.9 * (len(ordered) - 1))], 1000 * ordered[len(ordered) // 2]


def quiet_latencies(url: str, seconds: float) -> list[float]:
    """``GET /`` latencies asked back to back for ``seconds`` with nothing else sent."""
    seen = []
    with httpx.Client(timeout=60) as client:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            start = time.perf_counter()
            client.get(f"{url}/")
            seen.append(time.perf_counter() - start)
    return seen


def add_games(data_dir: str, ladder: str, count: int) -> None:
    """``count`` games among 20 players, written straight into the board's SQLite database."""
    import sqlite3

    import numpy as np

    rng = np.random.default_rng(0)
    with sqlite3.connect(Path(data_dir) / "scoreboard.sqlite3") as db:
        db.execute(
            "INSERT INTO ladder_matches (id, user_seq, ladder, game, board_size, komi, players, digest, created) "
            "VALUES ('match_bench', 1, ?, 'Go', 9, 7.5, '[]', 'bench', '2026-01-01 00:00:00')", (ladder,)
        )
        seq = db.execute("SELECT seq FROM ladder_matches WHERE id = 'match_bench'").fetchone()[0]
        first = rng.integers(0, 20, count)
        second = (first + rng.integers(1, 20, count)) % 20
        won = rng.random(count) < 1 / (1 + 10 ** ((second - first) * 50 / 400))
        db.executemany(
            "INSERT INTO ladder_games (id, match_seq, ladder, number, file_name, black, white, winner, reason, "
            "result, score, moves, record) VALUES (?, ?, ?, ?, 'game.sgf', ?, ?, ?, 'score', '', NULL, '[]', '')",
            [(f"game_bench{n}", seq, ladder, n, f"p{a}", f"p{b}", "black" if w else "white")
             for n, (a, b, w) in enumerate(zip(first, second, won))],
        )  # fmt: skip


def measure(label: str, src: str, document: dict[str, Any], text: str, copies: int, small: tuple[dict[str, Any], str],
            ladder_games: int) -> None:  # fmt: skip
    with running_server(src) as (url, key, data_dir):
        httpx.post(f"{url}/v1/ladder_matches", content=upload_body(document, text, 1, False, 99), timeout=600,
                   headers={"Authorization": f"Bearer {key}"})  # fmt: skip
        quiet_latencies(url, 15.0)  # warm: the first requests build what the page keeps
        quiet = summary(quiet_latencies(url, 10.0))
        print(f"  {label:<6} quiet: GET / max {quiet[0]:.0f} ms, p90 {quiet[1]:.0f} ms, median {quiet[2]:.0f} ms")
        for seed, forged in ((1, True), (2, False)):
            body = upload_body(document, text, copies, forged, seed)
            seen, status, seconds = latencies_during(url, key, body)
            during = summary(seen)
            print(
                f"  {label:<6} {'refused' if forged else 'accepted'} upload ({len(body) / 2**20:.1f} MB, answer "
                f"{status} in {seconds:.1f} s): GET / max {during[0]:.0f} ms, p90 {during[1]:.0f} ms, median "
                f"{during[2]:.0f} ms over {len(seen)} requests; added to the quiet max {during[0] - quiet[0]:+.0f} "
                f"ms, to the quiet p90 {during[1] - quiet[1]:+.0f} ms"
            )
        if ladder_games:
            match, game = small
            add_games(data_dir, f"Go9x9-komi{match['komi']:g}", ladder_games)
            body = upload_body(match, game, 1, False, 3)
            seen, status, seconds = latencies_during(url, key, body)
            during = summary(seen)
            print(
                f"  {label:<6} one-game upload to a ladder of {ladder_games:,} games (answer {status} in "
                f"{seconds:.1f} s): GET / max {during[0]:.0f} ms, p90 {during[1]:.0f} ms over {len(seen)} requests; "
                f"added to the quiet max {during[0] - quiet[0]:+.0f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peer", help="another checkout's src folder to run side by side (e.g. main's)")
    parser.add_argument("--games", type=int, default=1000, help="copies of the game (the body stays under 4 MB)")
    parser.add_argument("--ladder-games", type=int, default=100_000, help="games on the ladder of the one-game upload")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        document, text = played_game(Path(folder) / "match")
        small = played_game(Path(folder) / "small", "Go9x9-v0")
    copies = min(args.games, (MAX_BODY - 4096) // (len(json.dumps(text)) + 40))
    print(f"{copies} copies of a {document['games'][0]['moves']}-move 19x19 game")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    here = str(Path(__file__).resolve().parents[1] / "src")
    measure("this", here, document, text, copies, small, args.ladder_games)
    if args.peer:
        measure("peer", args.peer, document, text, copies, small, args.ladder_games)


if __name__ == "__main__":
    main()
