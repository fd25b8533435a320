"""A corpus of hostile agent artifacts, built with the ``onnx`` package: each one a model file (bytes) and
a descriptor, and how the board must end it: refused by ``check_artifact`` (:data:`REFUSED`) or stopped
in the sandbox by ``run_sandboxed`` (:data:`KILLED`), with a reason that contains :attr:`Hostile.reason`.

The refused ones cover malformed files and graphs, external data (the path traversals of the ONNX
CVEs: relative, absolute, sparse, in a ``Constant``, in a subgraph), tensors that declare huge or
inconsistent shapes, custom operators and operator sets, local functions, deep and nested graphs,
random operators in a deterministic model, and inputs and outputs that do not fit the env. The
killed ones pass every static check and misbehave only when run: a ``Loop`` of 2**62 turns, tensors
allocated without end (``ConstantOfShape``, ``Expand``, ``Tile`` to shapes computed at run time),
NaN and infinite outputs, an action index outside the action space.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from palaestra.agents.artifact.descriptor import AgentDescriptor

OPSET = 17
CARTPOLE = AgentDescriptor(env_id="CartPole-v1", action="argmax", deterministic=True)


@dataclass(frozen=True)
class Hostile:
    name: str
    build: Callable[[], bytes]
    #: a part of the reason the board must give
    reason: str
    descriptor: AgentDescriptor = CARTPOLE


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], initializers: Sequence[Any] = (), **kw: Any) -> Any:
    graph = helper.make_graph(nodes, "hostile", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=kw.pop("opsets", [helper.make_opsetid("", OPSET)]), **kw)
    model.ir_version = 8
    return model


def _obs(name: str = "obs", shape: list[Any] | None = None, elem: int = TensorProto.FLOAT) -> Any:
    return helper.make_tensor_value_info(name, elem, shape if shape is not None else ["batch", 4])


def _logits(name: str = "logits", n: int = 2) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", n])


def _weights(n: int = 2, name: str = "w") -> Any:
    return numpy_helper.from_array(np.full((4, n), 0.1, dtype=np.float32), name)


def good_model() -> Any:
    """A valid CartPole policy: logits = obs @ w."""
    return _model([helper.make_node("MatMul", ["obs", "w"], ["logits"])], [_obs()], [_logits()], [_weights()])


def _bytes(model: Any) -> bytes:
    return bytes(model.SerializeToString())


def _with_external(location: str, *, data_location_only: bool = False) -> bytes:
    model = good_model()
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    if not data_location_only:
        for key, value in (("location", location), ("offset", "0"), ("length", "32")):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    return _bytes(model)


def _sparse_external() -> bytes:
    # the onnxruntime 1.26 PoC's shape: a sparse initializer whose values live in an external file
    model = good_model()
    values = numpy_helper.from_array(np.ones(2, dtype=np.float32), "sparse_w")
    values.ClearField("raw_data")
    values.data_location = TensorProto.EXTERNAL
    entry = values.external_data.add()
    entry.key, entry.value = "location", "../../../../proc/self/environ"
    indices = numpy_helper.from_array(np.array([0, 1], dtype=np.int64), "")
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [4, 2]))
    return _bytes(model)


def _constant_external() -> bytes:
    value = numpy_helper.from_array(np.full((4, 2), 0.1, dtype=np.float32), "c")
    value.ClearField("raw_data")
    value.data_location = TensorProto.EXTERNAL
    entry = value.external_data.add()
    entry.key, entry.value = "location", "/etc/shadow"
    nodes = [helper.make_node("Constant", [], ["w"], value=value), helper.make_node("MatMul", ["obs", "w"], ["logits"])]
    return _bytes(_model(nodes, [_obs()], [_logits()]))


def _if_graph(then_initializers: list[Any], depth: int = 1) -> Any:
    """logits = If(cond, then: obs @ w, else: obs @ w), nested ``depth`` deep."""

    def branch(level: int, name: str) -> Any:
        if level == 0:
            node = helper.make_node("MatMul", ["obs", "w"], [f"out_{name}"])
            return helper.make_graph([node], name, [], [_logits(f"out_{name}")], list(then_initializers))
        inner = helper.make_node(
            "If", ["cond"], [f"out_{name}"], then_branch=branch(level - 1, f"{name}t"), else_branch=branch(level - 1, f"{name}e")
        )
        return helper.make_graph([inner], name, [], [_logits(f"out_{name}")])

    cond = numpy_helper.from_array(np.array(True), "cond")
    node = helper.make_node("If", ["cond"], ["logits"], then_branch=branch(depth - 1, "t"), else_branch=branch(depth - 1, "e"))
    return _model([node], [_obs()], [_logits()], [cond, _weights()])


def _subgraph_external() -> bytes:
    weights = _weights(name="w")
    weights.ClearField("raw_data")
    weights.data_location = TensorProto.EXTERNAL
    entry = weights.external_data.add()
    entry.key, entry.value = "location", "../../etc/passwd"
    return _bytes(_if_graph([weights]))


def _huge_declared() -> bytes:
    model = good_model()
    huge = model.graph.initializer.add()  # a shape of 2**40 floats (4 TiB), and no data at all
    huge.name, huge.data_type = "huge", TensorProto.FLOAT
    huge.dims.extend([1 << 20, 1 << 20])
    return _bytes(model)


def _inconsistent_data() -> bytes:
    model = good_model()
    model.graph.initializer[0].dims[:] = [4, 2000]
    return _bytes(model)


def _negative_dims() -> bytes:
    model = good_model()
    model.graph.initializer[0].dims[:] = [-4, -2]
    return _bytes(model)


def _custom_op(domain: str, op: str) -> bytes:
    nodes = [helper.make_node(op, ["obs", "w"], ["logits"], domain=domain)]
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(domain, 1)]
    return _bytes(_model(nodes, [_obs()], [_logits()], [_weights()], opsets=opsets))


def _custom_opset_only() -> bytes:
    model = good_model()
    model.opset_import.append(helper.make_opsetid("com.evil.loader", 1))
    return _bytes(model)


def _local_function() -> bytes:
    function = helper.make_function(
        "local", "MyMatMul", ["a", "b"], ["c"], [helper.make_node("MatMul", ["a", "b"], ["c"])],
        [helper.make_opsetid("", OPSET)],
    )
    nodes = [helper.make_node("MyMatMul", ["obs", "w"], ["logits"], domain="local")]
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)]
    return _bytes(_model(nodes, [_obs()], [_logits()], [_weights()], opsets=opsets, functions=[function]))


def _unknown_op() -> bytes:
    return _bytes(_model([helper.make_node("NotAnOperator", ["obs", "w"], ["logits"])], [_obs()], [_logits()], [_weights()]))


def _dangling_input() -> bytes:
    return _bytes(_model([helper.make_node("MatMul", ["obs", "nowhere"], ["logits"])], [_obs()], [_logits()]))


def _cycle() -> bytes:
    nodes = [
        helper.make_node("Add", ["obs", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["b"]),
        helper.make_node("MatMul", ["b", "w"], ["logits"]),
    ]
    return _bytes(_model(nodes, [_obs()], [_logits()], [_weights()]))


def _opset(version: int) -> bytes:
    model = good_model()
    model.opset_import[0].version = version
    return _bytes(model)


def _long_chain(length: int = 10_001) -> bytes:
    nodes = [helper.make_node("Identity", ["obs" if i == 0 else f"n{i - 1}"], [f"n{i}"]) for i in range(length)]
    nodes.append(helper.make_node("MatMul", [f"n{length - 1}", "w"], ["logits"]))
    return _bytes(_model(nodes, [_obs()], [_logits()], [_weights()]))


def _wide_input() -> bytes:
    w = numpy_helper.from_array(np.zeros((5, 2), dtype=np.float32), "w")
    return _bytes(_model([helper.make_node("MatMul", ["obs", "w"], ["logits"])], [_obs(shape=["batch", 5])], [_logits()], [w]))


def _deep_input() -> bytes:
    nodes = [helper.make_node("Flatten", ["obs"], ["flat"], axis=1), helper.make_node("MatMul", ["flat", "w"], ["logits"])]
    return _bytes(_model(nodes, [_obs(shape=["batch", 2, 2])], [_logits()], [_weights()]))


def _batch_of_eight() -> bytes:
    model = good_model()
    model.graph.input[0].CopyFrom(_obs(shape=[8, 4]))
    return _bytes(model)


def _two_inputs() -> bytes:
    nodes = [helper.make_node("Add", ["obs", "other"], ["sum"]), helper.make_node("MatMul", ["sum", "w"], ["logits"])]
    return _bytes(_model(nodes, [_obs(), _obs("other")], [_logits()], [_weights()]))


def _string_input() -> bytes:
    nodes = [helper.make_node("Identity", ["obs"], ["logits"])]
    return _bytes(
        _model(nodes, [_obs(elem=TensorProto.STRING)], [helper.make_tensor_value_info("logits", TensorProto.STRING, ["batch", 4])])
    )


def _three_logits() -> bytes:
    return _bytes(_model([helper.make_node("MatMul", ["obs", "w"], ["logits"])], [_obs()], [_logits(n=3)], [_weights(3)]))


def _random_op() -> bytes:
    nodes = [
        helper.make_node("RandomUniformLike", ["obs"], ["noise"]),
        helper.make_node("Add", ["obs", "noise"], ["noisy"]),
        helper.make_node("MatMul", ["noisy", "w"], ["logits"]),
    ]
    return _bytes(_model(nodes, [_obs()], [_logits()], [_weights()]))


def _truncated() -> bytes:
    data = _bytes(good_model())
    return data[: len(data) // 2]


def _no_graph() -> bytes:
    model = onnx.ModelProto()
    model.ir_version = 8
    model.opset_import.append(helper.make_opsetid("", OPSET))
    return _bytes(model)


def _minimal_atari() -> bytes:
    nodes = [
        helper.make_node("Flatten", ["x"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "w"], ["logits"]),
    ]
    w = numpy_helper.from_array(np.zeros((4 * 84 * 84, 4), dtype=np.float32), "w")
    return _bytes(_model(nodes, [_obs("x", ["batch", 4, 84, 84])], [_logits(n=4)], [w]))


# ---- models that pass the static checks and misbehave when run --------------------------------------


def _loop_forever() -> bytes:
    """logits = obs @ w, after a Loop of 2**62 turns that adds one to a counter."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["count_in", "one"], ["count_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("count_in", TensorProto.FLOAT, [1]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("count_out", TensorProto.FLOAT, [1]),
        ],
        [numpy_helper.from_array(np.ones(1, dtype=np.float32), "one")],
    )
    nodes = [
        helper.make_node("ReduceSum", ["obs"], ["total"], keepdims=0),
        helper.make_node("Reshape", ["total", "shape1"], ["start"]),
        helper.make_node("Loop", ["trips", "cond", "start"], ["count"], body=body),
        helper.make_node("Mul", ["count", "zero"], ["nothing"]),
        helper.make_node("MatMul", ["obs", "w"], ["raw"]),
        helper.make_node("Add", ["raw", "nothing"], ["logits"]),
    ]
    initializers = [
        _weights(),
        numpy_helper.from_array(np.array(2**62, dtype=np.int64), "trips"),
        numpy_helper.from_array(np.array(True), "cond"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "shape1"),
        numpy_helper.from_array(np.zeros(1, dtype=np.float32), "zero"),
    ]
    return _bytes(_model(nodes, [_obs()], [_logits()], initializers))


