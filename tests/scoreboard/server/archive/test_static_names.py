"""The static mirror's file names and links (:mod:`palaestra.scoreboard.server.archive.static`), and
the command's refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from palaestra.errors import ConfigurationError
from palaestra.scoreboard.server.archive.static import export_static, file_name
from palaestra.scoreboard.server.core.config import resolve_config


@pytest.mark.parametrize(
    ("path", "query", "media_type", "name"),
    [
        ("/", "", "text/html", "index.html"),
        ("/envs/CartPole-v0", "", "text/html", "envs/CartPole-v0.html"),
        ("/envs/ALE/Pong-v5", "", "text/html", "envs/ALE/Pong-v5.html"),
        ("/envs/ALE/Pong-v5/picture", "", "image/webp", "envs/ALE/Pong-v5/picture.webp"),
        ("/envs/gym_foo:Bar-v0", "", "text/html", "envs/gym_foo~3ABar-v0.html"),  # no ':' (a scheme)
        ("/users/al%20ice", "", "text/html", "users/al~20ice.html"),
        ("/users/a.json", "", "text/html", "users/a.json.html"),  # the media type, not the name, decides
        ("/users", "sort=name", "text/html", "users~3Fsort~3Dname.html"),
        ("/users/~x", "", "text/html", "users/~7Ex.html"),  # '~' escaped too: no two targets share a name
        ("/evaluations/e/episode_batch.json", "", "application/json", "evaluations/e/episode_batch.json"),
        ("/evaluations/e/episodes.csv", "", "text/csv", "evaluations/e/episodes.csv"),
        ("/evaluations/e/videos/v.mp4", "", "video/mp4", "evaluations/e/videos/v.mp4"),
        ("/v1/evaluations/e", "", "application/json", "v1/evaluations/e.json"),
        ("/assets/charts.js", "v=abc", "text/javascript", "assets/charts.js"),  # ?v= only busts caches
    ],
)
def test_file_names_are_portable_and_keep_their_media_type(path: str, query: str, media_type: str, name: str) -> None:
    assert file_name(path, query, media_type) == name


def test_an_export_never_writes_into_a_folder_that_holds_files(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigurationError, match="is not empty"):
        export_static(resolve_config(data_dir=tmp_path / "board"), tmp_path / "site")
    assert [p.name for p in (tmp_path / "site").iterdir()] == ["keep.txt"]


def test_the_command_needs_a_folder(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "server", "export", "--static", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "needs a folder" in done.stderr
