"""The evaluator's process: ``python -m palaestra.agents.artifact --model M --descriptor D --directory DIR
--seeds 1,2,3 [--report-fd FD] [--no-video] [--match PLAN]``, as
:func:`~palaestra.agents.artifact.sandbox.run_sandboxed` starts it inside the sandbox. With ``--match``
(a :class:`~palaestra.agents.artifact.board.MatchPlan` as JSON) it plays a board-game agent's matches
against the anchors (:func:`palaestra.ladder.agent_matches.play_agent_matches`) instead of episodes.

It reports on the file descriptor ``--report-fd`` one JSON line per event: ``{"event": "ready"}``,
``{"event": "episode", "index": i, "reward": r}`` after each episode (or game: ``r`` the agent's
points in it) and, when it fails,
``{"event": "error", "kind": ..., "message": ...}``. Exit status: 0 done, 2 the model was refused,
1 any other failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import IO


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m palaestra.agents.artifact", description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--descriptor", required=True)
    parser.add_argument("--directory", required=True)
    parser.add_argument("--seeds", required=True, help="comma-separated integers")
    parser.add_argument("--report-fd", type=int, default=None)
    parser.add_argument("--no-video", dest="video", action="store_false")
    parser.add_argument("--checked", help="ArtifactInfo as JSON: the caller's check of this model")
    parser.add_argument("--match", help="MatchPlan as JSON: play these matches instead of episodes")
    return parser


def _report(stream: IO[str] | None, **event: object) -> None:
    if stream is not None:
        stream.write(json.dumps(event) + "\n")
        stream.flush()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    report = os.fdopen(args.report_fd, "w", buffering=1) if args.report_fd is not None else None
    _report(report, event="ready")
    try:
        from palaestra.agents.artifact.checks import ArtifactError, ArtifactInfo
        from palaestra.agents.artifact.descriptor import DescriptorError, load_descriptor
        from palaestra.agents.artifact.evaluate import evaluate_agent

        seeds = [int(s) for s in args.seeds.split(",") if s]
        descriptor = load_descriptor(args.descriptor)
        checked = ArtifactInfo.from_json(args.checked) if args.checked else None

        def on_episode(index: int, reward: float) -> None:
            _report(report, event="episode", index=index, reward=reward)

        if args.match:
            from palaestra.agents.artifact.board import MatchPlan
            from palaestra.ladder.agent_matches import play_agent_matches

            plan = MatchPlan.from_json(args.match)
            play_agent_matches(args.model, descriptor, plan, args.directory, checked=checked, on_game=on_episode)
        else:
            evaluate_agent(
                args.model, descriptor, seeds, args.directory, video=args.video, on_episode=on_episode, checked=checked
            )
    except (ArtifactError, DescriptorError) as exc:
        _report(report, event="error", kind="ArtifactError", message=str(exc))
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    except BaseException as exc:
        traceback.print_exc()
        message = " ".join(str(exc).split())
        _report(report, event="error", kind=type(exc).__name__, message=message)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
