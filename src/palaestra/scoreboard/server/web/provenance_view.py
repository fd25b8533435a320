"""The evaluation page's "How this was run": its provenance and conditions, ready for the template.

Every value here is the uploader's text; the template escapes it (Jinja's autoescape), and nothing
is marked safe. :func:`reproducing_command` builds the shell lines that rerun the recorded command
at the recorded commit, each argument shell-quoted.
"""

from __future__ import annotations

import json
import ntpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from palaestra.scoreboard.server.evaluations.conditions import conditions_label

__all__ = ["ProvenanceView", "provenance_view", "reproducing_command"]

#: Seeds listed on the page (the rest are in the API's answer).
SHOWN_SEEDS = 20


@dataclass(frozen=True)
class ProvenanceView:
    recorded: bool
    conditions: str
    #: (label, value) rows: code, command, machine, env
    facts: list[tuple[str, str]] = field(default_factory=list)
    command: str | None = None
    config: list[tuple[str, str]] = field(default_factory=list)
    packages: list[tuple[str, str]] = field(default_factory=list)
    env_arguments: list[tuple[str, str]] = field(default_factory=list)
    seeds: str | None = None
    omitted: list[str] = field(default_factory=list)


#: The program names of an installed ``palaestra`` command (a console script, not a Python file).
PALAESTRA_COMMANDS = frozenset({"palaestra", "palaestra.exe"})
#: What a Python file to run with ``python FILE`` is called.
PYTHON_FILE_ENDINGS = (".py", ".pyw", ".pyz")


def _argv_lines(command: Mapping[str, Any]) -> list[str] | None:
    """The recorded command as it can be typed (the Monitor records ``argv[0]`` as ``-m package``, ``-c``,
    a script's path, or an installed command's path): ``palaestra run …`` for palaestra's own command,
    ``python -m package …``, ``python script.py …``, and ``python -c …`` with a note, since the
    program text of ``-c`` is not in ``argv``."""
    argv = [str(a) for a in command.get("argv") or []]
    if not argv:
        return None
    program, rest = argv[0], argv[1:]
    python = ["python", *([command["python_flags"]] if command.get("python_flags") else [])]
    if program.startswith("-m "):  # two words, not one argument
        return [shlex.join([*python, "-m", program[3:], *rest])]
    if program == "-c":
        return [
            "# run as python -c PROGRAM: the program's text is not recorded, only the arguments after it",
            " ".join([*python, "-c", "…", *map(shlex.quote, rest)]),
        ]
    if ntpath.basename(program) in PALAESTRA_COMMANDS:  # ntpath: splits at / and at \\ (a Windows run's path)
        return [shlex.join(["palaestra", *rest])]
    if program.endswith(PYTHON_FILE_ENDINGS) or command.get("python_flags"):
        return [shlex.join([*python, program, *rest])]
    return [shlex.join([program, *rest])]  # another installed command (a console script): run as it is


def reproducing_command(provenance: Mapping[str, Any]) -> str | None:
    """Shell lines that rerun the recorded command at the recorded commit (None: no command)."""
    command = provenance.get("command")
    found = _argv_lines(command) if isinstance(command, Mapping) else None
    if found is None:
        return None
    lines = []
    git = provenance.get("git")
    if isinstance(git, Mapping) and git.get("commit"):
        lines.append(shlex.join(["git", "checkout", str(git["commit"])]))
        if git.get("dirty"):
            lines.append(
                "# the tree had uncommitted changes: apply them first (their sha256 is on this page)"
            )
    lines.extend(found)
    return "\n".join(lines)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _seeds(provenance: Mapping[str, Any]) -> str | None:
    seeds = provenance.get("seeds") or []
    resets = provenance.get("resets")
    if not seeds:
        return f"no seed passed to any of {resets} resets" if resets else "none passed"
    shown = ", ".join(f"{_text(s.get('seed'))} (reset {s.get('reset')})" for s in seeds[:SHOWN_SEEDS])
    more = f", and {len(seeds) - SHOWN_SEEDS} more" if len(seeds) > SHOWN_SEEDS else ""
    of = f" over {resets} resets" if resets else ""
    cut = " (the list was cut)" if provenance.get("seeds_truncated") else ""
    return f"{shown}{more}{of}{cut}"


def _facts(provenance: Mapping[str, Any]) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []
    git = provenance.get("git")
    if isinstance(git, Mapping):
        state = (
            "uncommitted changes, diff sha256 " + str(git.get("diff_sha256")) if git.get("dirty") else "clean"
        )
        branch = f" on {git['branch']}" if git.get("branch") else ""
        facts.append(("Code", f"git commit {git.get('commit')}{branch} ({state})"))
    elif "git" in provenance:
        facts.append(("Code", "not in a git repository"))
    command = provenance.get("command")
    if isinstance(command, Mapping) and command.get("script_sha256"):
        facts.append(("Entry script", f"{command.get('script')} (sha256 {command['script_sha256']})"))
    system = provenance.get("system")
    if isinstance(system, Mapping):
        python = f"{system.get('implementation') or 'Python'} {system.get('python')}"
        cpu = f"{system.get('cpu') or 'unknown CPU'} × {system.get('cpu_count')}"
        facts.append(("Machine", f"{python} on {system.get('os')}; {cpu}"))
        facts.append(("GPU", ", ".join(system.get("gpus") or []) or "none visible"))
        if system.get("host"):
            facts.append(("Host", str(system["host"])))
    env = provenance.get("env")
    if isinstance(env, Mapping):
        facts.append(("Env", f"{env.get('id')} ({env.get('entry_point')})"))
        facts.append(("Step limit", _text(env.get("max_episode_steps"))))
        facts.append(("Wrappers", " → ".join(env.get("wrappers") or []) or "none"))
        if env.get("num_envs"):
            facts.append(
                ("Sub-environments", f"{env['num_envs']} ({env.get('vectorization_mode') or 'vector env'})")
            )
    if provenance.get("recorded_by"):
        facts.append(("Recorded by", f"{provenance['recorded_by']} at {provenance.get('started')}"))
    return facts


def provenance_view(
    provenance: Mapping[str, Any] | None, conditions: Mapping[str, Any] | None
) -> ProvenanceView:
    if not provenance:
        return ProvenanceView(recorded=False, conditions=conditions_label(conditions))
    found = provenance.get("env")
    env: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    registry = env.get("registry_kwargs") or {}
    arguments = [
        (k, _text(v) + ("" if registry.get(k) == v else f"  (registry: {_text(registry.get(k))})"))
        for k, v in (env.get("kwargs") or {}).items()
    ]
    return ProvenanceView(
        recorded=True,
        conditions=conditions_label(conditions),
        facts=_facts(provenance),
        command=reproducing_command(provenance),
        config=[(str(k), _text(v)) for k, v in (provenance.get("config") or {}).items()],
        packages=[(str(k), str(v)) for k, v in (provenance.get("packages") or {}).items()],
        env_arguments=arguments,
        seeds=_seeds(provenance),
        omitted=[str(o) for o in provenance.get("omitted") or []],
    )
