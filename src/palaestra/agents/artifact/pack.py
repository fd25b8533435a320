"""``palaestra agent pack``: an agent artifact (``MODEL.onnx`` + ``MODEL.json``) from a trained policy.

* :func:`pack_sb3` -- a Stable-Baselines3 model zip (needs ``stable-baselines3`` and ``torch``): the
  policy's deterministic action as SB3's own ONNX recipe exports it (its ``export.rst``), with the
  action mapping that matches its output: ``index`` for PPO/A2C on discrete actions, ``argmax`` of
  DQN's Q-values, ``rescale`` for SAC/TD3's squashed actions, ``clip`` for PPO/A2C's Gaussian ones.
  SB3's policies normalise image observations themselves, so the model takes frames in 0..255.
* :func:`pack_torch` -- a whole ``torch.nn.Module`` saved with ``torch.save(module, path)`` (needs
  ``torch``), whose forward maps a batch of observations to the output the descriptor's action
  mapping reads (scores per action, or a continuous action).

Both export with a dynamic batch dimension and the observation shape of the env under the board's
protocol and the descriptor's preprocessing, write the model without external data, then run
:func:`~palaestra.agents.artifact.checks.check_artifact` on what they wrote, as the board will.
"""

from __future__ import annotations

import io
import os
from typing import Any

from palaestra.agents.artifact.checks import ArtifactInfo, check_artifact, env_spaces
from palaestra.agents.artifact.descriptor import AgentDescriptor, descriptor_path_for
from palaestra.errors import DependencyNotInstalled, Error

__all__ = ["OPSET", "PackError", "pack_module", "pack_sb3", "pack_torch"]

#: The ONNX opset the packers export with (SB3's recipe asks for 14 or later).
OPSET = 17
#: SB3's algorithms by the name ``--algo`` takes.
SB3_ALGORITHMS = ("a2c", "ddpg", "dqn", "ppo", "sac", "td3")


class PackError(Error):
    """A policy that cannot be packed: unknown algorithm, a file that is not a module, a failed export."""


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise DependencyNotInstalled(
            "`palaestra agent pack` exports with PyTorch, which is not installed: pip install torch "
            "(the CPU wheel is enough); or export the ONNX file yourself and write its descriptor by hand "
            "(docs/agents.md)"
        ) from None
    return torch


def pack_module(module: Any, descriptor: AgentDescriptor, out: str | os.PathLike[str]) -> ArtifactInfo:
    """Export the torch module ``module`` (observations -> the descriptor's output) to ``out`` and write
    its descriptor beside it; return the checks' findings."""
    torch = _torch()
    observation_space, _ = env_spaces(descriptor)
    shape = tuple(observation_space.shape or ())
    example = torch.zeros((1, *shape), dtype=torch.float32)
    module = module.eval()
    buffer = io.BytesIO()
    try:
        with torch.no_grad():
            torch.onnx.export(
                module,
                (example,),
                buffer,
                input_names=["observation"],
                output_names=["output"],
                dynamic_axes={"observation": {0: "batch"}, "output": {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,  # the TorchScript exporter: one self-contained graph, no onnxscript needed
            )
    except Exception as exc:
        raise PackError(f"torch.onnx.export failed for observations of shape {[1, *shape]}: {exc}") from exc
    path = os.fspath(out)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())
    descriptor = descriptor.model_copy(update={"input_name": None, "output_name": None})
    descriptor.write(descriptor_path_for(path))
    return check_artifact(path, descriptor)


def pack_torch(
    module_path: str | os.PathLike[str], descriptor: AgentDescriptor, out: str | os.PathLike[str]
) -> ArtifactInfo:
    """:func:`pack_module` of a module saved whole with ``torch.save`` (your own file: it is unpickled)."""
    torch = _torch()
    try:
        module = torch.load(os.fspath(module_path), map_location="cpu", weights_only=False)
    except Exception as exc:
        raise PackError(f"cannot load {os.fspath(module_path)!r} as a torch module: {exc}") from exc
    if not isinstance(module, torch.nn.Module):
        raise PackError(
            f"{os.fspath(module_path)!r} holds a {type(module).__name__}, not a torch.nn.Module: save the "
            "module itself (torch.save(module, path)), not its state_dict"
        )
    return pack_module(module, descriptor, out)


def pack_sb3(
    zip_path: str | os.PathLike[str], algorithm: str, env_id: str, out: str | os.PathLike[str],
    preprocessing: dict[str, Any] | None = None,
) -> ArtifactInfo:
    """Pack the SB3 model zip ``zip_path`` of ``algorithm`` (``ppo``, ``dqn``, ...) for ``env_id``."""
    torch = _torch()
    try:
        import stable_baselines3
    except ImportError:
        raise DependencyNotInstalled(
            "packing a Stable-Baselines3 model needs stable-baselines3, which is not installed: "
            "pip install stable-baselines3"
        ) from None
    name = algorithm.lower()
    if name not in SB3_ALGORITHMS:
        raise PackError(f"unknown SB3 algorithm {algorithm!r}: one of {', '.join(SB3_ALGORITHMS)}")
    model = getattr(stable_baselines3, name.upper()).load(os.fspath(zip_path), device="cpu")
    policy = model.policy
    discrete = hasattr(model.action_space, "n")

    module_base: Any = torch.nn.Module

    class Deterministic(module_base):
        """The action SB3's ``predict(deterministic=True)`` takes, before its own post-processing."""

        def __init__(self) -> None:
            super().__init__()
            self.policy = policy

        def forward(self, observation: Any) -> Any:
            if name == "dqn":
                return self.policy.q_net(observation)
            if name == "sac":
                return self.policy.actor(observation, deterministic=True)
            if name in ("td3", "ddpg"):
                return self.policy.actor(observation)
            actions, _, _ = self.policy(observation, deterministic=True)
            return actions

    if name == "dqn":
        action = "argmax"
    elif name in ("sac", "td3", "ddpg"):
        action = "rescale"
    else:
        action = "index" if discrete else "clip"
    descriptor = AgentDescriptor.from_document(
        {
            "env_id": env_id,
            "preprocessing": preprocessing or {"name": "none"},
            "action": action,
            "deterministic": True,
        }
    )
    return pack_module(Deterministic(), descriptor, out)
