"""The static checks of an agent's ONNX model: a hostile file, read before anything of it runs.

:func:`check_artifact` reads the file as bytes (never through ``onnx.load`` on a path, which follows
external-data references) and refuses, with an :class:`ArtifactError` that names the problem:

* a file over the size limit, or one that is not an ONNX model;
* any tensor whose data lives outside the file (``external_data``, ``data_location=EXTERNAL``),
  sparse ones included: the path traversals of CVE-2022-25882, CVE-2024-27318 and CVE-2026-27489
  (``../../etc/passwd``, absolute paths, links) are all of this kind, and an agent needs none;
* a tensor that declares more elements than the limit, or other data than its shape says;
* an operator outside the standard domains (``ai.onnx``, ``ai.onnx.ml``): no custom operators,
  no ONNX Runtime contrib ops, no model-local functions;
* more nodes than the limit, or subgraphs nested deeper than the limit;
* random operators in a model that says it is deterministic;
* a model that ``onnx.checker.check_model(full_check=True)`` refuses;
* an input or output that does not fit the env's spaces under the board's protocol and the
  descriptor's preprocessing and action mapping.

What static checks cannot see (a ``Loop`` of a billion turns, an ``Expand`` to a shape computed at
run time) is stopped by the sandbox's limits (:mod:`palaestra.agents.artifact.sandbox`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium

from palaestra.agents.artifact.descriptor import AgentDescriptor
from palaestra.errors import Error

if TYPE_CHECKING:
    import onnx

__all__ = [
    "MAX_ELEMENTS",
    "MAX_MODEL_BYTES",
    "MAX_NODES",
    "MAX_SUBGRAPH_DEPTH",
    "STANDARD_DOMAINS",
    "ArtifactError",
    "ArtifactInfo",
    "check_artifact",
    "check_artifact_bytes",
    "env_spaces",
]

#: The largest model accepted: 64 MiB (CleanRL's Nature-CNN Atari policy is about 6.5 MB).
MAX_MODEL_BYTES = 64 * 1024 * 1024
#: The most elements any one tensor may declare (a quarter of the size limit in float32s).
MAX_ELEMENTS = 16 * 1024 * 1024
#: The most nodes, subgraphs' included (an Atari CNN has about 20).
MAX_NODES = 10_000
#: The deepest nesting of subgraphs (``If`` in ``Loop`` in ...).
MAX_SUBGRAPH_DEPTH = 4
#: The operator domains a model may use: ONNX's own ("" is ai.onnx).
STANDARD_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml"})
#: Operators whose output is random: refused when the descriptor says ``deterministic``.
RANDOM_OPS = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"}
)
#: Input element types the evaluator feeds (ONNX TensorProto.DataType -> numpy dtype).
INPUT_TYPES = {1: "float32", 2: "uint8", 6: "int32", 7: "int64", 10: "float16", 11: "float64"}


class ArtifactError(Error, ValueError):
    """An agent artifact refused by the static checks; the message names the problem and the fix."""


@dataclass(frozen=True)
class ArtifactInfo:
    """What the checks found out about an accepted model."""

    sha256: str
    size: int
    ir_version: int
    opset: int
    producer: str
    nodes: int
    input_name: str
    input_shape: tuple[int | str, ...]
    input_type: str
    output_name: str
    output_shape: tuple[int | str, ...]
    #: the observation space the model is fed (after the descriptor's preprocessing)
    observation_shape: tuple[int, ...]
    #: the env's action space, as Gymnasium writes it (``Discrete(18)``)
    action_space: str

    def to_json(self) -> str:
        """The findings as JSON (how the sandbox's caller hands them to the evaluator)."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ArtifactInfo:
        document = json.loads(text)
        for name in ("input_shape", "output_shape", "observation_shape"):
            document[name] = tuple(document[name])
        return cls(**document)


def check_artifact(
    model_path: str | os.PathLike[str], descriptor: AgentDescriptor, *, max_bytes: int = MAX_MODEL_BYTES
) -> ArtifactInfo:
    """Check the ONNX model at ``model_path`` for ``descriptor``; raise :class:`ArtifactError` if refused."""
    return check_artifact_bytes(_read(model_path, max_bytes), descriptor, max_bytes=max_bytes)


def check_artifact_bytes(
    data: bytes, descriptor: AgentDescriptor, *, max_bytes: int = MAX_MODEL_BYTES
) -> ArtifactInfo:
    """:func:`check_artifact` of a model held in memory (an upload's body)."""
    if len(data) > max_bytes:
        raise ArtifactError(_too_large(len(data), max_bytes))
    if not data:
        raise ArtifactError("the agent model is an empty file")
    model = _parse(data)
    nodes = _check_graphs(model, descriptor)
    _check_opsets(model)
    _run_checker(model)
    observation_space, action_space = env_spaces(descriptor)
    input_name, input_shape, input_type = _check_input(model, descriptor, observation_space)
    output_name, output_shape = _check_output(model, descriptor, action_space)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    return ArtifactInfo(
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        ir_version=model.ir_version,
        opset=opset,
        producer=f"{model.producer_name} {model.producer_version}".strip(),
        nodes=nodes,
        input_name=input_name,
        input_shape=input_shape,
        input_type=input_type,
        output_name=output_name,
        output_shape=output_shape,
        observation_shape=tuple(observation_space.shape or ()),
        action_space=str(action_space),
    )


def _read(model_path: str | os.PathLike[str], max_bytes: int) -> bytes:
    path = os.fspath(model_path)
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise ArtifactError(f"cannot read the agent model {path!r}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ArtifactError(_too_large(os.path.getsize(path), max_bytes))
    return data


def _too_large(size: int, max_bytes: int) -> str:
    return (
        f"the agent model is {size:,} bytes; the limit is {max_bytes:,} (a policy network is rarely over "
        "a few MB: export the policy alone, without the value function or optimizer state)"
    )


def _parse(data: bytes) -> onnx.ModelProto:
    import onnx
    from google.protobuf.message import DecodeError

    try:
        # from bytes: nothing outside the file is read (onnx.load(path) would load external data)
        model = onnx.load_model_from_string(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ArtifactError(f"the agent model is not an ONNX model (protobuf: {exc})") from None
    if not model.HasField("graph"):
        raise ArtifactError("the agent model has no graph: it is not an ONNX model")
    return model


def _tensors_of(graph: onnx.GraphProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """Every dense tensor stored in ``graph`` (not its subgraphs): initializers, sparse initializers'
    parts, and the tensors in node attributes (``Constant``'s value, ...)."""
    for tensor in graph.initializer:
        yield f"initializer {tensor.name!r}", tensor
    for sparse in graph.sparse_initializer:
        yield f"sparse initializer {sparse.values.name!r}", sparse.values
        yield f"sparse initializer {sparse.values.name!r} (indices)", sparse.indices
    for node in graph.node:
        for attribute in node.attribute:
            where = f"attribute {attribute.name!r} of node {node.name or node.op_type!r}"
            if attribute.HasField("t"):
                yield where, attribute.t
            for tensor in attribute.tensors:
                yield where, tensor
            if attribute.HasField("sparse_tensor"):
                yield where, attribute.sparse_tensor.values
                yield f"{where} (indices)", attribute.sparse_tensor.indices
            for sparse in attribute.sparse_tensors:
                yield where, sparse.values
                yield f"{where} (indices)", sparse.indices


def _subgraphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield attribute.g
            yield from attribute.graphs


def _check_graphs(model: onnx.ModelProto, descriptor: AgentDescriptor) -> int:
    """Walk every graph (iteratively: a hostile nesting must not exhaust Python's stack); return the
    number of nodes."""
    if len(model.functions):
        raise ArtifactError(
            f"the agent model defines {len(model.functions)} local function(s) "
            f"({', '.join(sorted({f.domain + '.' + f.name for f in model.functions})[:3])}); the board runs "
            "only standard ONNX operators: export with the functions inlined (onnx.inliner.inline_local_functions)"
        )
    nodes = 0
    todo: list[tuple[onnx.GraphProto, int]] = [(model.graph, 0)]
    while todo:
        graph, depth = todo.pop()
        if depth > MAX_SUBGRAPH_DEPTH:
            raise ArtifactError(
                f"the agent model nests subgraphs {depth} deep; the limit is {MAX_SUBGRAPH_DEPTH}"
            )
        nodes += len(graph.node)
        if nodes > MAX_NODES:
            raise ArtifactError(f"the agent model has more than {MAX_NODES:,} nodes; the limit is {MAX_NODES:,}")
        for where, tensor in _tensors_of(graph):
            _check_tensor(where, tensor)
        for node in graph.node:
            if node.domain not in STANDARD_DOMAINS:
                raise ArtifactError(
                    f"node {node.name or node.op_type!r} uses the operator {node.op_type!r} of domain "
                    f"{node.domain!r}; the board runs only the standard ONNX domains (ai.onnx, ai.onnx.ml): "
                    "no custom operators"
                )
            if descriptor.deterministic and node.op_type in RANDOM_OPS:
                raise ArtifactError(
                    f"node {node.name or node.op_type!r} is the random operator {node.op_type!r}, but the "
                    "descriptor says deterministic: set \"deterministic\": false, or remove it"
                )
        todo.extend((sub, depth + 1) for sub in _subgraphs(graph))
    return nodes


def _check_tensor(where: str, tensor: onnx.TensorProto) -> None:
    import onnx

    if tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data):
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        raise ArtifactError(
            f"tensor {tensor.name!r} ({where}) keeps its data in an external file {location!r}; the board "
            "accepts only self-contained models: save with onnx.save_model(model, path, "
            "save_as_external_data=False)"
        )
    count = math.prod(tensor.dims)
    if any(d < 0 for d in tensor.dims) or count > MAX_ELEMENTS:
        raise ArtifactError(
            f"tensor {tensor.name!r} ({where}) declares the shape {list(tensor.dims)}; the limit is "
            f"{MAX_ELEMENTS:,} elements a tensor"
        )
    stored = _stored_elements(tensor)
    if stored is not None and stored != count:
        raise ArtifactError(
            f"tensor {tensor.name!r} ({where}) declares the shape {list(tensor.dims)} ({count:,} elements) "
            f"but stores {stored:,}: the model is corrupt"
        )


def _stored_elements(tensor: onnx.TensorProto) -> int | None:
    """How many elements the tensor's data holds, where that can be told without decoding it."""
    import onnx

    if tensor.HasField("raw_data"):
        try:
            itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        except (KeyError, ValueError, TypeError):
            return None
        if tensor.data_type in (onnx.TensorProto.STRING,) or itemsize == 0:
            return None
        # 4-bit types pack two elements a byte; leave them to the checker
        if tensor.data_type in _PACKED_TYPES:
            return None
        return len(tensor.raw_data) // itemsize if len(tensor.raw_data) % itemsize == 0 else -1
    fields = (
        tensor.float_data,
        tensor.int32_data,
        tensor.string_data,
        tensor.int64_data,
        tensor.double_data,
        tensor.uint64_data,
    )
    stored = sum(len(f) for f in fields)
    if tensor.data_type in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128):
        return stored // 2
    if stored == 0 and math.prod(tensor.dims) != 0:
        return 0
    return stored if tensor.data_type not in _PACKED_TYPES else None


_PACKED_TYPES = frozenset({21, 22, 23, 25, 26})  # UINT4, INT4, FLOAT4E2M1, UINT2, INT2 (packed)


def _check_opsets(model: onnx.ModelProto) -> None:
    import onnx

    newest = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain not in STANDARD_DOMAINS:
            raise ArtifactError(
                f"the agent model imports the operator set {opset.domain!r}; the board runs only the standard "
                "ONNX domains (ai.onnx, ai.onnx.ml): no custom operators"
            )
        if opset.domain in ("", "ai.onnx") and not 7 <= opset.version <= newest:
            raise ArtifactError(
                f"the agent model uses ONNX opset {opset.version}; the board's ONNX runs opsets 7 to {newest}"
            )


def _run_checker(model: onnx.ModelProto) -> None:
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        first = " ".join(str(exc).split())[:400]
        raise ArtifactError(f"the ONNX checker refuses the agent model: {first}") from None


def env_spaces(descriptor: AgentDescriptor) -> tuple[gymnasium.Space[Any], gymnasium.Space[Any]]:
    """The observation space the model is fed (the env under the board's protocol, with the
    descriptor's preprocessing and observation key) and the env's action space."""
    from palaestra.agents.artifact import preprocessing, protocol
    from palaestra.catalogue import unavailable_reason

    reason = unavailable_reason(descriptor.env_id)
    if reason is not None:
        raise ArtifactError(f"the descriptor's env_id {descriptor.env_id!r} cannot be run here: {reason}")
    try:
        env = preprocessing.wrap(protocol.make_protocol_env(descriptor.env_id), descriptor)
    except gymnasium.error.Error as exc:
        raise ArtifactError(f"env {descriptor.env_id!r} with the descriptor's preprocessing: {exc}") from None
    except (ValueError, TypeError, AssertionError) as exc:
        raise ArtifactError(
            f"the descriptor's preprocessing {descriptor.preprocessing.name!r} does not fit env "
            f"{descriptor.env_id!r} under the board's protocol: {exc}"
        ) from None
    try:
        observation_space, action_space = env.observation_space, env.action_space
    finally:
        env.close()
    key = descriptor.observation_key
    if isinstance(observation_space, gymnasium.spaces.Dict):
        if key is None or key not in observation_space.spaces:
            raise ArtifactError(
                f"env {descriptor.env_id!r} observes a dict with the keys {sorted(observation_space.spaces)}: "
                "name one as the descriptor's observation_key (or use the 'flatten' preprocessing)"
            )
        observation_space = observation_space.spaces[key]
    elif key is not None:
        raise ArtifactError(
            f"the descriptor names observation_key {key!r}, but env {descriptor.env_id!r} does not observe a dict"
        )
    if observation_space.shape is None:
        raise ArtifactError(
            f"env {descriptor.env_id!r} observes {observation_space}, which has no array shape: "
            "use the 'flatten' preprocessing"
        )
    return observation_space, action_space


def _value_info_shape(value: onnx.ValueInfoProto) -> tuple[int | str, ...]:
    shape = value.type.tensor_type.shape
    return tuple(d.dim_param or "?" if not d.HasField("dim_value") else d.dim_value for d in shape.dim)


def _pick(kind: str, available: list[str], wanted: str | None, field: str) -> str:
    if wanted is not None:
        if wanted not in available:
            raise ArtifactError(
                f"the descriptor's {field} {wanted!r} is not one of the model's {kind}s ({', '.join(available)})"
            )
        return wanted
    if not available:
        raise ArtifactError(f"the agent model has no {kind}")
    if kind == "input" and len(available) > 1:
        raise ArtifactError(
            f"the agent model has {len(available)} inputs ({', '.join(available)}): name the observation's "
            f"in the descriptor's {field}"
        )
    return available[0]


def _check_input(
    model: onnx.ModelProto, descriptor: AgentDescriptor, observation_space: gymnasium.Space[Any]
) -> tuple[str, tuple[int | str, ...], str]:
    initializers = {t.name for t in model.graph.initializer}
    inputs = {v.name: v for v in model.graph.input if v.name not in initializers}
    name = _pick("input", list(inputs), descriptor.input_name, "input_name")
    value = inputs[name]
    if not value.type.HasField("tensor_type"):
        raise ArtifactError(f"the model's input {name!r} is not a tensor")
    elem = value.type.tensor_type.elem_type
    if elem not in INPUT_TYPES:
        raise ArtifactError(
            f"the model's input {name!r} has element type {elem}; the board feeds "
            f"{', '.join(INPUT_TYPES.values())}"
        )
    shape = _value_info_shape(value)
    expected = tuple(observation_space.shape or ())
    body = shape[1:] if len(shape) == len(expected) + 1 else shape
    fits = len(body) == len(expected) and all(
        isinstance(d, str) or d == e for d, e in zip(body, expected)
    )
    if len(shape) == len(expected) + 1 and isinstance(shape[0], int) and shape[0] != 1:
        fits = False
    if not fits:
        raise ArtifactError(
            f"the model's input {name!r} has the shape {_shape_text(shape)}, but env {descriptor.env_id!r} with "
            f"the {descriptor.preprocessing.name!r} preprocessing gives observations of shape {list(expected)} "
            f"(the model may add a batch dimension first: {['batch', *expected]})"
        )
    return name, shape, INPUT_TYPES[elem]


def _check_output(
    model: onnx.ModelProto, descriptor: AgentDescriptor, action_space: gymnasium.Space[Any]
) -> tuple[str, tuple[int | str, ...]]:
    outputs = {v.name: v for v in model.graph.output}
    name = _pick("output", list(outputs), descriptor.output_name, "output_name")
    shape = _value_info_shape(outputs[name])
    elem = outputs[name].type.tensor_type.elem_type
    action = descriptor.action
    discrete = isinstance(action_space, gymnasium.spaces.Discrete)
    box = isinstance(action_space, gymnasium.spaces.Box)
    if action in ("argmax", "sample", "index") and not discrete:
        raise ArtifactError(
            f"action {action!r} picks a discrete action, but env {descriptor.env_id!r} acts in {action_space}: "
            "use 'clip' or 'rescale'"
        )
    if action in ("clip", "rescale") and not box:
        raise ArtifactError(
            f"action {action!r} is for continuous actions, but env {descriptor.env_id!r} acts in {action_space}: "
            "use 'argmax', 'sample' or 'index'"
        )
    if action in ("argmax", "sample"):
        n = int(action_space.n)  # type: ignore[attr-defined]
        last = shape[-1] if shape else None
        if last is None or (isinstance(last, int) and last != n) or len(shape) > 2:
            atari = "; the board plays Atari with the full action set of 18 actions (Machado et al. 2018)"
            raise ArtifactError(
                f"the model's output {name!r} has the shape {_shape_text(shape)}, but action {action!r} needs "
                f"one score per action of env {descriptor.env_id!r}: {n}"
                + (atari if n == 18 else "")
            )
    elif action == "index":
        if elem not in (6, 7, 1, 11) or math.prod(d if isinstance(d, int) else 1 for d in shape) != 1:
            raise ArtifactError(
                f"the model's output {name!r} (shape {_shape_text(shape)}) is not one action index per "
                "observation, as action 'index' needs"
            )
    else:
        expected = tuple(action_space.shape or ())
        body = shape[1:] if len(shape) == len(expected) + 1 else shape
        if len(body) != len(expected) or any(isinstance(d, int) and d != e for d, e in zip(body, expected)):
            raise ArtifactError(
                f"the model's output {name!r} has the shape {_shape_text(shape)}, but env {descriptor.env_id!r}'s "
                f"actions have the shape {list(expected)}"
            )
    return name, shape


def _shape_text(shape: tuple[int | str, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"
