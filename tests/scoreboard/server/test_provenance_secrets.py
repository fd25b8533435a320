"""No secret reaches a public page, end to end through a real ``palaestra server``: a real run records
every shape of the corpus (tests/monitoring/secret_shapes.py) on its command line and in its config,
``palaestra upload --dry-run`` shows them redacted, and neither the evaluation page nor its /v1 JSON
holds one; an uploader that sends them unredacted (an old or hostile client) is redacted by the
board; and the Monitor's own folder inside the repository does not make the recorded tree dirty."""

from __future__ import annotations

import html
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx

from tests.monitoring.secret_shapes import SHAPES
from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload

SECRETS = [s.secret for s in SHAPES]
ARGV = [arg for s in SHAPES for arg in s.argv]
CONFIG = {f"c{i}_{key}": value for i, s in enumerate(SHAPES) for key, value in (s.config or {}).items()}

TRAIN = textwrap.dedent(
    """
    import json, sys, gymnasium as gym, palaestra
    env = palaestra.Monitor(gym.make("CartPole-v1", max_episode_steps=20), sys.argv[1],
                            video_callable=False, config=json.loads(open("config.json").read()))
    for seed in (1, 2):
        env.reset(seed=seed)
        done = False
        while not done:
            done = any(env.step(env.action_space.sample())[2:4])
    env.close()
    """
)


def _leaked(*texts: str) -> list[str]:
    """The secrets found in ``texts`` (HTML unescaped too: ``a b&amp;c`` is ``a b&c`` to a reader)."""
    seen = " ".join([*texts, *(html.unescape(t) for t in texts)])
    return [s for s in SECRETS if s in seen]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True)


def _shown(server: ScoreboardServer, evaluation_id: str) -> tuple[str, dict[str, Any]]:
    with httpx.Client(base_url=server.url, timeout=60) as anonymous:  # what anyone reads
        page = anonymous.get(f"/evaluations/{evaluation_id}")
        document = anonymous.get(f"/v1/evaluations/{evaluation_id}")
    assert page.status_code == 200 and document.status_code == 200
    return page.text, document.json()


def test_a_real_run_with_every_secret_shape_shows_none_on_the_dry_run_the_page_or_v1(
    scoreboard_server: ScoreboardServer, tmp_path: Path
) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    (repo / "config.json").write_text(json.dumps(CONFIG))
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "the code that runs")
    run_dir = repo / "runs" / "cartpole"  # inside the repository, neither committed nor ignored
    subprocess.run([sys.executable, "train.py", str(run_dir), *ARGV], cwd=repo, check=True, timeout=180)

    recorded = "".join(p.read_text() for p in run_dir.glob("*provenance*"))
    assert not _leaked(recorded), "the Monitor wrote them"

    dry = subprocess.run(
        [sys.executable, "-m", "palaestra", "upload", str(run_dir), "--dry-run"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert not _leaked(dry.stdout) and "[REDACTED]" in dry.stdout
    provenance = json.loads(dry.stdout)["evaluations"][0]["provenance"]
    assert provenance["git"]["dirty"] is False, "the Monitor's own folder is not a change of the code"
    assert provenance["command"]["argv"][2:4] == ["wandb.api_key=[REDACTED]", "MY_SERVICE_PASSWORD=[REDACTED]"]

    sent = subprocess.run(
        [sys.executable, "-m", "palaestra", "upload", str(run_dir), "--server", scoreboard_server.url],
        capture_output=True, text=True, timeout=180,
        env={**scoreboard_server.env, "PALAESTRA_API_KEY": scoreboard_server.api_key},
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    page, document = _shown(scoreboard_server, sent.stdout.split()[-1])
    assert "[REDACTED]" in page and document["provenance"]["config"]
    assert not _leaked(page, json.dumps(document))


def test_the_board_redacts_what_an_uploader_sent_unredacted(scoreboard_server: ScoreboardServer) -> None:
    """Defence in depth: an old client, a hand-made upload or a hostile one sends the secrets as
    they were typed; the board stores and shows them redacted."""
    provenance = {
        "format": 1,
        "git": {"commit": "a" * 40, "dirty": False, "branch": "token=branchT0kenValue"},
        "command": {"argv": ["train.py", *ARGV]},
        "config": CONFIG,
        "env": {"id": "CartPole-v1", "kwargs": {"api_token": "envKwargT0ken"}},
    }
    with scoreboard_server.client() as c:
        body = {
            "env": "CartPole-v1",
            "training_episode_batch": upload(c, "episode_batch", json.dumps(make_batch()).encode()),
            "provenance": provenance,
        }
        created = c.post("/v1/evaluations", json=body)
        assert created.status_code == 201, created.text
        assert not _leaked(created.text)
    page, document = _shown(scoreboard_server, created.json()["id"])
    assert not _leaked(page, json.dumps(document))
    for secret in ("branchT0kenValue", "envKwargT0ken"):
        assert secret not in page and secret not in json.dumps(document)
    assert document["provenance"]["command"]["argv"][:3] == ["train.py", "wandb.api_key=[REDACTED]", "MY_SERVICE_PASSWORD=[REDACTED]"]
