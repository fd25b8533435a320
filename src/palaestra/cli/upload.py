"""``palaestra upload DIR [--algorithm ID] [--writeup URL] [--benchmark ID] [--server URL] [--json]
[--dry-run] [--no-provenance]``, ``palaestra upload --follow DIR [--interval S]`` (a run followed live),
``palaestra upload --seal ID`` and ``palaestra upload --agent MODEL.onnx [--episodes N] [--wait]`` (an
agent the board evaluates itself: :mod:`palaestra.scoreboard.client.agents`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import Any

from palaestra.errors import ConfigurationError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "upload",
        help="upload a training directory to a scoreboard server",
        description="Upload a training directory (or, with --benchmark, a directory of runs) to a palaestra "
        "scoreboard server; or a match folder (palaestra match), whose games the server replays and checks "
        "before adding them to the ladder of their rules. Prints the web page's URL, then the evaluation (or benchmark run) id on the last "
        "line. Running it again after a failure never makes a second evaluation; running it again on the "
        "same directory says 'already uploaded: URL' (or, with another --algorithm or --writeup, refuses, "
        "naming the evaluation those episodes made).",
        epilog="The server and API key come from --server / $PALAESTRA_SERVER / $OPENAI_GYM_API_BASE and "
        "$PALAESTRA_API_KEY / $OPENAI_GYM_API_KEY, else from 'palaestra login'.",
    )
    parser.add_argument(
        "directory", metavar="DIR", nargs="?", help="the training directory a Monitor recorded into"
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="follow DIR while it trains: send its episodes as they are recorded to a live evaluation "
        "and seal it when the Monitor closes (Ctrl-C stops following; run it again to continue)",
    )
    parser.add_argument(
        "--interval",
        metavar="SECONDS",
        type=float,
        default=None,
        help="with --follow: seconds between two reads of DIR (default 5)",
    )
    parser.add_argument(
        "--while-parent-runs",
        action="store_true",
        help="with --follow: stop following, without sealing, once the process that started this one ends "
        "(its end of standard input closes); Monitor(live=True) starts its follower so",
    )
    parser.add_argument(
        "--seal",
        metavar="LIVE_ID",
        help="seal a live evaluation of yours (one whose training process died) into an evaluation; "
        "given its DIR too, with its videos and provenance, as the follower seals",
    )
    parser.add_argument(
        "--agent",
        metavar="MODEL.onnx",
        help="submit an agent (an ONNX policy with its descriptor MODEL.json beside it, as `palaestra agent "
        "pack` writes them) for the board to evaluate itself; prints the job's page and id",
    )
    parser.add_argument(
        "--episodes", metavar="N", type=int, help="with --agent: episodes the board plays (default 100)"
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="with --agent: follow the job, printing each episode's return, until its evaluation is stored "
        "(exit 0) or it failed (exit 1, with the reason and the log's end)",
    )
    parser.add_argument("--algorithm", metavar="ID", help="algorithm id or name (a new name creates one)")
    parser.add_argument("--writeup", metavar="URL", help="a URL describing the run")
    parser.add_argument(
        "--benchmark", metavar="ID", help="upload every sub-directory as one evaluation of a benchmark run"
    )
    parser.add_argument(
        "--tags", metavar="JSON", help="tags of a benchmark run, a JSON object: '{\"lr\": 0.01}'"
    )
    parser.add_argument("--server", metavar="URL", help="scoreboard base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument(
        "--retry-budget",
        metavar="SECONDS",
        type=float,
        help="keep retrying a request that fails in a way that may pass (the server restarting, 503) "
        "for this long (env PALAESTRA_RETRY_BUDGET; default 60)",
    )
    parser.add_argument("--skip-videos", action="store_true", help="upload the episode statistics only")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be sent (the evaluation, its episodes and videos, the run's provenance) "
        "as JSON, and send nothing",
    )
    parser.add_argument(
        "--no-provenance",
        action="store_true",
        help="do not send what the Monitor recorded of the run (git commit, command line, env arguments, seeds)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"id", "object", "web_url", "already_uploaded"} of what was made (or found made '
        "before) as JSON, for scripts",
    )
    parser.set_defaults(handler=_upload)


def _parse_tags(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        tags = json.loads(text)
    except ValueError as e:
        raise ConfigurationError(f"--tags must be a JSON object such as '{{\"lr\": 0.01}}' ({e})") from None
    if not isinstance(tags, dict):
        raise ConfigurationError("--tags must be a JSON object such as '{\"lr\": 0.01}'")
    return tags


def _dry_run(args: argparse.Namespace, tags: dict[str, Any] | None) -> int:
    """What ``palaestra upload`` would send, without a server or a key."""
    from palaestra.scoreboard.client.preparation import prepare_benchmark_run, prepare_training_directory

    send = not args.no_provenance
    prepared = (
        prepare_benchmark_run(args.directory, args.benchmark, args.skip_videos, send)
        if args.benchmark
        else [prepare_training_directory(args.directory, args.skip_videos, send)]
    )
    evaluations = [
        {
            "directory": p.training_dir,
            "env": p.env_id,
            "algorithm": args.algorithm,
            "writeup": args.writeup,
            "gym_version": p.env_info.get("gym_version"),
            "episodes": p.episodes,
            "episode_batch_bytes": len(p.batch or b""),
            "videos": [os.path.basename(v) for v, _ in p.videos],
            "provenance": p.provenance.model_dump(mode="json", exclude_none=True) if p.provenance else None,
        }
        for p in prepared
    ]
    document: dict[str, Any] = {"dry_run": True, "evaluations": evaluations}
    if args.benchmark:
        document["benchmark_run"] = {
            "benchmark_id": args.benchmark,
            "algorithm_id": args.algorithm,
            "tags": tags,
        }
    print(json.dumps(document, indent=2))
    return 0


def _upload(args: argparse.Namespace) -> int:
    from palaestra.scoreboard.client import ScoreboardClient

    if args.seal:
        return _seal(args)
    if args.agent:
        return _upload_agent(args)
    if args.directory is None:
        raise ConfigurationError("palaestra upload needs a training directory DIR (or --seal LIVE_ID)")
    if args.follow:
        return _follow(args)
    tags = _parse_tags(args.tags)
    if os.path.isfile(os.path.join(args.directory, "match.json")):
        return _dry_run_match(args) if args.dry_run else _upload_match(args)
    if args.dry_run:
        return _dry_run(args, tags)
    with ScoreboardClient.from_config(args.server, retry_budget=args.retry_budget) as client:
        result = client.upload(
            args.directory,
            algorithm_id=args.algorithm,
            writeup=args.writeup,
            tags=tags,
            benchmark_id=args.benchmark,
            skip_videos=args.skip_videos,
            send_provenance=not args.no_provenance,
        )
    if args.json:
        made = {"id": result.id, "object": result.object, "web_url": result.web_url}
        print(json.dumps({**made, "already_uploaded": result.already_uploaded}))
    else:
        print(result.web_url)
        print(result.id)
    return 0


def _upload_agent(args: argparse.Namespace) -> int:
    """An agent for the board to evaluate: the job's page and id, and with ``--wait`` its end."""
    from palaestra.scoreboard import protocol
    from palaestra.scoreboard.client import ScoreboardClient
    from palaestra.scoreboard.client.agents import follow_job, submit_agent

    if args.directory is not None:
        raise ConfigurationError(f"--agent uploads a model, not a directory: leave out {args.directory!r}")
    with ScoreboardClient.from_config(args.server, retry_budget=args.retry_budget) as client:
        job = submit_agent(
            client, args.agent, algorithm=args.algorithm, writeup=args.writeup, episodes=args.episodes
        )
        if not args.json:
            print(job.web_url, flush=True)
            print(job.id, flush=True)
        if args.wait:

            def shown(update: Any) -> None:
                if not args.json:
                    returns = ", ".join(f"{r:g}" for r in update.returns[-3:])
                    print(f"{update.status}: {update.episodes_done}/{update.episodes} episodes"
                          + (f" (last returns {returns})" if returns else ""), flush=True)  # fmt: skip

            job = follow_job(client, job.id, on_update=shown)
    evaluation_url = (
        client.server + protocol.evaluation_web_path(job.evaluation_id) if job.evaluation_id else None
    )
    if args.json:
        print(json.dumps({"id": job.id, "object": job.object, "status": job.status, "web_url": job.web_url,
                          "evaluation_id": job.evaluation_id, "evaluation_url": evaluation_url,
                          "ladder": job.ladder, "ladder_matches": job.ladder_matches}))  # fmt: skip
    elif job.status == "done" and job.ladder:
        print(f"verified ladder matches: {client.server}/ladders/{job.ladder}")
        print(" ".join(job.ladder_matches))
    elif job.status == "done":
        print(f"verified evaluation: {evaluation_url}")
        print(job.evaluation_id)
    elif job.status == "failed":
        print(f"The board's evaluation of {args.agent} failed: {job.reason}")
        if job.log_tail:
            print(job.log_tail.rstrip()[-2000:])
    return 1 if job.status == "failed" else 0


