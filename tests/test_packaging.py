"""palaestra as a user outside this repository gets it: built with ``python -m build``, installed with pip.

The sdist and the wheel are built from a copy of the working tree (what git would commit, so the
web assets must come from npm at build time, not from a developer's folder), then installed into a
fresh virtual environment outside the repository: first the core alone (importing and recording
work, every feature of an extra names the extra), then with the ``server`` extra, which runs
``palaestra demo --no-serve`` and serves an evaluation page whose chart the browser draws.
pip's cache is shared, so only the first run downloads anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.server_process import ServerProcess, free_port

REPO = Path(__file__).resolve().parents[1]
VENDOR_FILES = (
    "palaestra/scoreboard/server/static/vendor/uplot/dist/uPlot.iife.min.js",
    "palaestra/scoreboard/server/static/vendor/asciinema-player/dist/bundle/asciinema-player.min.js",
    "palaestra/scoreboard/server/static/vendor/versions.json",
)
PACKAGE_DATA = (
    "palaestra/scoreboard/server/web/templates/evaluation.html",
    "palaestra/scoreboard/server/web/static/charts.js",
    "palaestra/scoreboard/server/migrations/env.py",
    "palaestra/scoreboard/server/migrations/versions/0001_initial_schema.py",
    "palaestra/scoreboard/server/migrations/versions/0003_operations.py",
    "palaestra/py.typed",
    "palaestra/benchmarks/normalisation/atari57.json",
    "palaestra/benchmarks/normalisation/dqn2015.json",
    *VENDOR_FILES,
)
CORE_SCRIPT = """
import gymnasium as gym
import palaestra
from palaestra.errors import DependencyNotInstalled

with palaestra.Monitor(gym.make("CartPole-v1", render_mode="rgb_array"), "run") as env:
    for episode in range(3):
        env.reset(seed=episode)
        while not any(env.step(env.action_space.sample())[2:4]):
            pass
print("episodes", len(palaestra.load_results("run")["episode_rewards"]), "videos", len(env.videos))
try:
    gym.make("Go9x9-v0")
except DependencyNotInstalled as error:
    print("go:", error)
"""


def _tree_copy(destination: Path) -> Path:
    """The files git would commit (tracked, and new ones not ignored), copied to ``destination``."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def _clean_env(cwd: Path, **env: str) -> dict[str, str]:
    """This process's environment without palaestra's settings, a venv or a PYTHONPATH (which would put
    the checkout's sources before the installed package), with config and data under ``cwd``."""
    dropped = ("PALAESTRA_", "OPENAI_GYM_", "VIRTUAL_ENV", "PYTHONPATH")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    clean.update(
        {
            "XDG_CONFIG_HOME": str(cwd / ".config"),
            "XDG_DATA_HOME": str(cwd / ".local"),
            "SDL_VIDEODRIVER": "dummy",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            **env,
        }
    )
    return clean


