"""What each env imports is declared in the extra that ``palaestra envs --all`` names for it.

A core install runs the ids that need no extra (tests/test_core_install.py, in a venv of the core
alone). For the others, this test makes, resets and steps one id of each entry point here, where
every extra is installed, in a fresh process per extra, and maps each module the envs imported to
the distribution that brings it: that distribution must be required, directly or through its own
requirements, by the core or by the extra that :func:`palaestra.catalogue.engine_of` names (the one
``palaestra envs --all`` tells a user to install). The requirements are this checkout's
pyproject.toml; those of the other distributions, their installed metadata.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from collections import defaultdict

import gymnasium
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from palaestra import catalogue
from palaestra.envs import legacy
from palaestra.extras import EXTRA_MODULES
from tests.legacy_gym import REPO_ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later

# Modules that a library imports only when they happen to be installed, needing none of them
OPTIONAL_IMPORTS = {
    "cffi": "glfw (MuJoCo's window library) uses cffi where it finds it, else ctypes",
    "_cffi_backend": "cffi's, as above",
    "pycparser": "cffi's, as above",
}

# Run in a fresh process: make, reset and step the ids on stdin; print the top-level modules that this
# imported beyond `import palaestra` (ale-py's ids are registered after the snapshot: ale-py is theirs).
IMPORTS_OF_ENVS = r"""
import json, sys
import gymnasium as gym
import palaestra
from palaestra.catalogue import register_ale_py

ids, atari = json.load(sys.stdin)
before = set(sys.modules)
if atari:
    register_ale_py()
errors = {}
for env_id in ids:
    try:
        env = gym.make(env_id)
        env.reset(seed=0)
        env.step(env.action_space.sample())
        env.close()
    except Exception as exc:
        errors[env_id] = repr(exc)
# only what an installed distribution brings (the standard library and modules made at run time aside)
def installed(name):
    path = getattr(sys.modules.get(name), "__file__", None) or ""
    return "site-packages" in path or "dist-packages" in path
new = {m.split(".")[0] for m in set(sys.modules) - before}
print(json.dumps({"modules": sorted(m for m in new if installed(m)), "errors": errors}))
"""


def _pyproject() -> dict[str, list[str]]:
    """palaestra's own requirements by extra ('' for the core), from this checkout's pyproject.toml."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return {"": project["dependencies"], **project["optional-dependencies"]}


def _declared(extra: str | None) -> set[str]:
    """Every distribution that ``pip install 'palaestra[extra]'`` installs (the core for ``None``)."""
    own = _pyproject()
    todo: list[tuple[str, frozenset[str]]] = []

    def need(texts: list[str], extras: frozenset[str] = frozenset({""})) -> None:
        for text in texts:
            requirement = Requirement(text)
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": e}) for e in extras):
                todo.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))

    need(own[""] + (own[extra] if extra else []))
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = key = todo.pop()
        if key in seen:
            continue
        seen.add(key)
        if name == "palaestra":  # an extra made of others (postgres = palaestra[server] + psycopg)
            need([r for e in extras for r in own[e]])
            continue
        try:
            need(importlib.metadata.requires(name) or [], extras | {""})
        except importlib.metadata.PackageNotFoundError:
            continue
    return {name for name, _ in seen}


def _ids_by_engine() -> dict[str | None, list[str]]:
    """One runnable id of each entry point (and 2017 successor), grouped by the extra each needs."""
    chosen: dict[str | None, dict[tuple[str, str | None], str]] = defaultdict(dict)
    for entry in catalogue.entries(include_unavailable=False):
        spec = gymnasium.spec(entry.env_id)
        if not isinstance(spec.entry_point, str):
            continue
        extra = catalogue.engine_of(spec.entry_point, legacy.row(entry.env_id))
        successor = entry.legacy.successor if entry.legacy else None
        chosen[extra].setdefault((spec.entry_point, successor), entry.env_id)
    return {extra: sorted(ids.values()) for extra, ids in chosen.items()}


@pytest.mark.slow
def test_every_envs_imports_are_declared_in_the_extra_palaestra_envs_names() -> None:
    groups = _ids_by_engine()
    assert {None, "box2d", "mujoco", "atari", "board"} <= set(groups)
    distributions = {m: {canonicalize_name(d) for d in ds} for m, ds in importlib.metadata.packages_distributions().items()}
    problems = []
    for extra, ids in groups.items():
        assert extra is None or extra in EXTRA_MODULES, f"{ids[0]} needs {extra!r}, which is no palaestra extra"
        done = subprocess.run([sys.executable, "-c", IMPORTS_OF_ENVS], input=json.dumps([ids, extra == "atari"]), capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        problems += [f"{extra or 'core'}: {env_id} is listed as runnable but fails: {error}"
                     for env_id, error in report["errors"].items()]
        declared = _declared(extra) | {"palaestra"}
        for module in report["modules"]:
            # (a fork that provides the same module, such as pygame-ce for pygame, counts as it)
            brought_by = distributions.get(module, set()) | {canonicalize_name(module)}
            if not brought_by & declared and module not in OPTIONAL_IMPORTS:
                problems.append(f"{extra or 'core'} ({', '.join(ids[:3])}...): {module!r} comes from "
                                f"{', '.join(sorted(brought_by))}, which 'palaestra[{extra or ''}]' does not install")
    assert problems == [], "\n".join(problems)