def _runtime_shape(op: str, side: int = 1 << 17) -> bytes:
    """An allocation of ``side`` x ``side`` floats (64 GiB by default) whose shape is computed from the
    observation at run time (so that no constant folding sees it), then reduced away."""
    nodes = [
        # shape = [2**17, 2**17] + 0 * obs[0, 0] cast to int64: known only when it runs
        helper.make_node("ReduceSum", ["obs"], ["total"], keepdims=0),
        helper.make_node("Mul", ["total", "zero"], ["nought"]),
        helper.make_node("Cast", ["nought"], ["nought_int"], to=TensorProto.INT64),
        helper.make_node("Add", ["big_shape", "nought_int"], ["shape"]),
    ]
    if op == "ConstantOfShape":
        nodes.append(helper.make_node("ConstantOfShape", ["shape"], ["huge"], value=numpy_helper.from_array(np.ones(1, dtype=np.float32), "v")))
    elif op == "Expand":
        nodes.append(helper.make_node("Expand", ["one"], ["huge"]))
        nodes[-1].input.append("shape")
    else:  # Tile
        nodes.append(helper.make_node("Tile", ["one_by_one", "shape"], ["huge"]))
    nodes += [
        helper.make_node("ReduceSum", ["huge"], ["sum"], keepdims=0),
        helper.make_node("Mul", ["sum", "zero"], ["nothing"]),
        helper.make_node("MatMul", ["obs", "w"], ["raw"]),
        helper.make_node("Add", ["raw", "nothing"], ["logits"]),
    ]
    initializers = [
        _weights(),
        numpy_helper.from_array(np.zeros((), dtype=np.float32), "zero"),
        numpy_helper.from_array(np.array([side, side], dtype=np.int64), "big_shape"),
        numpy_helper.from_array(np.ones(1, dtype=np.float32), "one"),
        numpy_helper.from_array(np.ones((1, 1), dtype=np.float32), "one_by_one"),
    ]
    return _bytes(_model(nodes, [_obs()], [_logits()], initializers))