def _dry_run_match(args: argparse.Namespace) -> int:
    """What ``palaestra upload`` would send of a match folder, without a server or a key."""
    from palaestra.ladder.match import read_match

    document = read_match(args.directory)
    games = [str(entry.get("file", "")) for entry in document.get("games", [])]
    print(json.dumps({"dry_run": True, "match": document, "games": games}, indent=2))
    return 0


def _upload_match(args: argparse.Namespace) -> int:
    """A match folder (``palaestra match``): its games go to the ladder of their rules."""
    from palaestra.scoreboard.client import ScoreboardClient

    with ScoreboardClient.from_config(args.server, retry_budget=args.retry_budget) as client:
        match = client.upload_match(args.directory)
    if args.json:
        print(json.dumps({"id": match.id, "object": match.object, "web_url": match.web_url}))
    else:
        print(f"{len(match.games)} games checked and added to the ladder {match.ladder}")
        unrated = [game for game in match.games if not game.rated]
        if unrated:  # stored and shown, but left out of the ratings: say so, with the first reason
            print(f"{len(unrated)} of them not rated: {unrated[0].unrated_reason}")
        print(match.web_url)
        print(match.id)
    return 0


def _follow(args: argparse.Namespace) -> int:
    from palaestra.scoreboard.client import ScoreboardClient
    from palaestra.scoreboard.client.follow import DEFAULT_INTERVAL_S, Follower

    interval = DEFAULT_INTERVAL_S if args.interval is None else args.interval
    if interval <= 0:
        raise ConfigurationError(f"--interval must be a positive number of seconds, not {interval}")
    with ScoreboardClient.from_config(args.server, retry_budget=args.retry_budget) as client:
        follower = Follower(
            client,
            args.directory,
            interval=interval,
            algorithm=args.algorithm,
            writeup=args.writeup,
            skip_videos=args.skip_videos,
            send_provenance=not args.no_provenance,
        )
        if args.while_parent_runs:
            threading.Thread(target=_stop_when_stdin_closes, args=(follower,), daemon=True).start()
        sealed = follower.follow()
    if sealed is None or sealed.status != "sealed":  # stopped: the recording process ended, unclosed
        what = (
            "nothing was recorded"
            if sealed is None
            else f"its live evaluation {sealed.id} shows as abandoned; 'palaestra upload --seal {sealed.id} "
            f"{args.directory}' makes it an evaluation with its videos and provenance"
        )
        print(f"Stopped following {args.directory}: the process that recorded it ended ({what}).", file=sys.stderr)
        return 1
    return _print_sealed(args, client, sealed)


