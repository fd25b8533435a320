"""The board's agent evaluator against the same ONNX policy run in a plain loop by its user.

Issue 34's target: the evaluator's steps per second at least 0.8x the plain loop's, and the sandbox's
start-up cost per job. Two policies (:mod:`palaestra.agents.artifact.examples`): the SB3-style
CartPole MLP (a cheap env and a cheap network: the evaluator's own overhead shows most) and
CleanRL's Atari CNN on ``ALE/Breakout-v5`` (where the network dominates).

* **plain loop**: what a user writes: ``gymnasium.make`` (with the board's protocol arguments and the
  descriptor's wrappers, so both run the same env), ``onnxruntime.InferenceSession`` with the same
  one-thread options, then ``reset(seed)``/``run``/``step`` per episode, no Monitor, no sandbox, in
  this process;
* **in-process**: :func:`~palaestra.agents.artifact.evaluate.evaluate_agent` in this process, to
  tell the Monitor's share (it rewrites and fsyncs the provenance at each seeded reset) from the
  sandbox's (a new Python and its imports);
* **evaluator**: :func:`~palaestra.agents.artifact.sandbox.run_sandboxed` as the board calls it, timed
  from the call to its return: bubblewrap, a new Python, the static checks, the Monitor writing the
  training directory (no video: ``--video`` adds the board's default video schedule), close.

Both are timed on the wall clock, end to end, set-up included (what the user waits for); the runs are
interleaved and each one's best of ``--repeats`` kept. Two ratios: the whole job's, and the running
rate's (the steps of episodes 2.. over their time: the long run less a one-episode run, for each side),
which is the target's, since the start-up is reported on its own: the evaluator's time for the first
episode less the plain loop's. Bubblewrap's own share of it is ``/bin/true`` in the sandbox against
``/bin/true``.

    .venv/bin/python bench/agent_eval.py [--episodes 20] [--repeats 3] [--video]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from palaestra.agents.artifact import AgentDescriptor, SandboxLimits, evaluate_agent, run_sandboxed
from palaestra.agents.artifact.examples import cleanrl_atari_model, sb3_cartpole_model, write_agent
from palaestra.agents.artifact.policy import session_options
from palaestra.agents.artifact.preprocessing import wrap
from palaestra.agents.artifact.protocol import make_protocol_env
from palaestra.agents.artifact.sandbox import child_environment, confined_command, seccomp_program
from palaestra.monitoring.results import load_results


def plain_loop(model_path: str, descriptor: AgentDescriptor, seeds: list[int]) -> tuple[float, int]:
    """The user's loop; returns (seconds, steps)."""
    import onnxruntime

    started = time.perf_counter()
    env = wrap(make_protocol_env(descriptor.env_id), descriptor)
    session = onnxruntime.InferenceSession(model_path, sess_options=session_options(), providers=["CPUExecutionProvider"])
    input_name = session.get_inputs()[0].name
    steps = 0
    for seed in seeds:
        rng = np.random.default_rng(seed)
        observation, _ = env.reset(seed=seed)
        done = False
        while not done:
            output = session.run(None, {input_name: np.asarray(observation, dtype=np.float32)[np.newaxis]})[0]
            if descriptor.action == "sample":
                logits = output.reshape(-1).astype(np.float64)
                p = np.exp(logits - logits.max())
                action: Any = int(rng.choice(len(p), p=p / p.sum()))
            elif descriptor.action == "index":
                action = int(output.reshape(-1)[0])
            else:
                action = int(output.argmax())
            observation, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
            steps += 1
    env.close()
    return time.perf_counter() - started, steps


def evaluator(model_path: str, descriptor_path: str, seeds: list[int], video: bool) -> tuple[float, int]:
    """The board's evaluation in the sandbox; returns (seconds, steps)."""
    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        result = run_sandboxed(model_path, descriptor_path, seeds, directory, SandboxLimits(video=video))
        seconds = time.perf_counter() - started
        if not result.ok:
            raise SystemExit(f"the evaluation failed: {result.reason}\n{result.log}")
        steps = int(sum(load_results(directory)["episode_lengths"]))
    return seconds, steps


def in_process(model_path: str, descriptor: AgentDescriptor, seeds: list[int], video: bool) -> tuple[float, int]:
    """:func:`evaluate_agent` in this process (the Monitor and the checks, no sandbox, no start-up)."""
    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        evaluate_agent(model_path, descriptor, seeds, directory, video=video)
        seconds = time.perf_counter() - started
        steps = int(sum(load_results(directory)["episode_lengths"]))
    return seconds, steps


