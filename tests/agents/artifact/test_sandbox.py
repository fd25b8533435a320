"""The sandbox holds: a probe program run inside it exactly as the evaluator is (the same command
line, :func:`confined_command`) finds no network, only a read-only view of what the evaluator needs,
one writable folder, the rlimits, and the system calls the seccomp filter refuses refused."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from palaestra.agents.artifact.sandbox import (
    SandboxLimits,
    child_environment,
    clean_output_directory,
    confined_command,
    seccomp_program,
)

PROBE = r'''
import ctypes, errno, json, os, resource, socket

found = {}

def attempt(name, action):
    try:
        action()
        found[name] = "allowed"
    except OSError as exc:
        found[name] = errno.errorcode.get(exc.errno, str(exc.errno))

def write(path):
    with open(path, "w") as f:
        f.write("x")

attempt("inet_socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt("inet6_socket", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
attempt("netlink_socket", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW))
attempt("unix_socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
attempt("write_usr", lambda: write("/usr/evil"))
attempt("write_model", lambda: write("/agent/model.onnx"))
attempt("write_out", lambda: write("/out/allowed.txt"))
attempt("write_tmp", lambda: write("/tmp/scratch.txt"))
attempt("symlink_out", lambda: os.symlink("/etc/passwd", "/out/openaigym.video.0.1.video000000.mp4"))
attempt("fifo_out", lambda: os.mkfifo("/out/pipe"))
attempt("hardlink_out", lambda: os.link("/agent/model.onnx", "/out/model-link"))
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    def run():
        if getattr(libc, name)(*args) == -1:
            raise OSError(ctypes.get_errno(), name)
    return run
attempt("ptrace", call("ptrace", 0, 0, 0, 0))                        # PTRACE_TRACEME
attempt("unshare_user", call("unshare", 0x10000000))                 # CLONE_NEWUSER
attempt("unshare_net", call("unshare", 0x40000000))                  # CLONE_NEWNET
attempt("mount", call("mount", b"none", b"/tmp", b"tmpfs", 0, None))
attempt("bpf", call("syscall", 321, 0, 0, 0))                        # bpf on x86-64
attempt("perf_event_open", call("syscall", 298, 0, 0, -1, -1, 0))
attempt("keyctl", call("syscall", 250, 0, 0, 0))
found["interfaces"] = sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else []
found["net_dev"] = [line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]]
found["root"] = sorted(os.listdir("/"))
found["etc"] = sorted(os.listdir("/etc"))
found["uid"] = os.getuid()
found["hostname"] = socket.gethostname()
found["rlimit_as"] = resource.getrlimit(resource.RLIMIT_AS)[0]
found["rlimit_cpu"] = resource.getrlimit(resource.RLIMIT_CPU)[0]
found["environment"] = sorted(os.environ)
found["model_bytes"] = len(open("/agent/model.onnx", "rb").read())
found["cwd_visible"] = os.path.exists(os.environ["PROBE_CWD"])
found["secret_visible"] = os.path.exists(os.environ["PROBE_SECRET"])
found["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(json.dumps(found))
'''


@pytest.fixture(scope="module")
def inside(tmp_path_factory: pytest.TempPathFactory, sandbox: None) -> dict[str, Any]:
    """What the probe found inside the sandbox (run once for the module)."""
    folder = tmp_path_factory.mktemp("sandbox")
    (folder / "model.onnx").write_bytes(b"model")
    (folder / "descriptor.json").write_text("{}")
    (folder / "secret.txt").write_text("the server's key")
    (folder / "out").mkdir()
    limits = SandboxLimits(cpu_seconds=30, memory_bytes=2 * 1024**3)
    seccomp_fd = seccomp_program()
    try:
        command = confined_command(
            [sys.executable, "-c", PROBE], limits, str(folder / "model.onnx"), str(folder / "descriptor.json"),
            str(folder / "out"), seccomp_fd,
        )
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=120, pass_fds=[seccomp_fd],
            env={**child_environment(), "PROBE_SECRET": str(folder / "secret.txt"), "PROBE_CWD": str(Path.cwd() / "pyproject.toml")},
            check=False,
        )
    finally:
        os.close(seccomp_fd)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    found["folder"] = str(folder)
    return found


def test_there_is_no_network_inside_only_a_loopback_that_is_down(inside: dict[str, Any]) -> None:
    assert inside["net_dev"] == ["lo"]
    assert inside["inet_socket"] == inside["inet6_socket"] == inside["netlink_socket"] == "EAFNOSUPPORT"
    assert inside["unix_socket"] == "allowed"
    assert inside["hostname"] == "sandbox"


def test_the_file_view_is_read_only_but_for_the_output_folder(inside: dict[str, Any]) -> None:
    assert inside["write_usr"] == inside["write_model"] == "EROFS"
    assert inside["write_out"] == "allowed"
    assert (Path(inside["folder"]) / "out" / "allowed.txt").read_text() == "x"
    assert inside["write_tmp"] == "allowed"  # a private tmpfs, gone with the sandbox
    assert inside["model_bytes"] == len(b"model")


def test_the_hosts_other_files_are_not_in_the_view(inside: dict[str, Any]) -> None:
    assert "home" not in inside["root"] and "var" not in inside["root"] and "srv" not in inside["root"]
    assert "shadow" not in inside["etc"] and "ssh" not in inside["etc"]
    assert set(inside["etc"]) <= {
        "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf", "alternatives",
    }
    # the folder beside the model (a scoreboard's data) is not visible: only the model, at /agent/
    assert inside["secret_visible"] is False
    # nor what is in the caller's working directory (a server's data folder), though it is on sys.path
    assert inside["cwd_visible"] is False


def test_the_seccomp_filter_refuses_what_an_evaluator_never_needs(inside: dict[str, Any]) -> None:
    for call in ("ptrace", "unshare_user", "unshare_net", "mount", "bpf", "perf_event_open", "keyctl"):
        assert inside[call] == "EPERM", call


def test_the_evaluator_runs_as_nobody_with_the_rlimits_and_a_clean_environment(inside: dict[str, Any]) -> None:
    assert inside["uid"] == 65534
    assert inside["rlimit_as"] == 2 * 1024**3
    assert inside["rlimit_cpu"] == 30
    assert "PALAESTRA_API_KEY" not in inside["environment"] and "AWS_SECRET_ACCESS_KEY" not in inside["environment"]
    assert "HOME" in inside["environment"] and "PYTHONPATH" in inside["environment"]
    assert inside["pids"][0] <= 2 and len(inside["pids"]) <= 3  # its own PID namespace


def test_the_rlimits_apply_to_the_sandbox_not_to_the_caller() -> None:
    assert resource.getrlimit(resource.RLIMIT_AS)[0] != 2 * 1024**3


def test_what_the_sandbox_leaves_that_is_no_plain_file_is_removed_before_the_board_reads_it(
    inside: dict[str, Any],
) -> None:
    # a taken-over evaluator could leave a link named like a video, pointing at a host file
    assert inside["symlink_out"] == inside["fifo_out"] == "allowed"
    assert inside["hardlink_out"] == "EXDEV"  # the output is its own mount: no link reaches out
    out = Path(inside["folder"]) / "out"
    assert clean_output_directory(out) == ["openaigym.video.0.1.video000000.mp4", "pipe"]
    assert sorted(p.name for p in out.iterdir()) == ["allowed.txt"]
