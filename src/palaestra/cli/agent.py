"""``palaestra agent pack|check``: make an agent artifact, and run it locally exactly as the board would.

::

    palaestra agent pack ppo_cartpole.zip --sb3 ppo --env CartPole-v1 --out cartpole.onnx
    palaestra agent pack policy.pt --env ALE/Breakout-v5 --preprocessing atari --frame-skip 1 --out breakout.onnx
    palaestra agent check cartpole.onnx --episodes 10

``check`` runs the board's static checks, then evaluates the model in the board's sandbox under the
board's protocol, one episode per seed (random seeds, or ``--seed S`` for S, S+1, ...), into a
training directory (``--directory``, default a new folder beside the model), and prints the score.
Exit status 1 when the model is refused or its evaluation fails, with the reason.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agent",
        help="agent artifacts (an ONNX policy + its descriptor): pack one, check it as the board would",
        description="Agent artifacts: a policy as one ONNX file with a JSON descriptor beside it, which a "
        "scoreboard evaluates itself (docs/agents.md). Needs the 'agents' extra.",
    )
    commands = parser.add_subparsers(dest="agent_command", metavar="SUBCOMMAND", required=True)

    pack = commands.add_parser(
        "pack",
        help="write MODEL.onnx + MODEL.json from an SB3 model zip or a saved torch module",
        description="Export a trained policy to ONNX and write its descriptor beside it: an SB3 model zip "
        "(--sb3 ALGO; needs stable-baselines3 and torch) or a whole torch.nn.Module saved with torch.save "
        "(needs torch), whose forward maps a batch of observations to what --action reads.",
    )
    pack.add_argument("source", metavar="SOURCE", help="the SB3 model zip, or the saved torch module (.pt)")
    pack.add_argument("--env", required=True, metavar="ENV_ID", help="the env id the policy plays")
    pack.add_argument("--out", required=True, metavar="MODEL.onnx", help="the model to write (the descriptor goes beside it)")
    pack.add_argument("--sb3", metavar="ALGO", help="SOURCE is an SB3 zip of this algorithm (ppo, a2c, dqn, sac, td3, ddpg)")
    pack.add_argument(
        "--preprocessing", default="none", choices=("none", "flatten", "atari"), help="observation preprocessing"
    )
    pack.add_argument("--frame-skip", type=int, help="atari preprocessing: frames a step (1 for ALE/*-v5 ids)")
    pack.add_argument("--stack", type=int, help="atari preprocessing: frames stacked (default 4)")
    pack.add_argument(
        "--action",
        choices=("argmax", "sample", "index", "clip", "rescale"),
        help="how the output becomes an action (torch modules; default argmax for discrete actions, clip for continuous)",
    )
    pack.set_defaults(handler=run_pack)

    check = commands.add_parser(
        "check",
        help="check MODEL.onnx and evaluate it in the board's sandbox, printing the score",
        description="Run the board's static checks on MODEL.onnx (with MODEL.json beside it), then evaluate "
        "it exactly as the board would: in the sandbox, under the env's protocol, recorded by the Monitor; a "
        "Go or Hex agent plays the anchors the board would play it against, into match folders.",
    )
    check.add_argument("model", metavar="MODEL.onnx")
    check.add_argument("--descriptor", metavar="FILE", help="the descriptor (default: MODEL.json beside the model)")
    check.add_argument("--episodes", type=int, default=10, help="episodes to run (the board runs 100; default 10)")
    check.add_argument("--seed", type=int, help="seeds S, S+1, ... (default: random, as the board draws them)")
    check.add_argument("--directory", metavar="DIR", help="the training directory to write (default: MODEL.check/)")
    check.add_argument("--no-video", dest="video", action="store_false", help="record no video")
    check.add_argument("--static-only", action="store_true", help="run the static checks only")
    check.add_argument(
        "--games", type=int, default=2, help="board games: the games against each anchor (the board plays 2; default 2)"
    )
    check.add_argument(
        "--move-seconds", type=float, default=10.0, help="board games: each player's time a move (default 10, the board's)"
    )
    check.add_argument(
        "--allow-unconfined",
        action="store_true",
        help="where the sandbox cannot be set up, evaluate without it (the board refuses unless its operator allows)",
    )
    check.set_defaults(handler=run_check)


def run_pack(args: argparse.Namespace) -> int:
    from palaestra.agents.artifact.descriptor import AgentDescriptor
    from palaestra.agents.artifact.pack import pack_sb3, pack_torch

    preprocessing: dict[str, Any] = {"name": args.preprocessing}
    if args.preprocessing == "atari":
        preprocessing.update({k: v for k, v in (("frame_skip", args.frame_skip), ("stack", args.stack)) if v})
    if args.sb3:
        info = pack_sb3(args.source, args.sb3, args.env, args.out, preprocessing)
    else:
        action = args.action or _default_action(args.env)
        descriptor = AgentDescriptor.from_document(
            {
                "env_id": args.env,
                "preprocessing": preprocessing,
                "action": action,
                "deterministic": action != "sample",
            }
        )
        info = pack_torch(args.source, descriptor, args.out)
    print(f"Wrote {args.out} and its descriptor; checked: {_info_line(info)}")
    return 0


def _default_action(env_id: str) -> str:
    import gymnasium

    from palaestra.agents.artifact.protocol import make_protocol_env

    env = make_protocol_env(env_id)
    try:
        return "argmax" if isinstance(env.action_space, gymnasium.spaces.Discrete) else "clip"
    finally:
        env.close()


def _info_line(info: Any) -> str:
    return (
        f"{info.size:,} bytes, sha256 {info.sha256[:16]}…, {info.nodes} nodes, opset {info.opset}; "
        f"input {info.input_name!r} {list(info.input_shape)} {info.input_type}, "
        f"output {info.output_name!r} {list(info.output_shape)}; acts in {info.action_space}"
    )


def run_check(args: argparse.Namespace) -> int:
    import os
    import random

    import numpy as np

    from palaestra.agents.artifact import (
        SandboxLimits,
        check_artifact,
        descriptor_path_for,
        load_descriptor,
        run_sandboxed,
    )
    from palaestra.agents.artifact.board import is_board_game
    from palaestra.errors import Error

    descriptor_path = args.descriptor or descriptor_path_for(args.model)
    descriptor = load_descriptor(descriptor_path)
    info = check_artifact(args.model, descriptor)
    print(f"Static checks passed: {_info_line(info)}")
    if args.static_only:
        return 0
    if args.episodes < 1:
        raise Error(f"--episodes must be at least 1, not {args.episodes}")
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31 - args.episodes)
    seeds = list(range(first, first + args.episodes))
    directory = args.directory or os.path.splitext(args.model)[0] + ".check"

    if is_board_game(descriptor.env_id):
        return _check_board_agent(args, descriptor_path, descriptor.env_id, first, directory)

    def progress(index: int, reward: float) -> None:
        print(f"  episode {index + 1}/{len(seeds)} (seed {seeds[index]}): {reward:g}", flush=True)

    print(f"Evaluating {args.episodes} episodes of {descriptor.env_id} in the sandbox into {directory}/")
    result = run_sandboxed(
        args.model,
        descriptor_path,
        seeds,
        directory,
        SandboxLimits(allow_unconfined=args.allow_unconfined, video=args.video),
        on_episode=progress,
    )
    if not result.confined:
        print("WARNING: the sandbox could not be set up; this evaluation ran unconfined")
    if not result.ok:
        raise Error(f"the evaluation failed: {result.reason} (the evaluator's log: {result.log.strip()[-500:]})")
    rewards = np.asarray(result.rewards)
    spread = f" ± {rewards.std(ddof=1) / np.sqrt(len(rewards)):.4g} (standard error)" if len(rewards) > 1 else ""
    print(f"Score: {rewards.mean():.4g}{spread} over {len(rewards)} episodes, seeds {seeds[0]}..{seeds[-1]}")
    return 0


def _check_board_agent(args: argparse.Namespace, descriptor_path: str, env_id: str, seed: int, directory: str) -> int:
    """``agent check`` of a Go or Hex agent: the board's matches (its anchors, games and time a move),
    played in the sandbox into match folders under ``directory``; the points against each anchor."""
    from palaestra.agents.artifact import SandboxLimits, run_sandboxed
    from palaestra.agents.artifact.board import MatchPlan
    from palaestra.errors import Error
    from palaestra.ladder.anchors import agent_anchors

    anchors = tuple(agent_anchors(env_id))
    if not anchors:
        raise Error(f"no anchor of {env_id} is installed here to play against (GNU Go: make setup installs it)")
    if args.games < 1:
        raise Error(f"--games must be at least 1, not {args.games}")
    plan = MatchPlan(player="agent", opponents=anchors, games=args.games, seeds=tuple(seed + i for i in range(len(anchors))),
                     move_time=args.move_seconds)  # fmt: skip
    opponent_of = [anchor for anchor in anchors for _ in range(args.games)]

    def progress(index: int, points: float) -> None:
        print(f"  game {index + 1}/{plan.total_games} against {opponent_of[index]}: {points:g} points", flush=True)

    games = f"{args.games} game" if args.games == 1 else f"{args.games} games"
    print(f"Playing {games} of {env_id} against each of {', '.join(anchors)} in the sandbox into {directory}/")
    result = run_sandboxed(args.model, descriptor_path, list(plan.seeds), directory,
                           SandboxLimits(allow_unconfined=args.allow_unconfined, video=False), on_episode=progress,
                           plan=plan)  # fmt: skip
    if not result.confined:
        print("WARNING: the sandbox could not be set up; these games ran unconfined")
    if not result.ok:
        raise Error(f"the games failed: {result.reason} (the evaluator's log: {result.log.strip()[-500:]})")
    for anchor in anchors:
        points = [p for p, o in zip(result.rewards, opponent_of, strict=False) if o == anchor]
        print(f"Against {anchor}: {sum(points):g} of {len(points)} points")
    print("The board plays these matches itself when the agent is uploaded (palaestra upload --agent MODEL.onnx); "
          "the match folders here are for your eyes (palaestra match's format), not for upload.")  # fmt: skip
    return 0

