"""Provenance: what ran, with which code, arguments and seeds, recorded beside a Monitor's episodes.

* :class:`ProvenanceRecorder` -- one per Monitor (single or vector); it probes the machine and the
  code at the first ``reset``, notes the seed of every ``reset`` and writes
  ``openaigym.provenance.{infix}.json`` (see :func:`palaestra.monitoring.files.provenance_name`),
  a name gym 0.9.4's ``load_results`` never reads (it reads only ``openaigym.manifest.*``).
* :func:`redact_argv` -- a command line with keys, tokens and passwords replaced by ``[REDACTED]``
  (:mod:`palaestra.monitoring.redaction`, re-exported here).
* :func:`load_provenance` -- the provenance of a training directory, as the upload client sends it.

What is recorded, and why, is in docs/provenance.md. Nothing here reads environment variables'
values, and nothing runs per step: the probes run once, at the first reset, and the document is
rewritten only when a reset brings a new seed and at close.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import logging
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Collection, Mapping
from datetime import datetime, timezone
from typing import Any

from palaestra._version import __version__
from palaestra.monitoring import files
from palaestra.monitoring.redaction import REDACTED, redact_argv, redact_text, redact_word, secret_entry

__all__ = [
    "FORMAT_VERSION",
    "MAX_SEEDS",
    "OMITTABLE",
    "ProvenanceRecorder",
    "env_description",
    "load_provenance",
    "redact_argv",
]

logger = logging.getLogger("palaestra")

FORMAT_VERSION = 1
#: At most this many seeds are kept (a run that seeds every reset of millions of episodes); the
#: document says how many resets there were and that the list was cut.
MAX_SEEDS = 1000
#: The sections a user may leave out with ``Monitor(..., provenance_omit=[...])``; a dotted name
#: (``"system.host"``) leaves out one field of a section.
OMITTABLE = ("git", "command", "system", "packages", "env", "seeds", "config")

#: Modules whose versions matter to a result, and the distribution each comes from. Only those
#: already imported by the run are recorded: importing one to ask its version would cost seconds
#: (torch, jax) and say nothing about the run.
PACKAGES = {
    "palaestra": "palaestra",
    "gymnasium": "gymnasium",
    "gym": "gym",
    "numpy": "numpy",
    "scipy": "scipy",
    "ale_py": "ale-py",
    "mujoco": "mujoco",
    "Box2D": "box2d-py",
    "pygame": "pygame",
    "pyspiel": "open_spiel",
    "shimmy": "shimmy",
    "pettingzoo": "pettingzoo",
    "torch": "torch",
    "jax": "jax",
    "jaxlib": "jaxlib",
    "flax": "flax",
    "tensorflow": "tensorflow",
    "stable_baselines3": "stable-baselines3",
    "sb3_contrib": "sb3-contrib",
    "ray": "ray",
    "envpool": "envpool",
}

# -- redaction: palaestra.monitoring.redaction (the scoreboard runs the same on what it receives) ---------

# -- JSON-safe values ------------------------------------------------------------------------------


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON: numbers, strings, lists and string-keyed objects as they are (numpy
    scalars as numbers), anything else as its ``repr``; strings redacted, entries named like secrets
    hidden, nesting cut at eight levels (what the scoreboard accepts)."""
    if value is None or isinstance(value, (bool, int, str)):
        return redact_word(value) if isinstance(value, str) else value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if depth >= 8:
        return redact_text(repr(value))[:200]
    if isinstance(value, Mapping):
        safe = {str(k): json_safe(v, depth + 1) for k, v in value.items()}
        return {k: REDACTED if secret_entry(k, v) else v for k, v in safe.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, depth + 1) for v in value]
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and getattr(value, "shape", None) == ():
        return json_safe(item(), depth)
    if callable(value) or inspect.isclass(value):
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', repr(value))}"
    return redact_text(repr(value))[:1000]


# -- probes ----------------------------------------------------------------------------------------