def _output_times(value: float) -> bytes:
    """logits = obs @ w * value (NaN: 0 * inf; inf: a huge factor)."""
    nodes = [helper.make_node("MatMul", ["obs", "w"], ["raw"]), helper.make_node("Mul", ["raw", "factor"], ["logits"])]
    factor = numpy_helper.from_array(np.array(value, dtype=np.float32), "factor")
    return _bytes(_model(nodes, [_obs()], [_logits()], [_weights(), factor]))


def _nan_from_division() -> bytes:
    nodes = [
        helper.make_node("MatMul", ["obs", "w"], ["raw"]),
        helper.make_node("Mul", ["raw", "zero"], ["zeros"]),
        helper.make_node("Div", ["zeros", "zeros"], ["logits"]),
    ]
    zero = numpy_helper.from_array(np.zeros((), dtype=np.float32), "zero")
    return _bytes(_model(nodes, [_obs()], [_logits()], [_weights(), zero]))


def _index_out_of_range() -> bytes:
    nodes = [
        helper.make_node("Shape", ["obs"], ["shape"], start=0, end=1),
        helper.make_node("ConstantOfShape", ["shape"], ["actions"], value=numpy_helper.from_array(np.array([7], dtype=np.int64), "v")),
    ]
    return _bytes(_model(nodes, [_obs()], [helper.make_tensor_value_info("actions", TensorProto.INT64, ["batch"])]))


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field, encoded by hand (onnx's own classes refuse to build what
    is nested past protobuf's depth limit, which is the point)."""

    def varint(value: int) -> bytes:
        out = bytearray()
        while True:
            byte, value = value & 0x7F, value >> 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                return bytes(out)

    return varint(number << 3 | 2) + varint(len(payload)) + payload


def _nested_chain(depth: int) -> bytes:
    """``If`` inside ``If`` ... ``depth`` deep: a parser's recursion test."""
    leaf = helper.make_graph([helper.make_node("MatMul", ["obs", "w"], ["logits"])], "leaf", [], [_logits()])
    graph = leaf.SerializeToString()
    logits = _logits().SerializeToString()
    for _ in range(depth):
        attribute = _field(1, b"then_branch") + _field(6, graph) + bytes([160, 1, 5])  # type (20) = GRAPH (5)
        node = _field(1, b"cond") + _field(2, b"logits") + _field(4, b"If") + _field(5, attribute)
        graph = _field(1, node) + _field(2, b"level") + _field(12, logits)
    opset = helper.make_opsetid("", OPSET).SerializeToString()
    return bytes([8, 8]) + _field(7, graph) + _field(8, opset)  # ir_version (1) = 8, graph (7), opset_import (8)



INDEX = AgentDescriptor(env_id="CartPole-v1", action="index", deterministic=True)

REFUSED = [
    Hostile("empty_file", lambda: b"", "empty file"),
    Hostile("random_bytes", lambda: bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)), "not an ONNX model"),
    Hostile("truncated_model", _truncated, "not an ONNX model"),
    Hostile("no_graph", _no_graph, "no graph"),
    Hostile("external_data_relative_traversal", lambda: _with_external("../../etc/passwd"), "external file '../../etc/passwd'"),
    Hostile("external_data_absolute_path", lambda: _with_external("/etc/passwd"), "external file '/etc/passwd'"),
    Hostile("external_data_location_flag_only", lambda: _with_external("", data_location_only=True), "external file"),
    Hostile("sparse_initializer_external_data", _sparse_external, "external file '../../../../proc/self/environ'"),
    Hostile("constant_attribute_external_data", _constant_external, "external file '/etc/shadow'"),
    Hostile("subgraph_initializer_external_data", _subgraph_external, "external file '../../etc/passwd'"),
    Hostile("huge_declared_tensor", _huge_declared, "elements a tensor"),
    Hostile("tensor_data_shorter_than_its_shape", _inconsistent_data, "the model is corrupt"),
    Hostile("negative_dimensions", _negative_dims, "declares the shape [-4, -2]"),
    Hostile("custom_domain_operator", lambda: _custom_op("com.evil", "ReadFile"), "no custom operators"),
    Hostile("onnxruntime_contrib_operator", lambda: _custom_op("com.microsoft", "FusedMatMul"), "no custom operators"),
    Hostile("custom_operator_set_import", _custom_opset_only, "com.evil.loader"),
    Hostile("model_local_function", _local_function, "local function"),
    Hostile("unknown_standard_operator", _unknown_op, "ONNX checker refuses"),
    Hostile("dangling_node_input", _dangling_input, "ONNX checker refuses"),
    Hostile("cyclic_graph", _cycle, "ONNX checker refuses"),
    Hostile("opset_from_the_future", lambda: _opset(999), "opset 999"),
    Hostile("opset_too_old", lambda: _opset(1), "opset 1"),
    Hostile("subgraphs_nested_five_hundred_deep", lambda: _nested_chain(500), "not an ONNX model"),
    Hostile("ten_thousand_and_one_nodes", _long_chain, "nodes; the limit is 10,000"),
    Hostile("subgraphs_nested_six_deep", lambda: _bytes(_if_graph([], depth=6)), "nests subgraphs"),
    Hostile("input_of_the_wrong_width", _wide_input, "gives observations of shape [4]"),
    Hostile("input_of_the_wrong_rank", _deep_input, "gives observations of shape [4]"),
    Hostile("batch_of_eight_only", _batch_of_eight, "gives observations of shape [4]"),
    Hostile("two_inputs_and_no_input_name", _two_inputs, "2 inputs"),
    Hostile("string_input", _string_input, "element type 8"),
    Hostile("three_scores_for_two_actions", _three_logits, "one score per action"),
    Hostile(
        "continuous_mapping_on_discrete_actions",
        lambda: _bytes(good_model()),
        "is for continuous actions",
        AgentDescriptor(env_id="CartPole-v1", action="clip", deterministic=True),
    ),
    Hostile("random_operator_in_a_deterministic_model", _random_op, "random operator 'RandomUniformLike'"),
    Hostile(
        "input_name_not_in_the_model",
        lambda: _bytes(good_model()),
        "is not one of the model's inputs",
        AgentDescriptor(env_id="CartPole-v1", action="argmax", deterministic=True, input_name="observation"),
    ),
    Hostile(
        "env_id_naming_a_module_to_import",
        lambda: _bytes(good_model()),
        "the descriptor's env_id 'os:Evil-v0' cannot be run here: not registered",
        AgentDescriptor(env_id="os:Evil-v0", action="argmax", deterministic=True),
    ),
    Hostile(
        "atari_minimal_action_set",
        _minimal_atari,
        "full action set of 18 actions",
        AgentDescriptor.from_document(
            {"env_id": "ALE/Breakout-v5", "action": "argmax", "deterministic": True, "preprocessing": {"name": "atari", "frame_skip": 1}}
        ),
    ),
]

KILLED = [
    Hostile("loop_of_two_to_the_62_turns", _loop_forever, "CPU-time limit"),
    Hostile("constant_of_shape_64_gib_at_run_time", lambda: _runtime_shape("ConstantOfShape"), "memory limit"),
    Hostile("expand_to_64_gib_at_run_time", lambda: _runtime_shape("Expand"), "memory limit"),
    # ONNX Runtime refuses a Tile over 4 GiB itself; 30,000 squared floats (3.4 GiB) it tries
    Hostile("tile_to_3_gib_at_run_time", lambda: _runtime_shape("Tile", 30_000), "memory limit"),
    Hostile("nan_output_from_zero_over_zero", _nan_from_division, "holds NaN"),
    Hostile("infinite_output", lambda: _output_times(float("inf")), "holds NaN or infinity"),
    Hostile("action_index_outside_the_action_space", _index_out_of_range, "outside Discrete(2)", INDEX),
]
