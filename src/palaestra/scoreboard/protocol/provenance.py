"""The provenance of an evaluation on the wire: the schema the client sends and the server checks.

* :class:`Provenance` -- what the Monitor recorded (:mod:`palaestra.monitoring.provenance`), as
  ``EvaluationCreate.provenance``; every string and list is bounded, unknown keys are refused.
* :func:`check_provenance_size` -- at most :data:`MAX_PROVENANCE_BYTES` as JSON and
  :data:`MAX_PROVENANCE_DEPTH` levels deep, before the schema runs.

The server treats all of it as untrusted text: a malformed document is a 400 naming the field
(``provenance.git.commit``), the pages escape every value, and secrets are redacted again
(:func:`redact_provenance`) whatever the uploader did.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from palaestra.monitoring.provenance import MAX_SEEDS
from palaestra.monitoring.redaction import redact_argv, redact_value, redact_word

__all__ = [
    "MAX_PROVENANCE_BYTES",
    "MAX_PROVENANCE_DEPTH",
    "Provenance",
    "check_provenance_size",
    "json_depth",
    "redact_provenance",
]

#: The largest provenance document accepted, as compact JSON.
MAX_PROVENANCE_BYTES = 128 * 1024
#: The deepest nesting accepted anywhere in it (``config`` is the user's, nested as they like).
MAX_PROVENANCE_DEPTH = 10

Short = Annotated[str, Field(max_length=200)]
Text = Annotated[str, Field(max_length=4096)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
#: A JSON value of an env argument or a config entry (depth and size are bounded as a whole).
Value = Any


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GitState(_Strict):
    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{7,64}$")]
    dirty: bool
    diff_sha256: Sha256 | None = None
    branch: Short | None = None


class CommandLine(_Strict):
    argv: Annotated[list[Text], Field(max_length=512)]
    executable: Short | None = None
    python_flags: Short | None = None
    script: Text | None = None
    script_sha256: Sha256 | None = None


class SystemDescription(_Strict):
    python: Short | None = None
    implementation: Short | None = None
    os: Short | None = None
    machine: Short | None = None
    cpu: Short | None = None
    cpu_count: Annotated[int, Field(ge=0, le=1_000_000)] | None = None
    gpus: Annotated[list[Short], Field(max_length=64)] = Field(default_factory=list)
    host: Annotated[str, Field(max_length=255)] | None = None


class EnvDescription(_Strict):
    id: Short | None = None
    entry_point: Text | None = None
    kwargs: Annotated[dict[Short, Value], Field(max_length=200)] = Field(default_factory=dict)
    registry_kwargs: Annotated[dict[Short, Value], Field(max_length=200)] = Field(default_factory=dict)
    max_episode_steps: Annotated[int, Field(ge=0)] | None = None
    registry_max_episode_steps: Annotated[int, Field(ge=0)] | None = None
    wrappers: Annotated[list[Short], Field(max_length=64)] = Field(default_factory=list)
    num_envs: Annotated[int, Field(ge=1)] | None = None
    vectorization_mode: Short | None = None


SeedValue = int | Annotated[list[int | None], Field(max_length=4096)] | Short | None


class SeedRecord(_Strict):
    reset: Annotated[int, Field(ge=0)]
    seed: SeedValue
    source: Annotated[int, Field(ge=0)] | None = None


class Provenance(_Strict):
    """``EvaluationCreate.provenance``: what ran (docs/provenance.md)."""

    format: Annotated[int, Field(ge=1, le=1000)]
    recorded_by: Short | None = None
    started: Short | None = None
    git: GitState | None = None
    command: CommandLine | None = None
    system: SystemDescription | None = None
    packages: Annotated[dict[Short, Short], Field(max_length=200)] = Field(default_factory=dict)
    env: EnvDescription | None = None
    config: Annotated[dict[Short, Value], Field(max_length=500)] | None = None
    seeds: Annotated[list[SeedRecord], Field(max_length=MAX_SEEDS)] = Field(default_factory=list)
    resets: Annotated[int, Field(ge=0)] | None = None
    seeds_truncated: bool | None = None
    sources: Annotated[int, Field(ge=1)] | None = None
    omitted: Annotated[list[Short], Field(max_length=64)] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        check_provenance_size(value)
        return redact_provenance(value)


def redact_provenance(document: Any) -> Any:
    """``document`` with its secrets replaced (:mod:`palaestra.monitoring.redaction`): the command
    line as a command line (``--passphrase X`` hides the next argument), then every value. Run by
    the schema, so on both sides: ``palaestra upload`` (and ``--dry-run``) sends what it shows, and
    the server, trusting no uploader's redaction, stores and shows only what passed through it."""
    if not isinstance(document, dict):
        return document
    command = document.get("command")
    argv = command.get("argv") if isinstance(command, dict) else None
    if isinstance(command, dict) and isinstance(argv, list) and all(isinstance(arg, str) for arg in argv):
        document = {**document, "command": {**command, "argv": redact_argv(argv)}}
    packages = document.get("packages")
    redacted = redact_value({k: v for k, v in document.items() if k != "packages"})
    if isinstance(packages, dict):
        # distribution names are not settings: google-auth's version is no secret (its value's shape still counts)
        redacted["packages"] = {k: redact_word(v) if isinstance(v, str) else v for k, v in packages.items()}
    elif "packages" in document:
        redacted["packages"] = packages
    return redacted


def json_depth(value: Any, limit: int) -> int:
    """How deep ``value`` nests (a scalar is 0), counting no further than ``limit + 1``."""
    if limit < 0 or not isinstance(value, (dict, list)):
        return 0
    items = value.values() if isinstance(value, dict) else value
    return 1 + max((json_depth(v, limit - 1) for v in items), default=0)


def check_provenance_size(value: Any) -> None:
    """Raise ``ValueError`` for a provenance document over the size or depth limit."""
    depth = json_depth(value, MAX_PROVENANCE_DEPTH)
    if depth > MAX_PROVENANCE_DEPTH:
        raise ValueError(f"provenance nests deeper than {MAX_PROVENANCE_DEPTH} levels")
    size = len(json.dumps(value, separators=(",", ":"), default=str))
    if size > MAX_PROVENANCE_BYTES:
        raise ValueError(
            f"provenance is {size} bytes as JSON; at most {MAX_PROVENANCE_BYTES} are accepted (a large "
            "config= mapping? record fewer settings, or leave it out with provenance_omit=['config'])"
        )
