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

Its output is that story alone, with a progress bar while it trains (on a terminal, or with
``--progress``): what else palaestra logs meanwhile (the server's startup lines and access log, the
upload client's steps, the agent's notes) goes to ``<data-dir>/demo.log``, whose path it prints;
warnings and errors are shown as well.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from palaestra.cli import add_progress_arguments, runnable_command
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
LOG_NAME = "demo.log"

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
    add_progress_arguments(parser)
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
    from palaestra.scoreboard.server.accounts import auth
    from palaestra.scoreboard.server.core.state import open_database

    db = open_database(config, migrate_now=False)
    try:
        return auth.create_user(db, USER)[1]
    finally:
        db.dispose()


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).expanduser().absolute()
    port = choose_port(args.host, args.port)
    if args.port and port != args.port:
        say(f"Port {args.port} is busy; using port {port} instead.")
    # Everything the demo writes (database, blobs, runs, videos, the secret, its log) is this user's alone.
    os.umask(0o077)
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with log_to_file(data_dir / LOG_NAME):
        return _serve_and_run(args, data_dir, port)


def _serve_and_run(args: argparse.Namespace, data_dir: Path, port: int) -> int:
    from palaestra.scoreboard.server.core.config import resolve_config
    from palaestra.scoreboard.server.core.running import record_running
    from palaestra.scoreboard.server.embedded import EmbeddedScoreboard

    # Embedded defaults whatever PALAESTRA_* variables say: SQLite and a blob folder in the data dir.
    config = resolve_config(data_dir=data_dir, host=args.host, port=port, environ={})
    scoreboard = EmbeddedScoreboard(config)
    say(f"Starting the scoreboard on {scoreboard.url} (data in {data_dir}, its log in {data_dir / LOG_NAME}) ...")
    scoreboard.start()
    program, activate = runnable_command()
    serve_again = f"{program} server --data-dir {shlex.quote(str(data_dir))} --port {port}"
    try:
        with record_running(config, scoreboard.url):  # while it serves, `palaestra users` finds its data
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
        if activate:
            say(f"palaestra is not on PATH here: `{activate}` puts it there (or type {program} as below).")
        say(f"The scoreboard has stopped; serve it again with: {serve_again}")
    return 0


@contextlib.contextmanager
def log_to_file(path: Path) -> Iterator[None]:
    """While the demo runs, what palaestra logs goes to ``path`` (private: the access log names every
    page asked for); the handlers already there (the command line's, on stderr) keep warnings and
    errors only, so that the terminal shows the demo's story."""
    palaestra_logger = logging.getLogger("palaestra")
    os.close(os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600))
    to_file = logging.FileHandler(path, encoding="utf-8")
    to_file.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    others = list(palaestra_logger.handlers)
    levels = [h.level for h in others]
    for handler in others:
        handler.setLevel(max(handler.level, logging.WARNING))
    palaestra_logger.addHandler(to_file)
    try:
        yield
    finally:
        palaestra_logger.removeHandler(to_file)
        to_file.close()
        for handler, level in zip(others, levels):
            handler.setLevel(level)


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
        ENV_ID, "cem", run_dir, episodes=args.episodes, seed=args.seed, video=True, stop_when_solved=True,
        progress=args.progress,
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
    say(f"Uploading the run and its {summary.videos} videos to the scoreboard ...")
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