def _run(*args: str | os.PathLike[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    clean = _clean_env(cwd, **env)
    result = subprocess.run([os.fspath(a) for a in args], cwd=cwd, env=clean, capture_output=True, text=True, timeout=timeout)
    return result


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args}\n--- stdout ---\n{result.stdout[-3000:]}\n--- stderr ---\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.mark.slow
def test_the_wheel_installs_anywhere_with_pip_and_serves_pages_with_charts(tmp_path: Path) -> None:
    source = _tree_copy(tmp_path / "source")
    assert not (source / VENDOR_FILES[0]).exists()
    dist = tmp_path / "dist"
    built = _run(sys.executable, "-m", "build", "--outdir", dist, source, cwd=tmp_path)
    _ok(built)
    # the web assets are built into static/vendor/ while packaging: no warning about their folders
    assert "Package would be ignored" not in built.stdout + built.stderr
    (wheel,) = dist.glob("palaestra-*.whl")
    (sdist,) = dist.glob("palaestra-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    with tarfile.open(sdist) as archive:
        sdist_names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for name in PACKAGE_DATA:
        assert name in names, f"the wheel lacks {name}"
        assert f"src/{name}" in sdist_names, f"the sdist lacks {name}"
    # Go's and Hex's board cores: compiled into the wheel, their C sources in the sdist (setup.py's ext_modules)
    for core in ("_goboard", "_hexboard"):
        assert any(name.startswith(f"palaestra/envs/board/{core}.") and name.endswith(".so") for name in names)
        assert f"src/palaestra/envs/board/{core}.c" in sdist_names
    for header in ("_boardcore.h", "_boardcore_methods.h"):  # what both cores include
        assert f"src/palaestra/envs/board/{header}" in sdist_names

    # the core alone, in a folder that is not the repository
    home = tmp_path / "user"
    home.mkdir()
    venv.create(home / "venv", with_pip=True)
    python = home / "venv" / "bin" / "python"
    palaestra = home / "venv" / "bin" / "palaestra"
    _ok(_run(python, "-m", "pip", "install", "--quiet", wheel, cwd=home, timeout=900))
    installed = _ok(_run(python, "-m", "pip", "list", "--format=freeze", cwd=home)).lower()
    for heavy in ("open-spiel", "open_spiel", "fastapi", "sqlalchemy", "matplotlib", "scipy", "imageio-ffmpeg"):
        assert f"{heavy}==" not in installed, f"the core installed {heavy}"
    core = _ok(_run(python, "-c", CORE_SCRIPT, cwd=home))
    assert "episodes 3 videos 2" in core  # episodes 0 and 1 of the capped cubic schedule
    assert "pip install 'palaestra[board]'" in core
    for argv, extra in (
        (["server", "--data-dir", "board"], "server"),
        (["results", "run", "--plot", "curve.png"], "plot"),
        (["demo", "--no-serve"], "server"),
    ):
        result = _run(palaestra, *argv, cwd=home)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 1 and len(lines) == 1, result.stderr
        assert f"pip install 'palaestra[{extra}]'" in lines[0]
    assert "CartPole-v1" in _ok(_run(palaestra, "results", "run", cwd=home))
    runnable = _ok(_run(palaestra, "envs", cwd=home))
    assert "CartPole-v1" in runnable and "Go9x9-v0" not in runnable
    assert "Go9x9-v0 needs OpenSpiel, which is not installed: pip install 'palaestra[board]'" in _ok(
        _run(palaestra, "envs", "--all", cwd=home)
    )

    # with the server extra: the whole loop, and a page whose chart is drawn
    _ok(_run(python, "-m", "pip", "install", "--quiet", f"palaestra[server] @ {wheel.as_uri()}", cwd=home, timeout=900))
    port = free_port()
    demo = _ok(_run(palaestra, "demo", "--no-serve", "--episodes", "120", "--port", str(port), cwd=home))
    url = next(line.split(": ", 1)[1] for line in demo.splitlines() if line.startswith("Your evaluation: "))
    server = ServerProcess(["--data-dir", ".palaestra-demo"], port=port, command=[str(palaestra)], cwd=home, env=_clean_env(home))
    with server:
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200, page.text[:500]
        page = page.text
        assert "/assets/vendor/uplot/dist/uPlot.iife.min.js" in page and "unavailable" not in page
        script = httpx.get(f"http://127.0.0.1:{port}/assets/vendor/uplot/dist/uPlot.iife.min.js", timeout=30)
        assert script.status_code == 200 and len(script.content) > 10_000
        _chart_is_drawn(url)




def _chart_is_drawn(url: str) -> None:
    """Headless Chromium draws the evaluation's reward chart (skipped where Chromium is missing)."""
    chromium = Path("/usr/bin/chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    if not chromium.exists():
        return
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.locator("#chart-reward canvas").wait_for(timeout=30_000)
            assert page.evaluate("window.palaestraCharts.length") >= 1
            assert errors == []
        finally:
            browser.close()
