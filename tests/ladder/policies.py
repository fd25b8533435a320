"""Python policies for the ladder tests (``python:tests.ladder.policies:NAME``)."""

from __future__ import annotations

import time

import numpy as np


def first_legal(observation: np.ndarray, action_mask: np.ndarray) -> int:
    """The first legal point (never pass or resign while a point is legal)."""
    legal = np.flatnonzero(action_mask)
    return int(legal[0])


def sleeps(observation: np.ndarray, action_mask: np.ndarray) -> int:
    """Hangs (for longer than any test's time per move)."""
    time.sleep(5)
    return int(np.flatnonzero(action_mask)[0])


def raises(observation: np.ndarray, action_mask: np.ndarray) -> int:
    """A policy with a bug."""
    raise ZeroDivisionError("the policy divided by zero")


def occupied(observation: np.ndarray, action_mask: np.ndarray) -> int:
    """Plays the first cell, taken or not."""
    return 0
