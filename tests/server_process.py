"""The one way tests start a scoreboard: a real ``palaestra server`` process, or the app in this process.

- :func:`free_port`: a free loopback port.
- :class:`ServerProcess`: ``palaestra server ARGS`` (or another command that serves it, such as an
  installed wheel's ``palaestra``) on a free loopback port. :meth:`~ServerProcess.start` waits until
  ``/v1/health`` answers 200 *and* the socket listening on the port belongs to this process or one of
  its children: a child that died, or another process that took the port meanwhile, never passes.
  :meth:`~ServerProcess.stop` ends it (SIGTERM, then SIGKILL); :meth:`~ServerProcess.kill` crashes it.
- :class:`FakeClock` and :func:`in_process_server`: the app served from a thread of the test process
  (``EmbeddedScoreboard``), whose state reads a clock that stands still until the test advances it,
  instead of sleeping until an upload URL, a session, a cached key or a rate window expires.

The scoreboard's fixtures (``tests/scoreboard/conftest.py``, ``tests/scoreboard/server/conftest.py``)
build on these.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from palaestra.scoreboard.server.core.clock import Clock

__all__ = [
    "STARTUP_TIMEOUT_S",
    "FakeClock",
    "InProcessServer",
    "ServerProcess",
    "free_port",
    "in_process_server",
    "listens_on",
    "serving",
]

STARTUP_TIMEOUT_S = 60.0
PALAESTRA_COMMAND = (sys.executable, "-m", "palaestra")


def free_port() -> int:
    """A loopback port free at this moment (another process may take it: :class:`ServerProcess` checks)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``palaestra server --host 127.0.0.1 --port PORT ARGS`` as a child process of the test.

    ``command`` replaces ``python -m palaestra`` (an installed wheel's ``palaestra``); ``log_path``
    receives its output (else it is kept in a temporary file and shown when it fails to start).
    """

    def __init__(
        self,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        command: Sequence[str] = PALAESTRA_COMMAND,
        cwd: str | os.PathLike[str] | None = None,
        log_path: Path | None = None,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = list(args)
        self.env = dict(os.environ if env is None else env)
        self.command = list(command)
        self.cwd = cwd
        self.log_path = log_path
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        return [*self.command, "server", "--host", "127.0.0.1", "--port", str(self.port), *self.args]

    def start(self) -> ServerProcess:
        """Start it and wait until it serves (raises ``RuntimeError`` with its log otherwise)."""
        if self.log_path is None:
            self.log_path = Path(self._temporary_log())
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(self.argv(), env=self.env, cwd=self.cwd, stdout=log, stderr=subprocess.STDOUT)
        self.wait_serving()
        return self

    def wait_serving(self) -> None:
        """Until ``/v1/health`` answers 200 from a socket this process (or a child of it) listens on."""
        assert self.proc is not None, "start() first"
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{' '.join(self.argv())} exited with {self.proc.returncode}:\n{self.log()}")
            with contextlib.suppress(httpx.HTTPError):
                healthy = httpx.get(f"{self.url}/v1/health", timeout=2).status_code == 200
                if healthy and listens_on(self.proc.pid, self.port):
                    return
            time.sleep(0.05)
        raise RuntimeError(
            f"{' '.join(self.argv())} did not serve {self.url} within {self.startup_timeout_s:g} s "
            f"(or another process answers on its port):\n{self.log()}"
        )

    def log(self) -> str:
        """The last 5,000 characters of its output."""
        try:
            return self.log_path.read_text(errors="replace")[-5000:] if self.log_path else ""
        except OSError:
            return ""

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """``sig`` (SIGTERM: a clean shutdown; SIGINT: Ctrl-C), then SIGKILL if it has not ended within 15 s."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def __enter__(self) -> ServerProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _temporary_log(self) -> str:
        import tempfile

        handle, path = tempfile.mkstemp(prefix=f"palaestra-server-{self.port}-", suffix=".log")
        os.close(handle)
        return path


def listens_on(pid: int, port: int) -> bool:
    """Whether ``pid`` or one of its children holds the listening socket of ``port`` (True off Linux)."""
    if not Path("/proc/net/tcp").exists():
        return True
    sockets = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    for member in _process_tree(pid):
        for fd in Path(f"/proc/{member}/fd").glob("*"):
            with contextlib.suppress(OSError):
                if os.readlink(fd) in sockets:
                    return True
    return False


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on ``port`` (Linux's /proc/net tables; LISTEN is state 0A)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                    inodes.add(fields[9])
    return inodes


def _process_tree(pid: int) -> list[int]:
    pids, i = [pid], 0
    while i < len(pids):
        pids.extend(_children(pids[i]))
        i += 1
    return pids


def _children(pid: int) -> list[int]:
    """The children of ``pid``; none once it has exited (its /proc folder goes while we read it)."""
    children: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            children.extend(int(child) for child in task.read_text().split())
    return children


# -- in this process, with a clock the test advances ------------------------------------------------


class FakeClock(Clock):
    """A clock that stands still (at the moment it was made) until :meth:`advance` moves it on: what
    expires after N seconds expires exactly then, however slow the machine."""

    def __init__(self) -> None:
        self._time = time.time()
        self._monotonic = time.monotonic()

    def time(self) -> float:
        return self._time

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, seconds: float) -> None:
        self._time += seconds
        self._monotonic += seconds


@dataclass
class InProcessServer:
    """The scoreboard served from a thread of the test process: its state (``.state``, with its
    ``.clock``, a :class:`FakeClock`) can be watched, changed and moved on in time."""

    url: str
    api_key: str
    state: Any  # ServerState: imported with the server extra, inside in_process_server
    clock: FakeClock

    def client(self, **kwargs: Any) -> httpx.Client:
        """An ``httpx.Client`` on ``.url`` sending the first user's API key."""
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.api_key}"}, timeout=60, **kwargs)

    def create_user(self, name: str, password: str | None = None) -> str:
        """A user in the server's database, with ``password`` if given; returns its API key."""
        from palaestra.scoreboard.server.accounts import auth
        from palaestra.scoreboard.server.accounts import sessions as accounts

        key = auth.create_user(self.state.db, name)[1]
        if password is not None:
            accounts.set_password(self.state.db, name, password)
        return key


@contextlib.contextmanager
def serving(state: Any) -> Iterator[str]:
    """The app on ``state`` (a ``ServerState``) served from a thread of this process on a free
    loopback port, until the block ends; yields its URL."""
    from palaestra.scoreboard.server.app import create_app
    from palaestra.scoreboard.server.embedded import EmbeddedScoreboard

    config = state.config.with_overrides(port=free_port())
    server = EmbeddedScoreboard(config, app=create_app(state=state)).start()
    try:
        yield server.url
    finally:
        server.stop()


@contextlib.contextmanager
def in_process_server(data_dir: Path, environ: Mapping[str, str] | None = None) -> Iterator[InProcessServer]:
    """A SQLite + file-store scoreboard in ``data_dir``, configured by ``environ`` (``PALAESTRA_*``
    variables), served from this process (:func:`serving`) with a :class:`FakeClock`."""
    from palaestra.scoreboard.server.accounts import auth
    from palaestra.scoreboard.server.core.config import resolve_config
    from palaestra.scoreboard.server.core.state import build_state

    clock = FakeClock()
    state = build_state(resolve_config(data_dir=data_dir, environ=dict(environ or {})), clock)
    try:
        with serving(state) as url:
            yield InProcessServer(url, auth.create_user(state.db, "tester")[1], state, clock)
    finally:
        state.close()
