"""The sandbox: an evaluation in its own process, with no network, a read-only view of the files it
needs, CPU-time, memory and wall limits, and a seccomp filter.

:func:`run_sandboxed` runs ``python -m palaestra.agents.artifact`` (the evaluator,
:func:`~palaestra.agents.artifact.evaluate.evaluate_agent`) under

* **bubblewrap** (``bwrap``, the Debian package ``bubblewrap``): new user, PID, network, IPC, UTS and
  cgroup namespaces (``--unshare-all``: no network at all, not even loopback), every capability
  dropped, a new session, no further user namespaces, and a file view made of read-only binds of
  only what the evaluator reads (``/usr``, Python's prefixes and import paths, a few files of
  ``/etc``), the model and its descriptor at ``/agent/``, a private ``/tmp`` and ``/proc``, and the
  output directory at ``/out``: the one writable place. The host's other files (a server's
  configuration, its database, its keys) are not in the view at all;
* **rlimits** set by ``prlimit`` (util-linux) before bubblewrap starts, so every process inside
  inherits them: address space (:attr:`SandboxLimits.memory_bytes`), CPU seconds, the largest file,
  no core dumps;
* a **seccomp** filter (built with ``pyseccomp``, the ctypes binding of libseccomp, and loaded by
  bubblewrap with ``--seccomp FD`` before the evaluator starts) that refuses with ``EPERM`` the system
  calls an evaluator never needs: sockets other than Unix ones, ``ptrace`` and reading other
  processes' memory, mounting, namespaces, ``bpf``, ``perf_event_open``, ``userfaultfd``,
  ``io_uring``, kernel keyrings and modules, clock and reboot calls;
* a **wall-clock limit** kept by this process, which kills the whole sandbox at the deadline.

The static checks (:func:`~palaestra.agents.artifact.checks.check_artifact`) run first, in the
caller's process: a refused model never reaches the sandbox. The evaluator reports on a pipe (one JSON line per event: ``ready``, each ``episode`` with its total
reward, ``error`` with its kind and message), passed on to ``on_episode``; the result's ``reason``
is one sentence (the limit reached, the check that refused, the error), its ``log`` the end of the
evaluator's stderr. Where the kernel forbids user namespaces (or bubblewrap or pyseccomp is missing)
:func:`run_sandboxed` raises :class:`SandboxUnavailable` naming the reason, unless the operator set
:attr:`SandboxLimits.allow_unconfined`: then the evaluator runs with the rlimits and the wall limit
alone, and the result says ``confined=False``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from palaestra.agents.artifact.board import MatchPlan
from palaestra.agents.artifact.checks import ArtifactError, check_artifact
from palaestra.agents.artifact.descriptor import DescriptorError, load_descriptor
from palaestra.errors import Error

__all__ = [
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "child_environment",
    "clean_output_directory",
    "confined_command",
    "run_sandboxed",
    "sandbox_unavailable_reason",
    "seccomp_program",
]

#: The evaluator's module, run with ``python -m``.
CHILD_MODULE = "palaestra.agents.artifact"
#: The paths inside the sandbox.
MODEL_INSIDE, DESCRIPTOR_INSIDE, OUT_INSIDE = "/agent/model.onnx", "/agent/descriptor.json", "/out"
#: The most of the evaluator's stderr kept in a result's log.
LOG_TAIL_BYTES = 64 * 1024
#: Files of /etc the evaluator reads (the dynamic loader's cache, names of users and groups, time
#: zone, Debian's alternatives symlinks); nothing else of /etc is in the view.
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/alternatives",
)


class SandboxUnavailable(Error):
    """The sandbox cannot be set up here (no bubblewrap, no pyseccomp, user namespaces forbidden by
    the kernel) and the operator did not allow unconfined evaluations."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one evaluation may use. The defaults fit 100 Atari episodes on one core."""

    #: CPU seconds of all the sandbox's processes together, each (the evaluator, ffmpeg)
    cpu_seconds: int = 3600
    #: wall-clock seconds, from start to the last episode
    wall_seconds: float = 3600.0
    #: address space of each process (RLIMIT_AS)
    memory_bytes: int = 4 * 1024**3
    #: the largest file the evaluator may write (a video, the episode journal)
    file_bytes: int = 1024**3
    #: run without bubblewrap and seccomp where they cannot be had (the operator's switch)
    allow_unconfined: bool = False
    #: record videos (the Monitor's schedule)
    video: bool = True
    #: the bubblewrap command
    bwrap: str = "bwrap"

    def describe(self) -> str:
        """The limits in words, for logs and pages."""
        return (
            f"CPU {self.cpu_seconds} s, wall {self.wall_seconds:g} s, memory {self.memory_bytes / 1024**3:.2g} GiB, "
            f"largest file {self.file_bytes / 1024**2:.0f} MiB"
        )


