"""Helpers for the scoreboard service tests: documents, archives and the raw /v1 upload flow."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import subprocess
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from palaestra.monitoring.files import CONTENT_TYPE_ANSI, CONTENT_TYPE_MP4
from palaestra.scoreboard import protocol
from tests.server_process import PALAESTRA_COMMAND, ServerProcess, free_port

_MP4_CACHE: dict[tuple[int, int], bytes] = {}

class ScoreboardServer:
    """A ``palaestra server`` subprocess and the first user's API key."""

    def __init__(
        self,
        data_dir: Path,
        database_url: str | None = None,
        storage: str | None = None,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        port: int | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.database_url = database_url
        self.storage = storage
        self.args = list(args)
        self.env = dict(os.environ)
        self.env.update({"PALAESTRA_DATA_DIR": str(self.data_dir), "PALAESTRA_PUBLIC_URL": self.url})
        self.env.pop("PALAESTRA_DATABASE_URL", None)
        self.env.pop("PALAESTRA_STORAGE", None)
        if database_url:
            self.env["PALAESTRA_DATABASE_URL"] = database_url
        if storage:
            self.env["PALAESTRA_STORAGE"] = storage
        self.env.update(env or {})
        self.process: ServerProcess | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir / "server.log"
        self.api_key = ""

    # -- process control (tests.server_process) --------------------------------------------------

    def start(self) -> ScoreboardServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.process = ServerProcess(self.args, env=self.env, port=self.port, log_path=self.log_path).start()
        self.proc = self.process.proc
        if not self.api_key:
            self.api_key = self.create_user("tester")
        return self

    def log(self) -> str:
        return self.process.log() if self.process is not None else ""

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.process is not None:
            self.process.kill()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def restart(self) -> ScoreboardServer:
        """Stop (if running) and start again on the same port, database and store."""
        self.stop()
        return self.start()

    # -- helpers -----------------------------------------------------------------------------------

    def palaestra(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``palaestra ARGS`` with this server's database/storage environment."""
        result = subprocess.run(
            [*PALAESTRA_COMMAND, *args], env=self.env, capture_output=True, text=True, timeout=120
        )
        if check and result.returncode != 0:
            raise AssertionError(f"palaestra {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    def create_user(self, name: str, password: str | None = None, operator: bool = False) -> str:
        """Create a user directly in the server's database (in this process: fast), with ``password``
        if given, an operator if ``operator``; returns its key."""
        from palaestra.scoreboard.server.accounts import auth
        from palaestra.scoreboard.server.accounts import sessions as accounts
        from palaestra.scoreboard.server.core.config import resolve_config
        from palaestra.scoreboard.server.core.database import Database

        db = Database(resolve_config(environ=self.env).database_url)
        try:
            key = auth.create_user(db, name, operator=operator)[1]
            if password is not None:
                accounts.set_password(db, name, password)
            return key
        finally:
            db.dispose()

    def signed_in_client(self, name: str, password: str) -> contextlib.AbstractContextManager[httpx.Client]:
        """A browser-like client (cookies, no redirects followed) signed in through the sign-in form."""
        return signed_in_client(self.url, name, password)

    def create_user_cli(self, name: str) -> str:
        """Create a user with ``palaestra users create NAME``; the key is the last line it prints."""
        out = self.palaestra("users", "create", name).stdout.strip().splitlines()
        return out[-1].strip()

    def headers(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.api_key}"}

    def client(self, **kwargs: Any) -> httpx.Client:
        """An ``httpx.Client`` on ``.url`` sending this server's API key."""
        return httpx.Client(base_url=self.url, headers=self.headers(), timeout=60, **kwargs)


@contextlib.contextmanager
def signed_in_client(url: str, name: str, password: str) -> Iterator[httpx.Client]:
    """A browser-like client of the board at ``url`` (cookies, no redirects followed), signed in as
    ``name`` through the sign-in form."""
    with httpx.Client(base_url=url, timeout=60) as client:
        token = form_token(client.get("/login").text)
        r = client.post("/login", data={"name": name, "password": password, "csrf_token": token})
        assert r.status_code == 303, r.text
        yield client


def form_token(html: str) -> str:
    """The CSRF token in a page's first form."""
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the page has no form with a CSRF token"
    return match.group(1)


#: Start times of the runs :func:`make_batch` makes, a day apart: each call is another run, since the
#: same episodes uploaded again by one user are a repeat of their first evaluation, not a new one
#: (palaestra.scoreboard.server.evaluations.repeats).
_RUN_STARTS = itertools.count(1_700_000_000.0, 86_400.0)


def make_batch(n: int = 10, reward: float = 1.0, t0: float | None = None) -> dict[str, Any]:
    """An episode-batch document of ``n`` training episodes, of a run that started at ``t0`` (default:
    a new run's start, so that two calls are two runs; give ``t0`` for the same episodes again)."""
    if t0 is None:
        t0 = next(_RUN_STARTS)
    return {
        "data_sources": [0] * n,
        "episode_lengths": [10 + i % 5 for i in range(n)],
        "episode_rewards": [reward + (i % 3) for i in range(n)],
        "episode_types": ["t"] * n,
        "initial_reset_timestamps": [t0],
        "timestamps": [t0 + 1 + i for i in range(n)],
    }


def ansi_recording(frames: int = 3) -> bytes:
    return json.dumps(
        {
            "version": 1,
            "width": 4,
            "height": 4,
            "duration": frames * 0.1,
            "command": "-",
            "title": "t",
            "env": {},
            "stdout": [[0.1, f"frame {i}\r\n"] for i in range(frames)],
        }
    ).encode()


def make_mp4(frames: int = 5, seed: int = 0) -> bytes:
    """A small real H.264 mp4 (made with the ffmpeg the Monitor uses); distinct per ``seed``."""
    if (frames, seed) not in _MP4_CACHE:
        import tempfile

        from palaestra.monitoring.video import ffmpeg_binary

        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "v.mp4"
            subprocess.run(
                [
                    ffmpeg_binary(),
                    "-v",
                    "error",
                    "-y",
                    "-f",
                    "lavfi",
                    "-i",
                    f"color=c=0x{(seed * 2654435761) % 0xFFFFFF:06x}:size=32x32:rate=10",
                    "-frames:v",
                    str(frames),
                    "-pix_fmt",
                    "yuv420p",
                    "-c:v",
                    "libx264",
                    str(out),
                ],
                check=True,
                capture_output=True,
            )
            _MP4_CACHE[(frames, seed)] = out.read_bytes()
    return _MP4_CACHE[(frames, seed)]


def tar_gz(members: list[tuple[str, bytes]] | list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    """A tar.gz of ``(name, bytes)`` members (or raw TarInfo entries for links, devices...)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tar.addfile(m)
                continue
            name, data = m
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def video_archive(count: int = 2, kind: str = "ansi", seed: int = 0) -> bytes:
    """A video archive in the 2017 format (``kind``: ``ansi`` JSON recordings or ``mp4``)."""
    members: list[tuple[str, bytes]] = []
    pairs = []
    for i in range(count):
        base = f"openaigym.video.0.1.video{i:06}"
        if kind == "mp4":
            name, data, ct = base + ".mp4", make_mp4(seed=seed * 1000 + i), CONTENT_TYPE_MP4
        else:
            name, data, ct = base + ".json", ansi_recording(), CONTENT_TYPE_ANSI
        meta = base + ".meta.json"
        members += [(name, data), (meta, json.dumps({"episode_id": i, "content_type": ct}).encode())]
        pairs.append([name, meta])
    members.append(("manifest.json", json.dumps({"version": 0, "videos": pairs}).encode()))
    return tar_gz(members)


def create_file(client: httpx.Client, purpose: str, **headers: str) -> dict[str, Any]:
    body: dict[str, Any] = {"purpose": purpose}
    if purpose == "video":
        body["content_type"] = protocol.VIDEO_ARCHIVE_CONTENT_TYPE
    r = client.post("/v1/files", json=body, headers=headers)
    assert r.status_code == 201, r.text
    doc: dict[str, Any] = r.json()
    return doc


def post_upload(file_obj: dict[str, Any], data: bytes, timeout: float = 60) -> httpx.Response:
    """POST ``data`` to the file's ``post_url`` the way the 2017 client does (no API headers)."""
    return httpx.post(
        file_obj["post_url"], data=file_obj["post_fields"], files={"file": ("file", data)}, timeout=timeout
    )


def upload(client: httpx.Client, purpose: str, data: bytes) -> str:
    f = create_file(client, purpose)
    r = post_upload(f, data)
    assert r.status_code == 204, r.text
    return str(f["id"])


def upload_evaluation(
    client: httpx.Client,
    env: str = "CartPole-v1",
    batch: dict[str, Any] | None = None,
    videos: bytes | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """The whole 2017 flow: episode batch, optional video archive, evaluation; the evaluation object."""
    body: dict[str, Any] = {"env": env, **fields}
    body["training_episode_batch"] = upload(
        client, "episode_batch", json.dumps(batch or make_batch()).encode()
    )
    if videos is not None:
        body["training_video"] = upload(client, "video", videos)
    r = client.post("/v1/evaluations", json=body)
    assert r.status_code == 201, r.text
    doc: dict[str, Any] = r.json()
    return doc


def wait_until(predicate: Any, timeout: float = 30, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def error_of(r: httpx.Response, status: int) -> dict[str, Any]:
    """Assert ``r`` is a 2017-style error: status, JSON ``detail`` + ``type``, ``request-id`` header."""
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert isinstance(body["detail"], str) and body["detail"]
    assert isinstance(body["type"], str)
    assert r.headers["request-id"].startswith("req_")
    return body