def _git(args: list[str], cwd: str) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, timeout=10, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _pathspec(where: str, exclude: str | None) -> list[str]:
    """The whole work tree (``:/``), less ``exclude`` when it lies inside it (git refuses a path
    outside the repository, which would read as a clean tree)."""
    if exclude is None:
        return []
    top = _git(["rev-parse", "--show-toplevel"], where)
    if top is None:
        return []
    top_path, excluded = os.path.realpath(top.decode().strip()), os.path.realpath(exclude)
    if os.path.commonpath([top_path, excluded]) != top_path or excluded == top_path:
        return []
    return ["--", ":/", f":(exclude){excluded}"]


def git_state(where: str, exclude: str | None = None) -> dict[str, Any] | None:
    """The commit checked out around ``where``, whether the tree differs from it and a hash of the
    difference (tracked changes and the names of untracked files); None outside a git repository.

    ``exclude``: a folder left out of the comparison, the Monitor's own output folder: the files it
    writes while the run goes are not a change of the code that ran."""
    commit = _git(["rev-parse", "HEAD"], where)
    if commit is None:
        return None
    pathspec = _pathspec(where, exclude)
    status = _git(["status", "--porcelain", "--untracked-files=normal", *pathspec], where) or b""
    diff = _git(["diff", "HEAD", "--binary", *pathspec], where) or b""
    untracked = b"\n".join(line for line in status.splitlines() if line.startswith(b"??"))
    state: dict[str, Any] = {"commit": commit.decode().strip(), "dirty": bool(status.strip())}
    if state["dirty"]:
        state["diff_sha256"] = hashlib.sha256(diff + b"\0" + untracked).hexdigest()
    branch = _git(["rev-parse", "--abbrev-ref", "HEAD"], where)
    if branch and branch.strip() != b"HEAD":
        state["branch"] = redact_text(branch.decode().strip())
    return state


def _entry_script() -> str | None:
    script = sys.argv[0] if sys.argv else ""
    return os.path.abspath(script) if script and os.path.isfile(script) else None


