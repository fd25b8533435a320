"""Helpers of the archive tests: a board filled by real uploads, and every GET of two boards compared.

:func:`fill_board` uploads what a real board holds: two users, evaluations with mp4 and asciicast
videos (the raw 2017 flow), a Go9x9-v0 evaluation and a ClassicControl2-v1 benchmark run recorded
with the Monitor and sent by ``palaestra upload``. :func:`board_answers` reads every ``/v1`` GET the
board has and every page reachable from its home page, with the server's address taken out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload_evaluation, video_archive
from tests.web import web_recordings as recordings

#: Pages that hand out a fresh CSRF token (or sign in): their bodies differ on every GET by design.
TOKEN_PAGES = ("/login", "/invite/", "/profile")
MAX_PAGES = 1000


@dataclass
class Board:
    evaluations: list[str] = field(default_factory=list)
    benchmark_run: str = ""
    second_key: str = ""


def fill_board(server: ScoreboardServer, root: Path) -> Board:
    from palaestra.scoreboard.client import upload

    board = Board(second_key=server.create_user("second"))
    with server.client() as c:
        board.evaluations.append(
            upload_evaluation(c, batch=make_batch(30), videos=video_archive(2, "mp4"))["id"]
        )
        board.evaluations.append(upload_evaluation(c, env="FrozenLake-v1", batch=make_batch(12, reward=0.0),
                                                   videos=video_archive(1))["id"])  # fmt: skip
    with httpx.Client(base_url=server.url, headers=server.headers(board.second_key), timeout=60) as c:
        board.evaluations.append(
            upload_evaluation(c, batch=make_batch(120, reward=190.0), algorithm={"id": "balance"})["id"]
        )
    go = recordings.record_board_games(root / "go", env_id="Go9x9-v0", episodes=2)
    upload(go, server=server.url, api_key=server.api_key, algorithm_id="random")
    run = recordings.record_classic_control2_run(root / "bench", "balance")
    board.benchmark_run = upload(run, server=server.url, api_key=board.second_key, algorithm_id="balance-agent",
                                 benchmark_id="ClassicControl2-v1")  # fmt: skip
    return board


def _v1_urls(c: httpx.Client) -> list[str]:
    urls = ["/v1/health", "/v1/envs", "/v1/groups", "/v1/log", "/v1/log?limit=2&starting_after=1"]
    for kind in ("evaluations", "benchmark_runs", "algorithms", "files"):
        urls += [f"/v1/{kind}", f"/v1/{kind}?limit=1"]
        urls += [f"/v1/{kind}/{doc['id']}" for doc in _all(c, f"/v1/{kind}")]
    urls += [
        f"/v1/envs/{doc['id']}" for doc in c.get("/v1/envs").json()["data"] if doc.get("evaluation_count")
    ]
    return urls


def _all(c: httpx.Client, path: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 100}
    while True:
        page = c.get(path, params=params).json()
        out += page["data"]
        if not page["has_more"]:
            return out
        params["starting_after"] = page["data"][-1]["id"]


_LINK = re.compile(r'(?:href|src)="([^"#?]*(?:\?[^"#]*)?)')


def _pages(c: httpx.Client, base: str) -> dict[str, tuple[int, bytes]]:
    """Every page reachable from ``/`` by links on this origin (each once), with its status and body;
    of the catalogue's env pages, those with evaluations and one without (the home page lists
    thousands)."""
    used = {doc["id"] for doc in c.get("/v1/envs").json()["data"] if doc.get("evaluation_count")}
    used.add("Acrobot-v1")
    seen: dict[str, tuple[int, bytes]] = {}
    queue = ["/"]
    while queue and len(seen) < MAX_PAGES:
        path = queue.pop(0)
        if path in seen or path.startswith(TOKEN_PAGES) or path.startswith("/v1/"):
            continue
        env = path.removeprefix("/envs/").split("?")[0].removesuffix("/picture")
        if path.startswith("/envs/") and env not in used:
            continue
        r = c.get(path)
        seen[path] = (r.status_code, r.content.replace(base.encode(), b"BASE"))
        if "text/html" in r.headers.get("content-type", ""):
            for link in _LINK.findall(r.text.replace("&amp;", "&")):
                link = link.removeprefix(base)
                if link.startswith("/") and not link.startswith("//") and link not in seen:
                    queue.append(link)
    return seen


def board_answers(server: ScoreboardServer, api_key: str) -> dict[str, tuple[int, bytes]]:
    """``path -> (status, body)`` of every ``/v1`` GET (with ``api_key``) and every reachable page."""
    with httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {api_key}"}) as c:
        answers = {}
        for url in _v1_urls(c):
            r = c.get(url)
            answers[url] = (r.status_code, r.content.replace(server.url.encode(), b"BASE"))
    with httpx.Client(base_url=server.url, timeout=60) as c:
        answers.update(_pages(c, server.url))
    return answers


def differences(before: dict[str, tuple[int, bytes]], after: dict[str, tuple[int, bytes]]) -> list[str]:
    """Each path whose answer differs, with the first differing bytes of both (for the failure message)."""
    out = []
    for path, (status, body) in before.items():
        other_status, other = after.get(path, (None, b""))
        if (status, body) != (other_status, other):
            at = next(
                (i for i, (a, b) in enumerate(zip(body, other, strict=False)) if a != b),
                min(len(body), len(other)),
            )
            out.append(
                f"{path} ({status} vs {other_status}): {body[max(0, at - 60) : at + 60]!r} vs {other[max(0, at - 60) : at + 60]!r}"
            )
    return out
