"""The scoreboard's web pages: environments, leaderboards, evaluations, users, algorithms, benchmarks.

The app factory includes :data:`router` and calls :func:`mount_static`. Pages are server-rendered
(Jinja2, autoescaped); the charts (uPlot) and terminal player (asciinema-player) are npm packages
from ``web/package.json``, built into ``static/vendor/`` when palaestra is packaged (setup.py).
"""

from __future__ import annotations

from palaestra.scoreboard.server.web.assets import mount_static, vendor_available
from palaestra.scoreboard.server.web.routes import router

__all__ = ["mount_static", "router", "vendor_available"]
