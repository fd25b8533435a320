"""Rendering on a machine with no display: MuJoCo's off-screen backend.

* :func:`choose_mujoco_backend` — run on ``import palaestra``: on Linux with no display (neither
  ``DISPLAY`` nor ``WAYLAND_DISPLAY``) and no ``MUJOCO_GL`` of the user's, it sets ``MUJOCO_GL=egl``.
* :func:`announce_mujoco_backend` — says so once per process, when a MuJoCo env is first recorded.

Without it, Gymnasium's MuJoCo envs try GLFW first, which needs a display: the first ``render()``
raises and the second aborts the process inside MuJoCo (rc 134). EGL renders without one, on a GPU
where the driver offers it and otherwise with Mesa's software renderer (llvmpipe; the set-up installs
``libegl1 libopengl0 libegl-mesa0 libgl1-mesa-dri``). OSMesa, the other off-screen backend, needs
``libosmesa6`` and is no faster in software. Gymnasium reads ``MUJOCO_GL`` when an env first renders
and MuJoCo when it is imported, so setting it on ``import palaestra`` covers both.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

__all__ = ["MUJOCO_BACKEND", "announce_mujoco_backend", "choose_mujoco_backend"]

logger = logging.getLogger("palaestra")

#: The backend palaestra chooses for MuJoCo when there is no display.
MUJOCO_BACKEND = "egl"

_state = {"chosen": False, "announced": False}


def choose_mujoco_backend() -> bool:
    """Set ``MUJOCO_GL=egl`` on a Linux machine without a display, unless ``MUJOCO_GL`` is set (an empty
    value counts as unset: it means MuJoCo's default, GLFW); returns whether it did. Cheap (no import): it runs on every ``import palaestra``."""
    if (
        not sys.platform.startswith("linux")
        or os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("MUJOCO_GL")
    ):
        return False
    os.environ["MUJOCO_GL"] = MUJOCO_BACKEND
    _state["chosen"] = True
    return True


def announce_mujoco_backend(env: Any) -> None:
    """Log once per process, for a MuJoCo env, that it renders off-screen because palaestra chose so."""
    if not _state["chosen"] or _state["announced"] or not hasattr(env.unwrapped, "mujoco_renderer"):
        return
    if os.environ.get("MUJOCO_GL") != MUJOCO_BACKEND:  # the user changed it since
        return
    _state["announced"] = True
    logger.info(
        "No display here, so MuJoCo renders off-screen through EGL (palaestra set MUJOCO_GL=egl; set "
        "MUJOCO_GL yourself to choose another backend, e.g. osmesa)."
    )
