"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.legacy_gym import REPO_ROOT, build_legacy_gym_venv, legacy_python


def pytest_configure(config: pytest.Config) -> None:
    """The servers that tests start record themselves in a state folder of this session's own
    (scoreboard/server/core/running.py), where the user's running servers cannot meet them."""
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="palaestra-test-state-")


@pytest.fixture(scope="session")
def legacy_gym_python() -> str:
    """A Python executable with the original gym 0.9.4 (its Monitor, loader, upload client, benchmarks)."""
    problem = build_legacy_gym_venv()
    if problem:
        pytest.skip(f"cannot build the gym 0.9.4 venv: {problem}")
    return str(legacy_python())


@pytest.fixture(scope="session")
def gnugo() -> str:
    """The GNU Go binary; the test is skipped, saying why, when it is missing."""
    from palaestra.envs.board.gtp import find_binary
    from palaestra.errors import DependencyNotInstalled

    try:
        return find_binary("gnugo")
    except DependencyNotInstalled as exc:
        pytest.skip(f"GNU Go is not installed (the set-up installs the Debian package gnugo): {exc}")


@pytest.fixture
def artifacts_dir(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A folder under test-artifacts/ for screenshots and other things a person may want to look at."""
    path = REPO_ROOT / "test-artifacts" / request.node.name
    path.mkdir(parents=True, exist_ok=True)
    yield path


@pytest.fixture(scope="session")
def sandbox() -> None:
    """Skip where the machine cannot make the agent sandbox (the set-up installs bubblewrap; a kernel
    may forbid user namespaces, as some containers do)."""
    from palaestra.agents.artifact import sandbox_unavailable_reason

    reason = sandbox_unavailable_reason()
    if reason is not None:
        pytest.skip(f"the agent sandbox is unavailable here: {reason}")