@dataclass(frozen=True)
class SandboxResult:
    """How a sandboxed evaluation ended."""

    #: every episode finished and the evaluator exited cleanly
    ok: bool
    #: one sentence: "" when ok, else what stopped it (the limit, the refusal, the error)
    reason: str
    #: the end of the evaluator's stderr, after a line naming the sandbox and its limits
    log: str
    #: episodes finished (their results are in the directory)
    episodes: int = 0
    #: whether bubblewrap and seccomp confined it (False only with ``allow_unconfined``)
    confined: bool = True
    #: the error's kind where the evaluator reported one (``ArtifactError``, ``PolicyError``, ...)
    error_kind: str | None = None
    returncode: int | None = None
    #: the total reward of each finished episode, in order
    rewards: tuple[float, ...] = field(default=())


def sandbox_unavailable_reason(limits: SandboxLimits | None = None) -> str | None:
    """Why the sandbox cannot be set up on this machine, or ``None`` if it can (a probe: ~10 ms)."""
    limits = limits or SandboxLimits()
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is not installed: apt-get install util-linux"
    bwrap = shutil.which(limits.bwrap)
    if bwrap is None:
        return f"bubblewrap ({limits.bwrap!r}) is not installed: apt-get install bubblewrap"
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"the seccomp filter needs pyseccomp and libseccomp ({exc}): pip install 'palaestra[agents]'"
    probe = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", *_system_binds(), "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot start: {exc}"
    if done.returncode != 0:
        message = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
        return f"bubblewrap cannot create the sandbox's namespaces here ({message})"
    return None


