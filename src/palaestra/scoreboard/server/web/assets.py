"""Static files of the web pages: our own CSS/JS, and the vendor packages copied from npm.

Our own files live next to this module in ``static/`` and are served under ``/assets/``. The npm
packages (uPlot, asciinema-player; ``web/package.json``) are built into the server's static folder
``static/vendor/`` (git-ignored) when palaestra is packaged or installed from a checkout (setup.py
runs npm and ``scripts/build-web-assets.sh``), and served under ``/assets/vendor/``. Pages work
without them and say that charts are unavailable.
"""

from __future__ import annotations

import hashlib
import json
import logging
from functools import cache
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

logger = logging.getLogger("palaestra.scoreboard.web")

OWN_STATIC_DIR = Path(__file__).resolve().parent / "static"
VENDOR_DIR = Path(__file__).resolve().parent.parent / "static" / "vendor"
ASSETS_PREFIX = "/assets"
VENDOR_PREFIX = "/assets/vendor"

#: The vendor files every page with charts or players needs (what build-web-assets.sh copies).
REQUIRED_VENDOR_FILES = (
    "uplot/dist/uPlot.iife.min.js",
    "uplot/dist/uPlot.min.css",
    "asciinema-player/dist/bundle/asciinema-player.min.js",
    "asciinema-player/dist/bundle/asciinema-player.css",
)


def vendor_available(vendor_dir: Path | None = None) -> bool:
    """Whether the npm packages were installed into the static folder (checked on every page)."""
    folder = VENDOR_DIR if vendor_dir is None else vendor_dir
    return all((folder / name).is_file() for name in REQUIRED_VENDOR_FILES)


def vendor_versions(vendor_dir: Path | None = None) -> dict[str, str]:
    """``{package: version}`` as written by build-web-assets.sh (empty when unknown)."""
    folder = VENDOR_DIR if vendor_dir is None else vendor_dir
    try:
        data = json.loads((folder / "versions.json").read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


class _OptionalStaticFiles(StaticFiles):
    """StaticFiles whose folder may not exist (yet): then every path is a 404, not a 500."""

    async def check_config(self) -> None:
        if self.directory is not None and Path(self.directory).is_dir():
            await super().check_config()


@cache
def _own_digest(name: str) -> str:
    try:
        return hashlib.sha256((OWN_STATIC_DIR / name).read_bytes()).hexdigest()[:10]
    except OSError:
        return "0"


def asset_url(name: str) -> str:
    """URL of one of our own static files, with a content hash so browsers may cache it for long."""
    return f"{ASSETS_PREFIX}/{name}?v={_own_digest(name)}"


def vendor_url(name: str) -> str:
    """URL of a vendor file (versioned by the package version recorded at copy time)."""
    package = name.split("/", 1)[0]
    version = vendor_versions().get(package, "0")
    return f"{VENDOR_PREFIX}/{name}?v={version}"


def mount_static(app: FastAPI) -> None:
    """Serve ``/assets/vendor`` (the npm packages, once installed) and ``/assets`` on ``app``."""
    if not vendor_available():
        logger.info(
            "No browser-side packages in %s: pages are served without charts or terminal players "
            "(a wheel or sdist of palaestra has them; a checkout builds them with npm: pip install -e .)",
            VENDOR_DIR,
        )
    # check_dir=False: the folder may be filled by build-web-assets.sh while the server runs
    app.mount(VENDOR_PREFIX, _OptionalStaticFiles(directory=VENDOR_DIR, check_dir=False), name="web-vendor")
    app.mount(ASSETS_PREFIX, StaticFiles(directory=OWN_STATIC_DIR), name="web-assets")
