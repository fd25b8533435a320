"""``Pendulum-v0``: Gymnasium's Pendulum with 2017's integration step.

2017 moved the angle with the new speed *before* clipping it to +-8 rad/s; ``Pendulum-v1`` clips
first. The two agree until the pendulum reaches full speed (a swinging policy does within a few
dozen steps), then drift apart. Everything else (spaces, reward, reset, rendering, seeding) is
Gymnasium's.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import numpy as np
from gymnasium.envs.classic_control import pendulum

__all__ = ["PendulumEnv"]


class PendulumEnv(pendulum.PendulumEnv):
    """Swing a pendulum up and keep it there, with 2017's dynamics (``Pendulum-v0``)."""

    def step(self, u: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        th, thdot = self.state
        u = np.clip(u, -self.max_torque, self.max_torque)[0]
        self.last_u = u  # for rendering
        costs = pendulum.angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)
        new_thdot = thdot + (-3 * self.g / (2 * self.l) * np.sin(th + np.pi) + 3.0 / (self.m * self.l**2) * u) * self.dt
        new_th = th + new_thdot * self.dt  # 2017: the unclipped speed moves the angle
        self.state = np.array([new_th, np.clip(new_thdot, -self.max_speed, self.max_speed)])
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), -costs, False, False, {}
