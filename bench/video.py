"""Video recording: palaestra's streaming VideoRecorder against Gymnasium's RecordVideo (moviepy).

    .venv/bin/python bench/video.py [--repeats 3] [--preset P] [--crf N] [--threads N] [--queue-bytes N]

Both record the same CartPole-v1 episodes (600x400 rgb_array frames) in two workloads:

- ``long``: seeds 0-3 and a fixed balancing policy, so every episode runs the full 500 steps;
- ``short``: seeds 0-39 and the fixed action sequence 0, 1, 0, 1, ... (episodes of 23-48 steps),
  where the per-episode costs (starting and finishing an encoder) weigh more.

Every run happens in a fresh subprocess that reports its wall time (first reset to closed files),
its CPU time and its children's (ffmpeg), its own peak RSS and its children's, and the video file
sizes. ``render`` runs the same episodes under the Monitor without videos but calls ``render()``
every step: the floor that any recorder starts from. The kinds run interleaved, ``--repeats``
times, and the medians are compared, since other work on the machine moves single runs around.

Then one synthetic 600x400 episode of 10,000 frames is recorded by palaestra and compared with
a 500-frame one: peak memory must not grow with the episode length.

Targets (issue 3): at least 2x faster end to end than RecordVideo, files at most 3x as large, a
10,000-frame episode adding under 50 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

KIB_PER_MB = 1024.0  # ru_maxrss is in KiB on Linux
WORKLOADS = {"long": (4, None), "short": (40, [0, 1])}  # episodes, fixed actions (None: the policy)


def policy(obs: np.ndarray) -> int:
    """A fixed PD controller that keeps CartPole up for the whole 500 steps."""
    return int(3.0 * obs[2] + obs[3] > 0)


class BarEnv(gym.Env[np.ndarray, int]):
    """A cheap synthetic env: a bar moving over a white 600x400 frame, one episode of ``length`` steps."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(self, length: int, render_mode: str = "rgb_array") -> None:
        self.length = length
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: int) -> Any:
        self.t += 1
        return np.zeros(1, np.float32), 1.0, self.t >= self.length, False, {}

    def render(self) -> np.ndarray:
        frame = np.full((400, 600, 3), 255, np.uint8)
        x = (self.t * 7) % 560
        frame[150:250, x : x + 40] = (self.t % 256, 0, 0)
        return frame


def play(env: gym.Env[Any, Any], episodes: int, actions: list[int] | None, render: bool) -> int:
    frames = 0
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        if render:
            env.render()
        frames += 1
        steps, done = 0, False
        while not done:
            action = actions[steps % len(actions)] if actions else policy(obs) if obs.shape == (4,) else 0
            obs, _, terminated, truncated, _ = env.step(action)
            if render:
                env.render()
            frames += 1
            steps += 1
            done = terminated or truncated
    return frames


class FfmpegPeakMemory:
    """Samples the peak RSS (VmHWM) of this process's ffmpeg children every few milliseconds.

    ``RUSAGE_CHILDREN`` cannot be used for this: a child's ``ru_maxrss`` includes the pages it shared
    with the Python parent between fork and exec.
    """

    def __init__(self) -> None:
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_kib / KIB_PER_MB

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.005):
            try:
                children = Path(f"/proc/{me}/task/{me}/children").read_text().split()
            except OSError:
                continue
            for pid in children:
                try:
                    with open(f"/proc/{pid}/status") as f:
                        status = f.read()
                except OSError:
                    continue
                if "ffmpeg" in status.split("\n", 1)[0]:
                    for line in status.splitlines():
                        if line.startswith("VmHWM:"):
                            self.peak_kib = max(self.peak_kib, int(line.split()[1]))


def install_recorder_options(options: dict[str, Any], blocked: list[float]) -> None:
    """Make the Monitor's VideoRecorders use ``options`` and report the time they waited for ffmpeg."""
    import palaestra.monitoring.video as video

    init, close = video.VideoRecorder.__init__, video.VideoRecorder.close

    def patched_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **{**options, **kwargs})

    def patched_close(self: Any) -> None:
        close(self)
        blocked.append(self.blocked_seconds)

    video.VideoRecorder.__init__ = patched_init  # type: ignore[method-assign]
    video.VideoRecorder.close = patched_close  # type: ignore[method-assign]


def worker(kind: str, workload: str, args: argparse.Namespace, directory: str) -> dict[str, Any]:
    from palaestra.monitoring import Monitor, every_episode

    episodes, actions = WORKLOADS.get(workload, (1, None))
    base: gym.Env[Any, Any] = (
        BarEnv(args.length) if workload == "bar" else gym.make("CartPole-v1", render_mode="rgb_array")
    )
    blocked: list[float] = []
    sampler = FfmpegPeakMemory()
    start = time.perf_counter()
    if kind == "recordvideo":
        env: gym.Env[Any, Any] = gym.wrappers.RecordVideo(base, directory, episode_trigger=lambda e: True)
    elif kind == "render":
        env = Monitor(base, directory, video_callable=False)
    else:
        options = {
            "preset": args.preset,
            "crf": args.crf,
            "queue_bytes": args.queue_bytes,
            "threads": args.threads,
        }
        install_recorder_options(options, blocked)
        env = Monitor(base, directory, video_callable=every_episode)
    frames = play(env, episodes, actions, render=kind == "render")
    env.close()
    wall = time.perf_counter() - start
    ffmpeg_peak_mb = sampler.stop()
    videos = sorted(f for f in os.listdir(directory) if f.endswith(".mp4"))
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "kind": kind,
        "frames": frames,
        "wall_s": wall,
        "blocked_s": sum(blocked),
        "cpu_s": own.ru_utime + own.ru_stime,
        "cpu_ffmpeg_s": children.ru_utime + children.ru_stime,
        "rss_mb": own.ru_maxrss / KIB_PER_MB,
        "rss_ffmpeg_mb": ffmpeg_peak_mb,
        "videos": len(videos),
        "video_bytes": sum(os.path.getsize(os.path.join(directory, f)) for f in videos),
    }