def _program() -> str:
    """``argv[0]`` without the machine's paths: ``-m package`` for a module run with ``python -m``,
    the script's path relative to the working directory when it is under it, else its name."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name:
        name = spec.name.removesuffix(".__main__")
        return f"-m {name}"
    program = sys.argv[0]
    if os.path.isabs(program):
        relative = os.path.relpath(program)
        return relative if not relative.startswith("..") else os.path.basename(program)
    return program


def command_line() -> dict[str, Any]:
    """The command line (redacted), the working directory's name and the entry script's hash."""
    argv = [_program(), *sys.argv[1:]] if sys.argv else []
    command: dict[str, Any] = {"argv": redact_argv(argv), "executable": os.path.basename(sys.executable)}
    if sys.flags.optimize:
        command["python_flags"] = f"-{'O' * sys.flags.optimize}"
    script = _entry_script()
    if script is not None:
        with open(script, "rb") as f:
            command["script_sha256"] = hashlib.sha256(f.read()).hexdigest()
        command["script"] = os.path.basename(script)
    return command


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "Model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def visible_gpus() -> list[str]:
    """The NVIDIA GPUs the driver lists (read from /proc, so no CUDA library is loaded); the names
    torch reports where torch is imported and has initialised CUDA itself."""
    gpus: list[str] = []
    root = "/proc/driver/nvidia/gpus"
    try:
        for bus in sorted(os.listdir(root)):
            with open(os.path.join(root, bus, "information"), encoding="utf-8", errors="replace") as f:
                gpus += [line.split(":", 1)[1].strip() for line in f if line.startswith("Model:")]
    except OSError:
        pass
    torch = sys.modules.get("torch")
    if not gpus and torch is not None:
        try:
            if torch.cuda.is_initialized():
                gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        except Exception:  # a broken CUDA set-up must not fail the run
            pass
    return gpus


def system_description() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpus": visible_gpus(),
        "host": socket.gethostname(),
    }


def package_versions() -> dict[str, str]:
    """Versions of the packages in :data:`PACKAGES` that this process has imported."""
    versions = {"palaestra": __version__}
    for module, distribution in PACKAGES.items():
        if module in sys.modules and distribution not in versions:
            try:
                versions[distribution] = importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                version = getattr(sys.modules[module], "__version__", None)
                if isinstance(version, str):
                    versions[distribution] = version
    return dict(sorted(versions.items()))


# -- the env ---------------------------------------------------------------------------------------

#: Keys ``gymnasium.make_vec`` adds to a vector env's spec kwargs: how it vectorised, not the env.
_VECTOR_KEYS = ("vectorization_mode", "vector_kwargs", "wrappers")


def _constructor_defaults(env_class: type) -> dict[str, Any]:
    try:
        parameters = inspect.signature(env_class).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {
        p.name: p.default
        for p in parameters
        if p.default is not inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD and p.name != "self"
    }


def wrapper_stack(env: Any) -> list[str]:
    """The class names from ``env`` inwards to the unwrapped env (vector wrappers, then sub-env 0's)."""
    stack: list[str] = []
    seen = 0
    while env is not None and seen < 64:
        stack.append(type(env).__name__)
        inner = getattr(env, "env", None)
        if inner is None and type(env).__name__ == "SyncVectorEnv":
            inner = env.envs[0] if getattr(env, "envs", None) else None
        env, seen = inner, seen + 1
    return stack


def env_description(
    env: Any, spec: Any, num_envs: int | None = None, env_id: str | None = None
) -> dict[str, Any]:
    """The env id, its resolved arguments (the constructor's defaults, then the registry's, then what
    was passed), the registry's own, the step limit, the wrapper stack and the entry point. Without a
    spec (a vector env made directly, such as ale-py's ``AtariVectorEnv``), the id the Monitor was
    given, ``env_id``, and no arguments."""
    from gymnasium.envs.registration import registry

    description: dict[str, Any] = {"wrappers": wrapper_stack(env)}
    if num_envs is not None:
        description["num_envs"] = num_envs
    if spec is None:
        if env_id:
            description["id"] = env_id
        return description
    kwargs = {k: v for k, v in (spec.kwargs or {}).items() if k not in _VECTOR_KEYS}
    registered = registry.get(spec.id)
    registry_kwargs = dict(registered.kwargs) if registered is not None else {}
    defaults = _constructor_defaults(type(_innermost(env)))
    # How frames are drawn, and a vector env's size (recorded as num_envs), are not the task's arguments.
    hidden = ("render_mode", "num_envs") if num_envs is not None else ("render_mode",)
    defaults = {k: v for k, v in defaults.items() if k not in hidden}
    kwargs = {k: v for k, v in kwargs.items() if k not in hidden}
    registry_kwargs = {k: v for k, v in registry_kwargs.items() if k not in hidden}
    description.update(
        id=spec.id,
        entry_point=spec.entry_point if isinstance(spec.entry_point, str) else json_safe(spec.entry_point),
        kwargs=json_safe({**defaults, **kwargs}),
        registry_kwargs=json_safe({**defaults, **registry_kwargs}),
        max_episode_steps=spec.max_episode_steps,
        registry_max_episode_steps=registered.max_episode_steps if registered is not None else None,
    )
    if "vectorization_mode" in (spec.kwargs or {}):
        description["vectorization_mode"] = json_safe(spec.kwargs["vectorization_mode"])
    return description


def _innermost(env: Any) -> Any:
    unwrapped = getattr(env, "unwrapped", env)
    envs = getattr(unwrapped, "envs", None)
    if envs:  # a SyncVectorEnv: its sub-environments are the env
        return getattr(envs[0], "unwrapped", envs[0])
    return unwrapped


# -- the recorder ----------------------------------------------------------------------------------


def _check_omit(omit: Collection[str]) -> tuple[str, ...]:
    names = tuple(omit)
    bad = [n for n in names if n.split(".", 1)[0] not in OMITTABLE]
    if bad:
        raise ValueError(
            f"provenance_omit names {bad}, which are not recorded sections; leave out any of "
            f"{', '.join(OMITTABLE)}, or one field of one as 'section.field' (e.g. 'system.host')"
        )
    return names


class ProvenanceRecorder:
    """What one Monitor ran: probed at the first reset, seeds noted at each, written to its directory.

    Args:
        directory: the training directory; infix: the Monitor's file infix.
        env, spec: the env the Monitor wraps and its spec; num_envs: for a vector Monitor; env_id: the
            id a vector Monitor was given for an env without a spec.
        config: the run's hyperparameters (any mapping; made JSON-safe, secret-named keys hidden).
        omit: sections (``"git"``) or fields (``"system.host"``) to leave out.
    """

    def __init__(
        self,
        directory: str,
        infix: str,
        env: Any,
        spec: Any,
        config: Mapping[str, Any] | None = None,
        omit: Collection[str] = (),
        num_envs: int | None = None,
        env_id: str | None = None,
    ) -> None:
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"config must be a mapping of settings to values, not {type(config).__name__}")
        self.path = os.path.join(directory, files.provenance_name(infix))
        self._directory = directory
        self.omit = _check_omit(omit)
        self._env, self._spec, self._num_envs, self._env_id = env, spec, num_envs, env_id
        self._config = json_safe(dict(config)) if config is not None else None
        self._document: dict[str, Any] | None = None
        self._seeds: list[dict[str, Any]] = []
        self._resets = 0

    def reset(self, seed: Any) -> None:
        """Called by the Monitor at every reset: the first one probes and writes; a new seed rewrites."""
        index = self._resets
        self._resets += 1
        if seed is not None and len(self._seeds) < MAX_SEEDS:
            self._seeds.append({"reset": index, "seed": json_safe(seed)})
        if self._document is None:
            self._document = self._probe()
            self.write()
        elif seed is not None:
            # a killed run keeps the seeds it was given, as the journal keeps its episodes: in the page
            # cache, not fsynced (two fsyncs a seeded reset were most of the board evaluator's Monitor
            # cost: bench/agent_eval.py); close() writes the last version durably
            self.write(durable=False)

    def close(self) -> None:
        if self._document is not None:
            self.write()

    def write(self, durable: bool = True) -> None:
        try:
            files.atomic_write_json(self.path, self.document(), durable=durable)
        except OSError as e:  # the episodes matter more than their provenance
            logger.warning("Monitor: could not write the provenance file %s (%s)", self.path, e)

    def document(self) -> dict[str, Any]:
        document = dict(self._document or self._probe())
        if "seeds" not in self.omit:
            document["seeds"] = list(self._seeds)
            document["resets"] = self._resets
            if self._resets > len(self._seeds) and len(self._seeds) >= MAX_SEEDS:
                document["seeds_truncated"] = True
        return document

    def _probe(self) -> dict[str, Any]:
        script = _entry_script()
        sections: dict[str, Any] = {
            "git": lambda: git_state(os.path.dirname(script) if script else os.getcwd(), self._directory),
            "command": command_line,
            "system": system_description,
            "packages": package_versions,
            "env": lambda: env_description(self._env, self._spec, self._num_envs, self._env_id),
            "config": lambda: self._config,
        }
        document: dict[str, Any] = {
            "format": FORMAT_VERSION,
            "recorded_by": f"palaestra {__version__}",
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        for name, probe in sections.items():
            if name in self.omit:
                continue
            value = probe()
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if f"{name}.{k}" not in self.omit}
            document[name] = value
        if self.omit:
            document["omitted"] = sorted(self.omit)
        return document


# -- reading ---------------------------------------------------------------------------------------


def load_provenance(directory: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The provenance of a training directory (None when no Monitor recorded one).

    Several files (a resumed run, or ``vector_env_fns``' Monitors) become one document: the first
    file's, with every file's seeds (each tagged with its ``source``, the file's index) and
    ``sources``, the number of files.
    """
    paths = files.detect_provenance_files(directory)
    documents = []
    for path in paths:
        try:
            document = files.read_json(path)
        except (OSError, ValueError) as e:
            logger.warning("Ignoring the unreadable provenance file %s (%s)", path, e)
            continue
        if isinstance(document, dict):
            documents.append(document)
    if not documents:
        return None
    if len(documents) == 1:
        return documents[0]
    merged = dict(documents[0])
    merged["seeds"] = [
        {**seed, "source": index}
        for index, document in enumerate(documents)
        for seed in document.get("seeds") or []
        if isinstance(seed, dict)
    ][:MAX_SEEDS]
    merged["resets"] = sum(int(d.get("resets") or 0) for d in documents)
    merged["sources"] = len(documents)
    return merged
