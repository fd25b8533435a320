"""``palaestra worker``: evaluate the agents uploaded to a scoreboard (:mod:`palaestra.scoreboard.server.agents.worker`).

It works on the board's database and blob store directly, chosen by the same flags and variables as
``palaestra server`` (``--database-url postgresql://...``, ``--storage s3://...``), so any number of
workers on any machines share one queue. ``--ray ADDRESS`` runs each job's episodes as a Ray task on
that cluster (``local``: a Ray instance of this machine). SIGTERM or Ctrl-C stops it after the job in
progress; a worker killed outright loses that job's progress only (it runs again elsewhere).
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from typing import Any

from palaestra.cli.server import add_database_arguments, config_from_args, private_files, startup_errors


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "worker",
        help="evaluate the agents uploaded to a scoreboard (runs its queued agent jobs)",
        description="Run the scoreboard's queued agent evaluations: claim a job, play its episodes in the "
        "sandbox with the seeds the server drew, and store the result as a verified evaluation. Uses the "
        "board's database and store (the same flags as `palaestra server`); any number of workers may "
        "share them. `palaestra server` runs one itself unless PALAESTRA_EMBEDDED_WORKERS=0.",
    )
    add_database_arguments(parser)
    parser.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run each job's episodes as a task on this Ray cluster (ray://HOST:10001, auto, or local: a "
        "Ray instance of this machine)",
    )
    parser.add_argument("--once", action="store_true", help="run the jobs waiting now, then exit")
    parser.add_argument(
        "--poll", type=float, default=1.0, metavar="SECONDS", help="seconds between looks at an empty queue"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from palaestra.errors import StartupError
    from palaestra.scoreboard.server.agents.worker import AgentWorker, Runner, cannot_evaluate, worker_state

    private_files()
    config = config_from_args(args)
    log = logging.getLogger("palaestra")
    why = cannot_evaluate(config)
    if why is not None and not args.ray:  # refuse to start rather than run agents unconfined
        raise StartupError(f"This worker cannot evaluate agents: {why}")
    with startup_errors(config):
        state = worker_state(config)
    runner: Runner | None = None  # the sandbox on this machine
    if args.ray:
        from palaestra.scoreboard.server.agents.ray import ray_runner

        runner = ray_runner(args.ray, config)
    worker = AgentWorker(state, runner)
    try:
        if args.once:
            done = 0
            while worker.run_once() is not None:
                done += 1
            log.info("Ran %d agent jobs; the queue is empty.", done)
            return 0
        stop = threading.Event()

        def stopping(signum: int, frame: Any) -> None:
            log.info("Stopping after the job in progress (signal %d)", signum)
            stop.set()

        signal.signal(signal.SIGTERM, stopping)
        signal.signal(signal.SIGINT, stopping)
        worker.run_forever(stop, args.poll)
        return 0
    finally:
        state.close()
