"""palaestra: the 2017 OpenAI Gym system (Monitor, video, upload, scoreboard, benchmarks, board games)
rebuilt on the Gymnasium API.

Importing palaestra registers its environments (Go, Hex) in Gymnasium's registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import palaestra.envs  # noqa: F401  (registers palaestra's environments with Gymnasium)
from palaestra._version import __version__
from palaestra.monitoring import Monitor, VectorMonitor, load_results

if TYPE_CHECKING:
    from palaestra.benchmarks import benchmark_spec
    from palaestra.scoreboard.client import upload


def __getattr__(name: str) -> Any:
    # The upload client and the benchmark registry are imported on first use, so that
    # ``import palaestra`` stays cheap for code that only records.
    if name == "upload":
        from palaestra.scoreboard.client import upload

        return upload
    if name == "benchmark_spec":
        from palaestra.benchmarks import benchmark_spec

        return benchmark_spec
    raise AttributeError(f"module 'palaestra' has no attribute {name!r}")


__all__ = ["Monitor", "VectorMonitor", "__version__", "benchmark_spec", "load_results", "upload"]
