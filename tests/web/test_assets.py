"""scripts/build-web-assets.sh: copies the npm packages' dist files, refuses when they are missing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from palaestra.scoreboard.server.web import assets

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "build-web-assets.sh"
MODULES = ROOT / "web" / "node_modules"


def test_package_json_and_lockfile_pin_the_browser_packages() -> None:
    package = json.loads((ROOT / "web" / "package.json").read_text())
    lock = json.loads((ROOT / "web" / "package-lock.json").read_text())
    for name in ("uplot", "asciinema-player"):
        assert name in package["dependencies"]
        assert lock["packages"][f"node_modules/{name}"]["version"] == package["dependencies"][name]


@pytest.mark.skipif(not MODULES.is_dir(), reason="web/node_modules is missing: run `npm ci --prefix web`")
def test_build_script_copies_what_the_pages_load(tmp_path: Path) -> None:
    dest = tmp_path / "vendor"
    result = subprocess.run(["bash", str(SCRIPT), str(MODULES), str(dest)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert assets.vendor_available(dest)
    versions = assets.vendor_versions(dest)
    assert set(versions) == {"uplot", "asciinema-player"}
    # run again over an existing folder: replaced whole, nothing left behind
    (dest / "stale.js").write_text("old")
    assert subprocess.run(["bash", str(SCRIPT), str(MODULES), str(dest)], capture_output=True).returncode == 0
    assert not (dest / "stale.js").exists()


def test_build_script_names_the_missing_step(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "node_modules"), str(tmp_path / "vendor")], capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "npm ci --prefix web" in result.stderr
    assert not (tmp_path / "vendor").exists()


def test_build_script_refuses_an_incomplete_install(tmp_path: Path) -> None:
    if not MODULES.is_dir():
        pytest.skip("web/node_modules is missing: run `npm ci --prefix web`")
    partial = tmp_path / "node_modules"
    shutil.copytree(MODULES / "uplot", partial / "uplot")
    result = subprocess.run(["bash", str(SCRIPT), str(partial), str(tmp_path / "vendor")], capture_output=True, text=True)
    assert result.returncode == 1 and "asciinema-player" in result.stderr
    assert not (tmp_path / "vendor").exists()
