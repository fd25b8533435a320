"""The one build step pyproject.toml cannot say: the scoreboard's browser-side files, from npm.

The charts (uPlot) and the terminal player (asciinema-player) are npm packages, pinned by
web/package-lock.json. Making the sdist or a wheel runs ``npm ci --prefix web`` and
scripts/build-web-assets.sh, which copies their dist files into
src/palaestra/scoreboard/server/static/vendor/ (git-ignored, never committed); package-data then
puts them in the sdist and the wheel. So the files are built when palaestra is packaged, and
``pip install 'palaestra[server]'`` serves pages with charts on a machine without npm. A wheel built
from the sdist finds them there and runs nothing.

An editable install (``make setup``) builds them the same way, but only warns without npm: the
pages then say that charts are unavailable.

It also compiles the two C extensions, ``palaestra.envs.board._goboard`` and ``_hexboard`` (Go's and
Hex's board cores, see src/palaestra/envs/board/_goboard.c and _hexboard.c, over the CPython layer they
share in _boardcore_methods.h; they need a C compiler and
Python's headers, both in scripts/system-packages.txt). They are optional: where one cannot be built,
setuptools warns and its envs play on OpenSpiel alone (the same games, slower).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
WEB = ROOT / "web"
VENDOR = ROOT / "src" / "palaestra" / "scoreboard" / "server" / "static" / "vendor"


def _locked_versions() -> dict[str, str]:
    """``{package: version}`` of the web packages that web/package-lock.json pins."""
    lock = json.loads((WEB / "package-lock.json").read_text(encoding="utf-8"))
    wanted = json.loads((WEB / "package.json").read_text(encoding="utf-8"))["dependencies"]
    return {name: lock["packages"][f"node_modules/{name}"]["version"] for name in wanted}


def _built_versions() -> dict[str, str] | None:
    # versions.json is written into the folder before it is swapped in whole, so its presence means
    # that every file is there
    try:
        return dict(json.loads((VENDOR / "versions.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def build_web_assets(strict: bool) -> None:
    """Build the vendor folder unless it holds the locked versions already."""
    built = _built_versions()
    if not (WEB / "package-lock.json").is_file():
        if built:
            return  # an sdist: the files were built when it was made
        raise SystemExit("palaestra build: neither web/package-lock.json nor built web assets are here")
    if built == _locked_versions():
        return
    if shutil.which("npm") is None:
        message = (
            "palaestra build: npm is needed to build the scoreboard's charts and terminal player "
            "from web/package.json (install Node.js and npm, e.g. apt-get install nodejs npm)"
        )
        if strict:
            raise SystemExit(message)
        print(f"{message}; continuing without them", file=sys.stderr)
        return
    npm = ["npm", "ci", "--prefix", str(WEB), "--no-audit", "--no-fund", "--loglevel=error"]
    subprocess.run(npm, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["bash", str(ROOT / "scripts" / "build-web-assets.sh")], check=True)


class BuildPyWithWebAssets(build_py):
    def run(self) -> None:
        build_web_assets(strict=not getattr(self, "editable_mode", False))
        super().run()


class SdistWithWebAssets(sdist):
    def run(self) -> None:
        build_web_assets(strict=True)  # before the file list is made, so that it lists them
        super().run()


# what both cores include: their constants and their shared CPython layer
BOARD_CORE_HEADERS = ["src/palaestra/envs/board/_boardcore.h", "src/palaestra/envs/board/_boardcore_methods.h"]

GO_BOARD = Extension(
    "palaestra.envs.board._goboard",
    sources=["src/palaestra/envs/board/_goboard.c"],
    depends=BOARD_CORE_HEADERS,
    extra_compile_args=["-O2"],
    optional=True,  # the Go envs fall back to OpenSpiel without it
)

HEX_BOARD = Extension(
    "palaestra.envs.board._hexboard",
    sources=["src/palaestra/envs/board/_hexboard.c"],
    depends=BOARD_CORE_HEADERS,
    extra_compile_args=["-O2"],
    optional=True,  # the single Hex env falls back to OpenSpiel without it
)

setup(
    cmdclass={"build_py": BuildPyWithWebAssets, "sdist": SdistWithWebAssets},
    ext_modules=[GO_BOARD, HEX_BOARD],
)
