"""The agent descriptor: the JSON file beside an agent's ONNX model (``MODEL.json`` beside ``MODEL.onnx``).

The one home of its schema. A descriptor says how the board turns the env's observations into the
model's input and the model's output into the env's action; everything else (the env's arguments,
sticky actions, the step limit) is the board's protocol (:mod:`palaestra.agents.artifact.protocol`),
not the agent's to choose::

    {
      "version": 1,
      "env_id": "CartPole-v1",
      "preprocessing": {"name": "none"},
      "action": "argmax",
      "deterministic": true
    }

* ``preprocessing``: one of :data:`PREPROCESSING_NAMES` with its arguments: ``none`` (the observation
  as the env gives it), ``flatten`` (Gymnasium's ``FlattenObservation``), ``atari`` (Gymnasium's
  ``AtariPreprocessing`` then ``FrameStackObservation``, with their arguments; the defaults are
  CleanRL's and SB3's: 84x84 grey frames, 4 stacked, 30 no-ops at most, 4 frames a step).
* ``action``: one of :data:`ACTION_NAMES`: ``argmax`` (the output is a score per discrete action),
  ``sample`` (the output is a logit per discrete action; the action is drawn from their softmax with
  the episode's seed), ``index`` (the output is the discrete action itself, as SB3's ONNX export
  gives it), ``clip`` (the output is a continuous action, clipped to the action space's bounds),
  ``rescale`` (the output is in [-1, 1] and is scaled to the bounds, as SB3's squashed policies
  give it: SAC, TD3).
* ``deterministic``: whether the same seed gives the same episode: ``true`` forbids ``sample`` and
  the graph's random operators (checked by :func:`~palaestra.agents.artifact.checks.check_artifact`).
* ``input_name`` / ``output_name``: which of the model's inputs and outputs to use (default: its only
  input and its first output); ``observation_key``: the key of a ``Dict`` observation to feed it.

Unknown fields are refused; each error names the field, the value and the allowed values
(:class:`DescriptorError`).
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from palaestra.errors import Error

__all__ = [
    "ACTION_NAMES",
    "PREPROCESSING_NAMES",
    "AgentDescriptor",
    "AtariPreprocessing",
    "DescriptorError",
    "FlattenPreprocessing",
    "NoPreprocessing",
    "Preprocessing",
    "descriptor_path_for",
    "load_descriptor",
]

#: The preprocessing names a descriptor may use (each a class below, with its arguments).
PREPROCESSING_NAMES = ("none", "flatten", "atari")
#: The action mappings a descriptor may use.
ACTION_NAMES = ("argmax", "sample", "index", "clip", "rescale")
#: The largest descriptor file read (a descriptor is a few hundred bytes).
MAX_DESCRIPTOR_BYTES = 64 * 1024


class DescriptorError(Error, ValueError):
    """A descriptor that is not valid JSON or not a valid descriptor; the message names the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoPreprocessing(_Strict):
    """The observation as the env gives it (cast to the model input's element type, batch of one)."""

    name: Literal["none"]


class FlattenPreprocessing(_Strict):
    """Gymnasium's ``FlattenObservation``: any observation space as one flat vector."""

    name: Literal["flatten"]


class AtariPreprocessing(_Strict):
    """Gymnasium's ``AtariPreprocessing`` then ``FrameStackObservation(stack)``.

    The arguments are ``AtariPreprocessing``'s, with its defaults; ``terminal_on_life_loss`` is not
    one of them: an evaluation episode is the whole game (Machado et al. 2018).
    """

    name: Literal["atari"]
    noop_max: int = Field(30, ge=0, le=30)
    frame_skip: int = Field(4, ge=1, le=8)
    screen_size: int = Field(84, ge=8, le=256)
    grayscale_obs: bool = True
    grayscale_newaxis: bool = False
    scale_obs: bool = False
    stack: int = Field(4, ge=1, le=16)


Preprocessing = Annotated[
    NoPreprocessing | FlattenPreprocessing | AtariPreprocessing, Field(discriminator="name")
]


