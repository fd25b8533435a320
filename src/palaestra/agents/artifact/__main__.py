"""The evaluator's process: ``python -m palaestra.agents.artifact --model M --descriptor D --directory DIR
--seeds 1,2,3 [--report-fd FD] [--no-video]``, as :func:`~palaestra.agents.artifact.sandbox.run_sandboxed`
starts it inside the sandbox.

It reports on the file descriptor ``--report-fd`` one JSON line per event: ``{"event": "ready"}``,
``{"event": "episode", "index": i, "reward": r}`` after each episode and, when it fails,
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
        evaluate_agent(
            args.model,
            descriptor,
            seeds,
            args.directory,
            video=args.video,
            on_episode=lambda index, reward: _report(report, event="episode", index=index, reward=reward),
            checked=ArtifactInfo.from_json(args.checked) if args.checked else None,
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
