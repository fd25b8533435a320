"""An ONNX policy as an agent: observation in, action out, by the descriptor's mapping.

:class:`OnnxPolicy` runs the model with ONNX Runtime on the CPU with one thread (the evaluator's
budget is one core, and one thread makes the CPU-time limit a wall-clock one), loaded from bytes so
that nothing beside the model file is opened. It feeds each observation as a batch of one, cast to
the input's element type, and turns the chosen output into an action:

* ``argmax``: the index of the largest score; ``sample``: an index drawn from the softmax of the
  logits with the episode's random generator (:meth:`OnnxPolicy.seed`); ``index``: the output itself;
* ``clip``: the output clipped to the action space's bounds; ``rescale``: the output, in [-1, 1],
  scaled to the bounds.

With an action mask (a board game's legal moves: :mod:`palaestra.agents.artifact.board`), ``argmax``
and ``sample`` choose among the legal actions only.

An output with a NaN or an infinity, or of the wrong size, raises :class:`PolicyError`.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from palaestra.agents.artifact.checks import ArtifactInfo
from palaestra.agents.artifact.descriptor import AgentDescriptor
from palaestra.errors import Error

__all__ = ["OnnxPolicy", "PolicyError", "session_options"]


class PolicyError(Error):
    """The policy's output cannot be made an action (NaN, infinity, wrong size)."""


def session_options() -> Any:
    """ONNX Runtime's options for the evaluator: one thread, sequential, no profiling, no dumps."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only: warnings about unused initializers are noise here
    # the optimised graph is never written beside the model (nothing is written but the results)
    options.optimized_model_filepath = ""
    return options


class OnnxPolicy:
    """``act(observation) -> action`` for a checked model (see the module docstring)."""

    def __init__(
        self,
        model: bytes,
        descriptor: AgentDescriptor,
        info: ArtifactInfo,
        action_space: gymnasium.Space[Any],
    ) -> None:
        import onnxruntime

        self.session = onnxruntime.InferenceSession(
            model, sess_options=session_options(), providers=["CPUExecutionProvider"]
        )
        self.descriptor = descriptor
        self.input_name = info.input_name
        self.output_names = [info.output_name]
        self.dtype = np.dtype(info.input_type)
        self.batched = len(info.input_shape) == len(info.observation_shape) + 1
        self.action_space = action_space
        self.key = descriptor.observation_key
        self.mapping = descriptor.action
        self.rng = np.random.default_rng(0)
        if isinstance(action_space, gymnasium.spaces.Discrete):
            self.n = int(action_space.n)
            self.start = int(action_space.start)
        elif isinstance(action_space, gymnasium.spaces.Box):
            self.low = action_space.low
            self.high = action_space.high
            self.shape = action_space.shape

    def seed(self, seed: int) -> None:
        """Start the generator that ``sample`` draws from: one per episode, from the episode's seed."""
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Any, mask: np.ndarray[Any, Any] | None = None) -> Any:
        """The action for ``observation``; with ``mask`` (one bool per action), a legal one."""
        if self.key is not None:
            observation = observation[self.key]
        x = np.asarray(observation, dtype=self.dtype)
        if self.batched:
            x = x[np.newaxis]
        output = np.asarray(self.session.run(self.output_names, {self.input_name: x})[0])
        return self._action(output, mask)

    def _action(self, output: np.ndarray[Any, Any], mask: np.ndarray[Any, Any] | None = None) -> Any:
        if output.dtype.kind == "f" and not np.isfinite(output).all():
            raise PolicyError(f"the model's output {self.output_names[0]!r} holds NaN or infinity: {output.ravel()[:8]}")
        mapping = self.mapping
        if mapping == "argmax" or mapping == "sample":
            scores = output.reshape(-1)
            if scores.size != self.n:
                raise PolicyError(f"the model gave {scores.size} scores for {self.n} actions")
            logits = scores.astype(np.float64)
            if mask is not None:
                if not mask.any():
                    raise PolicyError("no action is legal here: there is nothing to choose from")
                logits = np.where(mask, logits, -np.inf)
            if mapping == "argmax":
                return self.start + int(logits.argmax())
            probabilities = np.exp(logits - logits.max())
            probabilities /= probabilities.sum()
            return self.start + int(self.rng.choice(self.n, p=probabilities))
        if mapping == "index":
            if output.size != 1:
                raise PolicyError(f"the model gave {output.size} values for one action index")
            index = int(output.reshape(-1)[0])
            if not self.start <= index < self.start + self.n:
                raise PolicyError(f"the model chose action {index}, outside {self.action_space}")
            return index
        if output.size != self.low.size:
            raise PolicyError(f"the model gave {output.size} values for an action of shape {list(self.shape)}")
        action = output.reshape(self.shape).astype(self.low.dtype, copy=False)
        if mapping == "rescale":
            action = self.low + 0.5 * (np.clip(action, -1.0, 1.0) + 1.0) * (self.high - self.low)
        return np.clip(action, self.low, self.high)
