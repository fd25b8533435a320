"""Example agent models, built with ``onnx.helper`` (no torch needed): for the docs, the tests and the bench.

* :func:`sb3_cartpole_model` -- an MLP policy for CartPole laid out as Stable-Baselines3 exports one
  (its ``export.rst``: ``OnnxableSB3Policy`` returning ``policy(observation, deterministic=True)``):
  input ``input`` ``[batch, 4]`` float32, outputs ``actions`` (int64 ``[batch]``), ``values``
  (``[batch, 1]``) and ``log_prob`` (``[batch]``), two tanh layers of 64. Its weights make it balance
  the pole (a hand-set direction, ``theta + theta_dot``, plus small random ones), so that its
  evaluation means something.
* :func:`cleanrl_atari_model` -- CleanRL's Atari network (Mnih et al. 2015's "Nature CNN" as in
  ``ppo_atari.py``/``dqn_atari.py``): input ``x`` ``[batch, 4, 84, 84]`` float32 frames in 0..255,
  divided by 255 inside, three convolutions, a 512 layer and one logit per action; random weights.
* :func:`go_model` -- a Go (or Hex) policy: input ``planes`` ``[batch, 3, N, N]`` (the env's
  observation: black, white, empty), one hidden layer of 64 and one logit per env action (the N*N
  points, then pass and resign in Go); seeded random weights, with pass and resign scored low so that
  it places stones until little else is legal (its games are long enough to count for the ratings).

Each returns the model's bytes; :func:`write_agent` writes a model and its descriptor side by side.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from palaestra.agents.artifact.descriptor import AgentDescriptor

__all__ = ["cleanrl_atari_model", "go_model", "sb3_cartpole_model", "write_agent"]

OPSET = 17


def _tensor(name: str, array: np.ndarray[Any, Any]) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name)


def _model(graph: Any) -> bytes:
    import onnx
    from onnx import helper

    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="palaestra.examples"
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return bytes(model.SerializeToString())


def sb3_cartpole_model(seed: int = 0) -> bytes:
    """CartPole's SB3-style MLP policy (see the module docstring)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, 0.01, (4, 64))
    w1[:, 0] = [0.0, 0.0, 10.0, 2.0]  # unit 0 reads theta + theta_dot/5: the pole's lean
    w2 = rng.normal(0, 0.01, (64, 64))
    w2[0, 0] = 3.0
    wa = rng.normal(0, 0.01, (64, 2))
    wa[0] = [-5.0, 5.0]  # push towards the lean
    wv = rng.normal(0, 0.1, (64, 1))
    nodes = [
        helper.make_node("Gemm", ["input", "w1", "b1"], ["h1_in"]),
        helper.make_node("Tanh", ["h1_in"], ["h1"]),
        helper.make_node("Gemm", ["h1", "w2", "b2"], ["h2_in"]),
        helper.make_node("Tanh", ["h2_in"], ["h2"]),
        helper.make_node("Gemm", ["h2", "wa", "ba"], ["logits"]),
        helper.make_node("ArgMax", ["logits"], ["actions"], axis=1, keepdims=0),
        helper.make_node("Gemm", ["h2", "wv", "bv"], ["values"]),
        helper.make_node("LogSoftmax", ["logits"], ["log_probs"], axis=1),
        helper.make_node("ReduceMax", ["log_probs"], ["log_prob"], axes=[1], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "sb3_cartpole_policy",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
        [
            helper.make_tensor_value_info("actions", TensorProto.INT64, ["batch"]),
            helper.make_tensor_value_info("values", TensorProto.FLOAT, ["batch", 1]),
            helper.make_tensor_value_info("log_prob", TensorProto.FLOAT, ["batch"]),
        ],
        [
            _tensor("w1", w1),
            _tensor("b1", np.zeros(64)),
            _tensor("w2", w2),
            _tensor("b2", np.zeros(64)),
            _tensor("wa", wa),
            _tensor("ba", np.zeros(2)),
            _tensor("wv", wv),
            _tensor("bv", np.zeros(1)),
        ],
    )
    return _model(graph)


def cleanrl_atari_model(actions: int = 18, seed: int = 0, hidden: int = 512) -> bytes:
    """CleanRL's Atari CNN with random weights (see the module docstring)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)

    def init(shape: tuple[int, ...], fan_in: int) -> np.ndarray[Any, Any]:
        return rng.normal(0, np.sqrt(2.0 / fan_in), shape)

    nodes = [
        helper.make_node("Div", ["x", "scale"], ["x_scaled"]),
        helper.make_node("Conv", ["x_scaled", "c1w", "c1b"], ["c1"], kernel_shape=[8, 8], strides=[4, 4]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "c2w", "c2b"], ["c2"], kernel_shape=[4, 4], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "c3w", "c3b"], ["c3"], kernel_shape=[3, 3], strides=[1, 1]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("Flatten", ["r3"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "fw", "fb"], ["f"]),
        helper.make_node("Relu", ["f"], ["hidden"]),
        helper.make_node("Gemm", ["hidden", "aw", "ab"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cleanrl_atari_agent",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 84, 84])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", actions])],
        [
            _tensor("scale", np.array(255.0)),
            _tensor("c1w", init((32, 4, 8, 8), 4 * 64)),
            _tensor("c1b", np.zeros(32)),
            _tensor("c2w", init((64, 32, 4, 4), 32 * 16)),
            _tensor("c2b", np.zeros(64)),
            _tensor("c3w", init((64, 64, 3, 3), 64 * 9)),
            _tensor("c3b", np.zeros(64)),
            _tensor("fw", init((3136, hidden), 3136)),
            _tensor("fb", np.zeros(hidden)),
            _tensor("aw", init((hidden, actions), hidden) * 0.01),
            _tensor("ab", np.zeros(actions)),
        ],
    )
    return _model(graph)


def go_model(board_size: int = 9, actions: int | None = None, seed: int = 0, hidden: int = 64) -> bytes:
    """A small random-weight Go policy (see the module docstring); ``actions`` defaults to Go's
    ``N*N + 2`` (pass, resign): give another count for Hex (``N*N + 1``) or for a model that does not fit."""
    from onnx import TensorProto, helper

    points = board_size * board_size
    n = points + 2 if actions is None else actions
    rng = np.random.default_rng(seed)
    bias = np.zeros(n)
    bias[points:] = -10.0  # pass and resign last: it plays stones while it can
    bias[points + 1 :] = -20.0  # and passes rather than resigns
    nodes = [
        helper.make_node("Flatten", ["planes"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "w1", "b1"], ["h_in"]),
        helper.make_node("Tanh", ["h_in"], ["h"]),
        helper.make_node("Gemm", ["h", "w2", "b2"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "go_policy",
        [helper.make_tensor_value_info("planes", TensorProto.FLOAT, ["batch", 3, board_size, board_size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", n])],
        [
            _tensor("w1", rng.normal(0, 0.3, (3 * points, hidden))),
            _tensor("b1", np.zeros(hidden)),
            _tensor("w2", rng.normal(0, 0.3, (hidden, n))),
            _tensor("b2", bias),
        ],
    )
    return _model(graph)


def write_agent(model: bytes, descriptor: AgentDescriptor, path: str | os.PathLike[str]) -> tuple[str, str]:
    """Write ``model`` to ``path`` (``.onnx``) and its descriptor beside it (``.json``); return both paths."""
    from palaestra.agents.artifact.descriptor import descriptor_path_for

    model_path = os.fspath(path)
    with open(model_path, "wb") as f:
        f.write(model)
    descriptor_path = descriptor_path_for(model_path)
    descriptor.write(descriptor_path)
    return model_path, descriptor_path
