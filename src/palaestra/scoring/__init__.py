"""Deprecated: the "solved" statistics moved to :mod:`palaestra.solved_stats`.

(A package, not ``scoring.py``, so that git sees ``scoring.py`` renamed to ``solved_stats.py`` and
edits made elsewhere to the old file follow the rename.)

``palaestra.scoring.score_results`` is :func:`palaestra.solved_stats.solved_stats`; the other names are
the same there. This module warns once when imported and will be removed.
"""

from __future__ import annotations

import warnings

from palaestra.solved_stats import (
    DEFAULT_TRIALS,
    SolvedStats,
    compute_graph_stats,
    running_mean,
    score_from_merged,
    trailing_mean,
)
from palaestra.solved_stats import solved_stats as score_results

warnings.warn(
    "palaestra.scoring is deprecated: import from palaestra.solved_stats "
    "(score_results is now solved_stats)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "DEFAULT_TRIALS",
    "SolvedStats",
    "compute_graph_stats",
    "running_mean",
    "score_from_merged",
    "score_results",
    "trailing_mean",
]