def _stop_when_stdin_closes(follower: Any) -> None:
    """``--while-parent-runs``: standard input is a pipe that the parent never writes to; it reads as
    closed once the parent ended, however it ended."""
    while sys.stdin.buffer.read(65536):
        pass
    follower.stop()


def _seal(args: argparse.Namespace) -> int:
    from palaestra.scoreboard.client import ScoreboardClient
    from palaestra.scoreboard.client.follow import seal_body
    from palaestra.scoreboard.protocol.live import LiveEvaluationObject, LiveSeal

    with ScoreboardClient.from_config(args.server, retry_budget=args.retry_budget) as client:
        # with its directory, the seal carries its videos and provenance, as the follower's does
        body = (
            seal_body(client, args.directory, args.seal, args.skip_videos, not args.no_provenance)
            if args.directory
            else LiveSeal()
        )
        sealed = client.http.call(LiveEvaluationObject, "POST", f"/v1/live_evaluations/{args.seal}/seal", body=body)
    return _print_sealed(args, client, sealed)


def _print_sealed(args: argparse.Namespace, client: Any, sealed: Any) -> int:
    from palaestra.scoreboard import protocol

    url = client.server + protocol.evaluation_web_path(sealed.evaluation_id)
    if args.json:
        print(
            json.dumps(
                {"id": sealed.evaluation_id, "object": "evaluation", "web_url": url, "live_id": sealed.id}
            )
        )
    else:
        print(url)
        print(sealed.evaluation_id)
    return 0