def bwrap_cost(repeats: int) -> tuple[float, float]:
    """Best wall time of /bin/true directly and in the sandbox."""
    with tempfile.TemporaryDirectory() as folder:
        for name in ("m", "d"):
            open(os.path.join(folder, name), "w").close()
        direct, confined = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            subprocess.run(["/bin/true"], check=True)
            direct.append(time.perf_counter() - started)
            fd = seccomp_program()
            try:
                command = confined_command(
                    ["/bin/true"], SandboxLimits(), os.path.join(folder, "m"), os.path.join(folder, "d"), folder, fd
                )
                started = time.perf_counter()
                subprocess.run(command, check=True, pass_fds=[fd], env=child_environment())
                confined.append(time.perf_counter() - started)
            finally:
                os.close(fd)
    return min(direct), min(confined)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=100, help="CartPole episodes per run, as the board runs (Atari: a tenth)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--video", action="store_true", help="the evaluator records the board's videos")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    cases = [
        ("CartPole-v1, SB3-style MLP", sb3_cartpole_model(),
         AgentDescriptor(env_id="CartPole-v1", action="index", deterministic=True), args.episodes),
        ("ALE/Breakout-v5, CleanRL CNN", cleanrl_atari_model(),
         AgentDescriptor.from_document({"env_id": "ALE/Breakout-v5", "action": "sample", "deterministic": False,
                                        "preprocessing": {"name": "atari", "frame_skip": 1}}),
         max(2, args.episodes // 10)),
    ]
    with tempfile.TemporaryDirectory() as folder:
        for label, model, descriptor, episodes in cases:
            model_path, descriptor_path = write_agent(model, descriptor, os.path.join(folder, "agent.onnx"))
            seeds = list(range(episodes))
            plain, board, inside = [], [], []
            for _ in range(args.repeats):
                plain.append(plain_loop(model_path, descriptor, seeds))
                board.append(evaluator(model_path, descriptor_path, seeds, args.video))
                inside.append(in_process(model_path, descriptor, seeds, args.video))
            plain_s, plain_steps = min(plain)
            board_s, board_steps = min(board)
            assert plain_steps == board_steps or descriptor.action == "sample", (plain_steps, board_steps)
            plain_rate, board_rate = plain_steps / plain_s, board_steps / board_s
            print(f"{label}: {episodes} episodes, {board_steps} steps")
            print(f"  plain loop  {plain_s:7.2f} s  {plain_rate:9.0f} steps/s")
            print(f"  evaluator   {board_s:7.2f} s  {board_rate:9.0f} steps/s  (sandbox, Monitor{', video' if args.video else ''})")
            inside_s, inside_steps = min(inside)
            print(f"  in-process  {inside_s:7.2f} s  {inside_steps / inside_s:9.0f} steps/s  "
                  "(evaluate_agent: Monitor and checks, no sandbox; where the rest goes)")
            # one episode each: the start-up (a new Python, its imports, the session) against the plain loop's,
            # and what is left of the long run once that is taken off, the evaluator's running rate
            one_plain = min(plain_loop(model_path, descriptor, seeds[:1]) for _ in range(args.repeats))
            one_board = min(evaluator(model_path, descriptor_path, seeds[:1], args.video) for _ in range(args.repeats))
            running_plain = (plain_steps - one_plain[1]) / (plain_s - one_plain[0])
            running_board = (board_steps - one_board[1]) / (board_s - one_board[0])
            print(f"  ratio evaluator/plain, whole job:   {board_rate / plain_rate:.2f}x")
            print(f"  ratio evaluator/plain, running:     {running_board / running_plain:.2f}x  (target >= 0.8x; "
                  "episodes 2.. of the job, the start-up below taken off)")
            print(f"  start-up cost per job: {one_board[0] - one_plain[0]:.2f} s  "
                  f"(one episode: evaluator {one_board[0]:.2f} s, plain loop {one_plain[0]:.2f} s)")
    direct, confined = bwrap_cost(max(5, args.repeats))
    print(f"bubblewrap + prlimit + seccomp alone: {1000 * (confined - direct):.1f} ms  "
          f"(/bin/true {1000 * direct:.1f} ms, in the sandbox {1000 * confined:.1f} ms)")


if __name__ == "__main__":
    main()
