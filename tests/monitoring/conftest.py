"""Fixtures of the monitoring tests."""

from __future__ import annotations

import pytest

from palaestra.monitoring import stepping


@pytest.fixture(params=["compiled step", "python step"])
def step_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test runs on both of the Monitor's steps: the C one and the Python one (stepping.py)."""
    if request.param == "python step":
        monkeypatch.setattr(stepping, "CompiledStepCounter", None)
    elif stepping.CompiledStepCounter is None:
        pytest.skip("the _stepcore extension is not built here (no C compiler)")
    return str(request.param)