def run_sandboxed(
    model_path: str | os.PathLike[str],
    descriptor_path: str | os.PathLike[str],
    seeds: Sequence[int],
    directory: str | os.PathLike[str],
    limits: SandboxLimits,
    on_episode: Callable[[int, float], None] | None = None,
    plan: MatchPlan | None = None,
) -> SandboxResult:
    """Evaluate the model, one episode per seed, into the training directory ``directory``, in the
    sandbox; see the module docstring. Raises :class:`SandboxUnavailable` (only before anything runs).

    With ``plan`` (a board-game agent's), it plays the plan's matches into match folders under
    ``directory`` instead (:func:`palaestra.ladder.agent_matches.play_agent_matches`); each game counts
    as an episode, its "reward" the agent's points. The anchors' engines (GNU Go from ``/usr/games``)
    run inside the same sandbox, under the same limits (each process its own CPU and memory)."""
    if not seeds:
        raise ValueError("run_sandboxed needs at least one seed")
    reason = sandbox_unavailable_reason(limits)
    if reason is not None and shutil.which("prlimit") is None:
        raise SandboxUnavailable(f"the agent evaluator cannot start, not even unconfined: {reason}")
    if reason is not None and not limits.allow_unconfined:
        raise SandboxUnavailable(
            f"the agent sandbox is unavailable: {reason}. The board does not run agents unconfined unless "
            "the operator allows it (allow_unconfined)"
        )
    confined = reason is None
    header = (
        f"palaestra agent sandbox: {'bubblewrap + seccomp' if confined else 'UNCONFINED (' + str(reason) + ')'}; "
        f"limits: {limits.describe()}\n"
    )
    # the static checks run here, in the caller's process, which has onnx imported already; the
    # evaluator verifies that it loads the very bytes checked (their sha256) and skips them
    try:
        info = check_artifact(model_path, load_descriptor(descriptor_path))
    except (ArtifactError, DescriptorError) as exc:
        return SandboxResult(False, f"refused: {exc}", header, 0, confined, "ArtifactError", None)
    model = os.path.realpath(model_path)
    descriptor = os.path.realpath(descriptor_path)
    out = os.path.realpath(directory)
    os.makedirs(out, exist_ok=True)
    report_read, report_write = os.pipe()
    with contextlib.ExitStack() as stack, tempfile.TemporaryFile() as stderr:
        stack.callback(_close_quietly, report_read)
        arguments = [
            "--report-fd",
            str(report_write),
            "--seeds",
            ",".join(str(int(s)) for s in seeds),
            *([] if limits.video else ["--no-video"]),
            "--checked",
            info.to_json(),
            *([] if plan is None else ["--match", plan.to_json()]),
        ]
        pass_fds = [report_write]
        if confined:
            seccomp_fd = seccomp_program()
            stack.callback(_close_quietly, seccomp_fd)
            pass_fds.append(seccomp_fd)
            program = [sys.executable, "-m", CHILD_MODULE, "--model", MODEL_INSIDE, "--descriptor", DESCRIPTOR_INSIDE]
            program += ["--directory", OUT_INSIDE, *arguments]
            command = confined_command(program, limits, model, descriptor, out, seccomp_fd)
            cwd = "/"
        else:
            command = [sys.executable, "-m", CHILD_MODULE, "--model", model, "--descriptor", descriptor]
            command = [*_prlimit(limits), *command, "--directory", out, *arguments]
            cwd = out
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
                pass_fds=pass_fds,
                env=child_environment(),
                cwd=cwd,
                start_new_session=True,  # one process group: the wall limit kills all of it
            )
        finally:
            os.close(report_write)
        watch = _Watch(process, report_read, started + limits.wall_seconds, on_episode)
        watch.run()
        log = header + _read_tail(stderr)
        wanted = len(seeds) if plan is None else plan.total_games
        result = _result(watch, process.returncode, wanted, limits, log, confined)
        strays = clean_output_directory(out)
        if strays:
            # only an evaluator that was taken over writes these: the whole output is suspect
            reason = (
                f"refused: the evaluation left {len(strays)} entr{'y' if len(strays) == 1 else 'ies'} that are not "
                f"plain files or folders in its directory ({', '.join(strays[:3])}; removed): its results are "
                "not trusted"
            )
            return dataclasses.replace(result, ok=False, reason=reason, error_kind="UntrustedOutput")
        return result


def clean_output_directory(directory: str | os.PathLike[str]) -> list[str]:
    """Remove from an evaluation's output directory every entry that is not a plain file or folder
    (a symbolic link to a host file, a FIFO, a socket) and return their relative paths.

    The sandbox's one writable place is read afterwards by the board, outside the sandbox: a link
    named like a video would otherwise have the board read, store and serve the file it points to.
    (Hard links cannot reach outside: the output is its own mount, and ``link`` across mounts fails.)
    """
    strays = []
    root = os.fspath(directory)
    for folder, folders, files in os.walk(root, followlinks=False):
        for name in [*folders, *files]:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
                continue
            strays.append(os.path.relpath(path, root))
            os.unlink(path)
        folders[:] = [f for f in folders if not os.path.islink(os.path.join(folder, f))]
    return sorted(strays)


