"""Helpers for the upload-client tests: recorded training directories and a small scripted HTTP server
(for retries and the raw wire) running in a thread on 127.0.0.1. The fixtures are in conftest.py."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import gymnasium as gym

import palaestra
from palaestra.monitoring import files

CONFIG_ENV_VARS = ("PALAESTRA_SERVER", "PALAESTRA_API_KEY", "OPENAI_GYM_API_BASE", "OPENAI_GYM_API_KEY")


def play_episodes(env: gym.Env[Any, Any], episodes: int, seed: int = 0) -> None:
    for i in range(episodes):
        env.reset(seed=seed + i)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated


def record_cartpole(directory: Path, episodes: int = 5, seed: int = 0, env_id: str = "CartPole-v1") -> Path:
    """A closed training directory of ``episodes`` CartPole episodes, no videos."""
    env = palaestra.Monitor(gym.make(env_id), directory, video_callable=False)
    env.action_space.seed(seed)
    play_episodes(env, episodes, seed)
    env.close()
    return directory


def record_frozenlake_videos(directory: Path, episodes: int = 3, seed: int = 0) -> Path:
    """A closed training directory of FrozenLake episodes with a JSON (ansi) video of each."""
    env = palaestra.Monitor(
        gym.make("FrozenLake-v1", render_mode="ansi"), directory, video_callable=lambda episode_id: True
    )
    env.action_space.seed(seed)
    play_episodes(env, episodes, seed)
    env.close()
    return directory


def manifest_of(directory: Path) -> tuple[Path, dict[str, Any]]:
    [path] = files.detect_training_manifests(directory)
    return Path(path), files.read_json(path)


def add_fake_videos(directory: Path, count: int) -> list[str]:
    """Add ``count`` small ansi videos (and their metadata) to the one manifest of ``directory``."""
    path, manifest = manifest_of(directory)
    names = []
    for i in range(count):
        base = f"openaigym.video.fake.video{i:06}"
        video = {
            "version": 1,
            "width": 6,
            "height": 2,
            "duration": 0.5,
            "command": "-",
            "title": "t",
            "env": {},
        }
        video["stdout"] = [[0.5, f"\x1b[2J\x1b[1;1Hframe{i}\r\n"]]
        (directory / f"{base}.json").write_text(json.dumps(video))
        meta = {"episode_id": i, "content_type": files.CONTENT_TYPE_ANSI}
        (directory / f"{base}.meta.json").write_text(json.dumps(meta))
        manifest["videos"].append([f"{base}.json", f"{base}.meta.json"])
        names.append(f"{base}.json")
    files.atomic_write_json(path, manifest)
    return names


# --------------------------------------------------------------------------------------------------
# A scripted HTTP server
# --------------------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def encode(self) -> tuple[bytes, str]:
        if self.body is None:
            return b"", "application/json"
        if isinstance(self.body, bytes):
            return self.body, self.headers.get("Content-Type", "application/octet-stream")
        return json.dumps(self.body).encode(), "application/json"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class ScriptedServer:
    """Answers each ``(method, path)`` with its scripted replies in turn (the last one repeats)."""

    def __init__(self) -> None:
        self.script: dict[tuple[str, str], list[Reply]] = {}
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                reply = outer._next(
                    self.command, path, Seen(self.command, self.path, dict(self.headers), body)
                )
                data, content_type = reply.encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = _handle
            do_POST = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def on(self, method: str, path: str, *replies: Reply) -> None:
        self.script[(method, path)] = list(replies)

    def _next(self, method: str, path: str, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            replies = self.script.get((method, path))
            if not replies:
                return Reply(404, {"detail": f"no route {method} {path}", "type": "about:blank"})
            return replies.pop(0) if len(replies) > 1 else replies[0]

    def seen(self, method: str, path: str) -> list[Seen]:
        return [r for r in self.requests if r.method == method and r.path.split("?", 1)[0] == path]

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def file_object(
    server_url: str, purpose: str = "episode_batch", file_id: str = "file_1", **extra: Any
) -> dict[str, Any]:
    """A ``FileObject`` answer whose ``post_url`` is ``{server_url}/upload/{file_id}``."""
    content_type = "application/vnd.openai.video+x-compressed" if purpose == "video" else "application/json"
    return {
        "object": "file",
        "id": file_id,
        "purpose": purpose,
        "content_type": content_type,
        "post_url": f"{server_url}/upload/{file_id}",
        "post_fields": {"signature": "sig-" + file_id},
        **extra,
    }


def environ_without_config(tmp_path: Path, **extra: str) -> dict[str, str]:
    """``os.environ`` for a ``palaestra`` subprocess with no scoreboard configuration but ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_ENV_VARS}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg-config")
    env.update(extra)
    return env