class AgentDescriptor(_Strict):
    """How the board runs an ONNX policy on ``env_id`` (see the module docstring)."""

    version: Literal[1] = 1
    env_id: str = Field(min_length=1, max_length=200)
    preprocessing: Preprocessing = Field(default_factory=lambda: NoPreprocessing(name="none"))
    action: Literal["argmax", "sample", "index", "clip", "rescale"]
    deterministic: bool
    input_name: str | None = Field(None, min_length=1, max_length=200)
    output_name: str | None = Field(None, min_length=1, max_length=200)
    observation_key: str | None = Field(None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _sampling_is_not_deterministic(self) -> AgentDescriptor:
        if self.action == "sample" and self.deterministic:
            raise ValueError(
                "action 'sample' draws actions at random, so 'deterministic' must be false "
                "(or use 'argmax' for the most likely action)"
            )
        return self

    @classmethod
    def from_json(cls, data: str | bytes) -> AgentDescriptor:
        """Parse a descriptor document; raises :class:`DescriptorError` naming the field and the fix."""
        if len(data) > MAX_DESCRIPTOR_BYTES:
            raise DescriptorError(
                f"the agent descriptor is {len(data)} bytes; the limit is {MAX_DESCRIPTOR_BYTES}"
            )
        try:
            document = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise DescriptorError(f"the agent descriptor is not valid JSON: {exc}") from None
        return cls.from_document(document)

    @classmethod
    def from_document(cls, document: Any) -> AgentDescriptor:
        """Validate a parsed descriptor document (a dict); raises :class:`DescriptorError`."""
        if not isinstance(document, dict):
            raise DescriptorError(
                f"the agent descriptor must be a JSON object, not {type(document).__name__}"
            )
        try:
            return cls.model_validate(document)
        except ValidationError as exc:
            raise DescriptorError(_describe(exc)) from None

    def to_json(self) -> str:
        """The descriptor document, as written beside the model (defaults included, stable order)."""
        return self.model_dump_json(indent=2, exclude_none=True) + "\n"

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the descriptor document to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())


_PREPROCESSING: dict[str, type[_Strict]] = {
    "none": NoPreprocessing,
    "flatten": FlattenPreprocessing,
    "atari": AtariPreprocessing,
}


def _describe(exc: ValidationError) -> str:
    """One sentence per problem: the field, the value, what is allowed."""
    problems = []
    for error in exc.errors(include_url=False):
        location = [str(part) for part in error["loc"]]
        tag = None
        # a discriminated union puts the tag in the location ("preprocessing", "atari", "stack")
        if len(location) >= 2 and location[0] == "preprocessing" and location[1] in PREPROCESSING_NAMES:
            tag = location.pop(1)
        field = ".".join(location) or "descriptor"
        kind = error["type"]
        value = error.get("input")
        if kind == "extra_forbidden":
            known = list(_PREPROCESSING[tag].model_fields) if tag else list(AgentDescriptor.model_fields)
            problems.append(f"{field}: unknown field (the known fields are {', '.join(known)})")
        elif kind == "missing":
            problems.append(f"{field}: required field is missing")
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            problems.append(
                f"{field}.name: {json.dumps(_tag(value))} is not a preprocessing name "
                f"(allowed: {', '.join(PREPROCESSING_NAMES)})"
            )
        elif field == "action":
            problems.append(
                f"action: {json.dumps(value)} is not an action mapping (allowed: {', '.join(ACTION_NAMES)})"
            )
        else:
            shown = json.dumps(value, default=str)[:80]
            problems.append(f"{field}: {shown}: {error['msg']}")
    return "invalid agent descriptor: " + "; ".join(problems)


def _tag(value: Any) -> Any:
    return value.get("name") if isinstance(value, dict) else value


def descriptor_path_for(model_path: str | os.PathLike[str]) -> str:
    """The descriptor beside a model: ``MODEL.json`` for ``MODEL.onnx``."""
    root, _ = os.path.splitext(os.fspath(model_path))
    return root + ".json"


def load_descriptor(path: str | os.PathLike[str]) -> AgentDescriptor:
    """Read and validate the descriptor file at ``path``; raises :class:`DescriptorError`."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_DESCRIPTOR_BYTES + 1)
    except OSError as exc:
        raise DescriptorError(
            f"cannot read the agent descriptor {os.fspath(path)!r}: {exc.strerror or exc} "
            "(`palaestra agent pack` writes one beside the model)"
        ) from None
    return AgentDescriptor.from_json(data)