class _Watch:
    """Reads the evaluator's reports until it exits or the wall-clock deadline passes."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        fd: int,
        deadline: float,
        on_episode: Callable[[int, float], None] | None,
    ) -> None:
        self.process, self.fd, self.deadline, self.on_episode = process, fd, deadline, on_episode
        self.rewards: list[float] = []
        self.error: dict[str, Any] | None = None
        self.timed_out = False
        self.callback_error: BaseException | None = None

    def run(self) -> None:
        try:
            self._read()
        except BaseException:  # Ctrl-C, SIGTERM, a bug: the sandbox never outlives its caller's call
            _kill(self.process)
            self.process.wait()
            raise
        if self.timed_out or self.callback_error is not None:
            _kill(self.process)
        try:
            self.process.wait(timeout=max(1.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:  # it closed the pipe but went on: the wall limit still holds
            self.timed_out = True
            _kill(self.process)
            self.process.wait()
        if self.callback_error is not None:
            raise self.callback_error

    def _read(self) -> None:
        buffer = b""
        while self.callback_error is None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.timed_out = True
                return
            ready, _, _ = select.select([self.fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return  # every writer closed: the evaluator has exited
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self._event(line)
            if len(buffer) > 1 << 20:  # a report line is short; anything else is not ours
                buffer = b""

    def _event(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        if event.get("event") == "episode" and self.callback_error is None:
            index, reward = int(event["index"]), float(event["reward"])
            if index != len(self.rewards):
                return
            self.rewards.append(reward)
            if self.on_episode is not None:
                try:
                    self.on_episode(index, reward)
                except BaseException as exc:  # the caller's error: stop the sandbox, then raise it
                    self.callback_error = exc
        elif event.get("event") == "error" and self.error is None:
            self.error = {"kind": str(event.get("kind", "")), "message": str(event.get("message", ""))[:2000]}


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _result(
    watch: _Watch, returncode: int, wanted: int, limits: SandboxLimits, log: str, confined: bool
) -> SandboxResult:
    done = len(watch.rewards)
    progress = f"after {done} of {wanted} episodes"
    error = watch.error
    signal_number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if watch.timed_out:
        reason = f"killed: the wall-clock limit of {limits.wall_seconds:g} s was reached {progress}"
    elif error is not None:
        kind, message = error["kind"], error["message"]
        if kind == "ArtifactError":
            reason = f"refused: {message}"
        elif kind == "MemoryError" or "allocat" in message.lower():
            reason = (
                f"stopped: the memory limit of {limits.memory_bytes / 1024**3:.2g} GiB was reached {progress} "
                f"({kind}: {message})"
            )
        else:
            reason = f"stopped {progress}: {kind}: {message}"
    elif returncode == 0 and done == wanted:
        return SandboxResult(True, "", log, done, confined, None, returncode, tuple(watch.rewards))
    elif signal_number == signal.SIGXCPU or (signal_number == signal.SIGKILL and _cpu_exhausted(log)):
        reason = f"killed: the CPU-time limit of {limits.cpu_seconds} s was reached {progress}"
    elif signal_number == signal.SIGSYS:
        reason = f"killed: the seccomp filter stopped a forbidden system call {progress}"
    elif signal_number in (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGKILL):
        name = signal.Signals(signal_number).name
        reason = (
            f"killed by {name} {progress}; with an address-space limit of "
            f"{limits.memory_bytes / 1024**3:.2g} GiB this is most often the memory limit reached"
        )
    elif returncode == 0:
        reason = f"the evaluator exited {progress} without an error"
    else:
        reason = f"the evaluator exited with status {returncode} {progress}"
    return SandboxResult(
        False, reason, log, done, confined, error["kind"] if error else None, returncode, tuple(watch.rewards)
    )


def _cpu_exhausted(log: str) -> bool:
    return "CPU time limit exceeded" in log


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _prlimit(limits: SandboxLimits) -> list[str]:
    """``prlimit`` (util-linux) with the limits: set before bubblewrap starts, inherited by everything inside.
    The CPU limit's soft value sends SIGXCPU; the hard one, a second later, SIGKILL."""
    prlimit = shutil.which("prlimit") or "prlimit"
    cpu = int(limits.cpu_seconds)
    return [
        prlimit,
        f"--as={int(limits.memory_bytes)}",
        f"--cpu={cpu}:{cpu + 1}",
        f"--fsize={int(limits.file_bytes)}",
        "--core=0",
        "--nofile=1024",
        "--",
    ]


def _bind_ro(path: str) -> list[str]:
    return ["--ro-bind", path, path]


def _system_binds() -> list[str]:
    """``/usr`` and the merged-/usr symlinks, a private /proc, /dev and /tmp."""
    binds = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            binds += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            binds += _bind_ro(top)
    return binds