def run(kind: str, workload: str, args: argparse.Namespace, length: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-video-{kind}-") as directory:
        argv = [sys.executable, __file__, "--worker", kind, "--workload", workload, "--dir", directory]
        argv += ["--preset", args.preset, "--crf", str(args.crf), "--queue-bytes", str(args.queue_bytes)]
        argv += ["--length", str(length or args.length)]
        if args.threads is not None:
            argv += ["--threads", str(args.threads)]
        env = {**os.environ, "SDL_VIDEODRIVER": "dummy", "XDG_RUNTIME_DIR": directory}
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{kind} run failed:\n{done.stderr}")
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def median_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    merged = dict(results[0])
    for key, value in merged.items():
        if isinstance(value, float):
            merged[key] = statistics.median(r[key] for r in results)
    return merged


def show(result: dict[str, Any]) -> None:
    print(
        f"  {result['kind']:<12}{result['frames']:>6} frames  wall {result['wall_s']:6.2f} s"
        f" (waited for ffmpeg {result['blocked_s']:5.2f} s)  CPU {result['cpu_s']:5.2f} s"
        f" + ffmpeg {result['cpu_ffmpeg_s']:5.2f} s  peak RSS {result['rss_mb']:5.0f} MB"
        f" + ffmpeg {result['rss_ffmpeg_mb']:4.0f} MB  {result['videos']:>2} videos"
        f" {result['video_bytes'] / 1e3:6.0f} kB"
    )


def compare(workload: str, args: argparse.Namespace) -> None:
    episodes, actions = WORKLOADS[workload]
    how = "the balancing policy" if actions is None else f"actions {actions} repeated"
    print(f"\n[{workload}] CartPole-v1 600x400, {episodes} episodes, {how}; medians of {args.repeats} runs")
    runs: dict[str, list[dict[str, Any]]] = {"render": [], "recordvideo": [], "palaestra": []}
    for _ in range(args.repeats):
        for kind, results in runs.items():
            results.append(run(kind, workload, args))
    med = {kind: median_of(results) for kind, results in runs.items()}
    for result in med.values():
        show(result)
    ours, theirs, floor = med["palaestra"], med["recordvideo"], med["render"]
    ratios = sorted(
        t["wall_s"] / o["wall_s"] for t, o in zip(runs["recordvideo"], runs["palaestra"], strict=True)
    )
    print(
        f"  speed-up vs RecordVideo, wall: {theirs['wall_s'] / ours['wall_s']:.2f}x "
        f"(per round: {', '.join(f'{r:.2f}' for r in ratios)}; target >= 2x)"
    )
    print(
        f"  time added over render-only: palaestra {ours['wall_s'] - floor['wall_s']:+.2f} s, "
        f"RecordVideo {theirs['wall_s'] - floor['wall_s']:+.2f} s; total CPU: palaestra "
        f"{ours['cpu_s'] + ours['cpu_ffmpeg_s']:.1f} s, RecordVideo {theirs['cpu_s'] + theirs['cpu_ffmpeg_s']:.1f} s"
    )
    print(f"  file size vs RecordVideo: {ours['video_bytes'] / theirs['video_bytes']:.2f}x (target <= 3x)")
    print(f"  peak RSS: palaestra {ours['rss_mb']:.0f} MB, RecordVideo {theirs['rss_mb']:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workloads", default="long,short")
    parser.add_argument("--preset", default="ultrafast")
    parser.add_argument("--crf", type=int, default=23)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--queue-bytes", type=int, default=16 << 20)
    parser.add_argument("--length", type=int, default=10_000, help="frames of the long-episode memory check")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--workload", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.workload, args, args.dir)))
        return

    print(f"palaestra: preset={args.preset} crf={args.crf} threads={args.threads or 'default'}")
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    for workload in args.workloads.split(","):
        compare(workload, args)
    if not args.skip_memory:
        print(
            f"\n[memory] one synthetic 600x400 episode recorded by palaestra: {args.length} frames against 500"
        )
        short, long = run("palaestra", "bar", args, length=500), run("palaestra", "bar", args)
        show(short)
        show(long)
        print(
            f"  peak RSS added by {args.length - 500} more frames: {long['rss_mb'] - short['rss_mb']:+.1f} MB "
            f"(target < 50), ffmpeg {long['rss_ffmpeg_mb'] - short['rss_ffmpeg_mb']:+.1f} MB; RecordVideo would "
            f"hold {args.length * 400 * 600 * 3 / 1e6:.0f} MB of frames"
        )
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
