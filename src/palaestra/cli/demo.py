"""``palaestra demo``: the whole loop on embedded defaults, from an agent that learns to the scoreboard page.

1. Start a scoreboard in this process, its SQLite database and blob folder in ``--data-dir`` (the
   same meaning as for ``palaestra server`` and ``palaestra users``: ``palaestra server --data-dir D``
   serves what ``palaestra demo --data-dir D`` recorded).
2. Create a user ``demo`` and an API key.
3. Train the cross-entropy-method agent on CartPole-v1 under the Monitor, with videos on the capped
   cubic schedule, until it is solved (at most ``--episodes`` episodes).
4. Upload the training directory and print the evaluation's URL.
5. Keep serving until Ctrl-C (or stop at once with ``--no-serve``), then print the command that serves
   the data again.

Each run records into a new ``<data-dir>/runs/CartPole-v1-<time>`` directory, so the demo can be run
again on the same data directory: the scoreboard then lists every run.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from palaestra.cli.run import positive_int
from palaestra.cli.server import cannot_listen
from palaestra.errors import Error, StartupError

if TYPE_CHECKING:
    from palaestra.scoreboard.server.embedded import EmbeddedScoreboard

ENV_ID = "CartPole-v1"
DEFAULT_DATA_DIR = ".palaestra-demo"
DEFAULT_PORT = 8000
DEFAULT_SEED = 3
DEFAULT_EPISODES = 1500
USER = "demo"
ALGORITHM = "palaestra-cem"

logger = logging.getLogger("palaestra.demo")


class DemoError(Error):
    """The demo could not finish its run (its evaluation page did not answer)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="the whole loop: train CEM on CartPole-v1, record, upload, show it on a local scoreboard",
        description="Start a scoreboard on embedded defaults (SQLite + a blob folder in --data-dir), create "
        "a user and API key, train the cross-entropy-method agent on CartPole-v1 under the Monitor with "
        "videos until it is solved, upload the run, print the evaluation's URL and keep serving until "
        "Ctrl-C.",
    )
    parser.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        help="the scoreboard's data folder, as for `palaestra server --data-dir`; the runs go into its "
        f"runs/ folder (default ./{DEFAULT_DATA_DIR})",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to serve on (default {DEFAULT_PORT}; a free one is used if it is busy)",
    )
    parser.add_argument(
        "--episodes",
        type=positive_int,
        default=DEFAULT_EPISODES,
        help=f"stop training after this many episodes if not solved before (default {DEFAULT_EPISODES})",
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"seed of the run (default {DEFAULT_SEED})"
    )
    parser.add_argument(
        "--no-serve",
        "--exit-after-upload",
        dest="serve",
        action="store_false",
        help="stop the scoreboard and exit once the run is uploaded",
    )
    parser.set_defaults(handler=run)


def choose_port(host: str, port: int) -> int:
    """``port`` if it can be bound on ``host``, else a free port chosen by the system."""
    if port and cannot_listen(host, port) is None:
        return port
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, 0))
        except OSError as exc:
            raise StartupError(
                f"The scoreboard cannot listen on {host} ({exc.strerror or exc}): pass --host with an address of "
                "this machine (the default, 127.0.0.1, serves this machine only)"
            ) from None
        return int(s.getsockname()[1])


def _new_run_directory(runs: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = runs / f"{ENV_ID}-{stamp}"
    n = 2
    while candidate.exists():
        candidate = runs / f"{ENV_ID}-{stamp}-{n}"
        n += 1
    return candidate


def _create_key(config: Any) -> str:
    from palaestra.scoreboard.server import auth
    from palaestra.scoreboard.server.state import open_database

    db = open_database(config, migrate_now=False)
    try:
        return auth.create_user(db, USER)[1]
    finally:
        db.dispose()


def run(args: argparse.Namespace) -> int:
    from palaestra.scoreboard.server.config import resolve_config
    from palaestra.scoreboard.server.embedded import EmbeddedScoreboard

    data_dir = Path(args.data_dir).expanduser().absolute()
    # Everything the demo writes (database, blobs, runs, videos, the secret) is this user's alone.
    os.umask(0o077)
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    port = choose_port(args.host, args.port)
    if port != args.port:
        say(f"Port {args.port} is busy; using port {port} instead.")
    # Embedded defaults whatever PALAESTRA_* variables say: SQLite and a blob folder in the data dir.
    config = resolve_config(data_dir=data_dir, host=args.host, port=port, environ={})
    scoreboard = EmbeddedScoreboard(config)
    say(f"Starting the scoreboard on {scoreboard.url} (data in {data_dir}) ...")
    scoreboard.start()
    serve_again = f"palaestra server --data-dir {shlex.quote(str(data_dir))} --port {port}"
    try:
        code = _main_job(args, scoreboard, data_dir)
        if code != 0 or not args.serve:
            return code
        say(f"Serving the scoreboard at {scoreboard.url} until Ctrl-C.")
        scoreboard.wait()
    except KeyboardInterrupt:
        say("Stopping the scoreboard.")
        return 0
    finally:
        scoreboard.stop()
        say(f"The scoreboard has stopped; serve it again with: {serve_again}")
    return 0


def _main_job(args: argparse.Namespace, scoreboard: EmbeddedScoreboard, data_dir: Path) -> int:
    import httpx

    from palaestra.scoreboard.client import upload
    from palaestra.scoreboard.protocol import evaluation_web_path
    from palaestra.training import run_agent

    key = _create_key(scoreboard.config)
    say(f"Created user {USER!r} with API key {key}")
    say(f"  (to upload more runs: export PALAESTRA_SERVER={scoreboard.url} PALAESTRA_API_KEY={key})")
    run_dir = _new_run_directory(data_dir / "runs")
    say(
        f"Training the cross-entropy-method agent on {ENV_ID} (seed {args.seed}), recording into {run_dir} ..."
    )
    summary = run_agent(
        ENV_ID, "cem", run_dir, episodes=args.episodes, seed=args.seed, video=True, stop_when_solved=True
    )
    if summary.interrupted:
        raise KeyboardInterrupt
    if summary.solved_at is not None:
        say(
            f"Solved {ENV_ID} after {summary.solved_at} episodes: the mean reward of episodes "
            f"{summary.solved_at}-{summary.solved_at + summary.trials - 1} reached {summary.reward_threshold:g} "
            f"({summary.episodes} episodes, {summary.steps} steps, {summary.videos} videos, {summary.seconds:.1f} s)."
        )
    else:
        say(
            f"Not solved within {summary.episodes} episodes (best {summary.trials}-episode mean {summary.best_mean})."
        )
    say("Uploading ...")
    evaluation_id = upload(os.fspath(run_dir), algorithm_id=ALGORITHM, api_key=key, server=scoreboard.url)
    url = scoreboard.url + evaluation_web_path(evaluation_id)
    try:
        status = httpx.get(url, timeout=30).status_code
    except httpx.HTTPError as exc:
        raise DemoError(f"The evaluation page {url} did not answer: {exc}") from None
    if status != 200:
        raise DemoError(f"The evaluation page {url} answered HTTP {status}")
    say(f"Scoreboard: {scoreboard.url}/")
    say(f"Your evaluation: {url}")
    return 0


def say(message: str) -> None:
    """Print one line of the demo's story (flushed, so a pipe sees it at once)."""
    print(message, flush=True)