def _import_paths() -> list[str]:
    """The import paths the evaluator needs: palaestra's own (its source folder in a development
    checkout) and those inside Python's prefixes (the standard library, site-packages). Nothing else of
    ``sys.path``: the current directory of a ``python -m`` server may hold its database."""
    import palaestra

    prefixes = [os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}]
    own = os.path.dirname(os.path.dirname(os.path.realpath(palaestra.__file__)))
    paths = [own]
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and any(real == p or real.startswith(p + "/") for p in prefixes):
            paths.append(real)
    return list(dict.fromkeys(paths))


def _python_paths() -> list[str]:
    """The directories bound read-only for Python: its prefixes, the interpreter's folder and the
    import paths; the outermost of nested ones only."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *_import_paths()}
    candidates.add(os.path.dirname(os.path.realpath(sys.executable)))
    candidates.add(os.path.dirname(os.path.abspath(sys.executable)))
    real = {os.path.realpath(p) for p in candidates} | {os.path.abspath(p) for p in candidates}
    existing = sorted(p for p in real if os.path.isdir(p) and not p.startswith(("/usr/", "/proc")) and p != "/")
    kept: list[str] = []
    for path in existing:
        if not any(path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def confined_command(
    program: Sequence[str], limits: SandboxLimits, model: str, descriptor: str, out: str, seccomp_fd: int
) -> list[str]:
    """The command line that runs ``program`` in the sandbox, as :func:`run_sandboxed` runs the
    evaluator: ``prlimit`` with the limits, then bubblewrap with the model and descriptor at
    ``/agent/`` (read-only), ``out`` at ``/out`` (the one writable place) and the seccomp program
    read from ``seccomp_fd`` (:func:`seccomp_program`; pass it to the child). Run it with
    :func:`child_environment` as its environment."""
    bwrap = shutil.which(limits.bwrap) or limits.bwrap
    command = [
        *_prlimit(limits),
        bwrap,
        "--unshare-all",
        "--unshare-user",  # --unshare-all only tries it, and as root skips it
        "--disable-userns",
        "--uid",
        "65534",  # nobody inside; the files it writes in /out are the caller's outside
        "--gid",
        "65534",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        *_system_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
    ]
    for path in ETC_FILES:
        if os.path.exists(path):
            command += _bind_ro(path)
    for path in _python_paths():
        command += _bind_ro(path)
    command += ["--ro-bind", model, MODEL_INSIDE, "--ro-bind", descriptor, DESCRIPTOR_INSIDE]
    command += ["--bind", out, OUT_INSIDE, "--chdir", "/tmp", "--seccomp", str(seccomp_fd), *program]
    return command


def child_environment() -> dict[str, str]:
    """A clean environment: no secrets of the caller's, palaestra's import path, one thread."""
    environment = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join(_import_paths()),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    # imageio-ffmpeg's binary (the ffmpeg extra), where the caller chose one
    if "IMAGEIO_FFMPEG_EXE" in os.environ:
        environment["IMAGEIO_FFMPEG_EXE"] = os.environ["IMAGEIO_FFMPEG_EXE"]
    return environment


#: System calls an evaluator never makes: refused with EPERM.
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "syslog",
    "open_by_handle_at",
    "name_to_handle_at",
    "quotactl",
    "lookup_dcookie",
    "vhangup",
)


def seccomp_program() -> int:
    """The seccomp filter as a BPF program in an anonymous file, for ``bwrap --seccomp FD``."""
    import socket

    import pyseccomp as seccomp

    program = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        with contextlib.suppress(RuntimeError, ValueError, OSError):  # a call this kernel's ABI lacks
            program.add_rule(seccomp.ERRNO(errno.EPERM), name)
    # sockets: only Unix ones (the network namespace is empty anyway; this also closes netlink, packet)
    program.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    fd = os.memfd_create("palaestra-seccomp", 0)  # not CLOEXEC: bwrap inherits it
    with os.fdopen(os.dup(fd), "wb") as f:
        program.export_bpf(f)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _read_tail(f: IO[bytes]) -> str:
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(max(0, size - LOG_TAIL_BYTES))
    return f.read().decode("utf-8", errors="replace")
