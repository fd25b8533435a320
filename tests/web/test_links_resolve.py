"""Every link a page of the board draws resolves: a breadth-first crawl of a real server, from its front
page, over a board with evaluations, benchmark runs, a ladder and a run in progress.

The crawl follows every same-origin ``href``, ``src`` and ``data-src`` (the forms' ``action`` are
posted, not followed) and fails listing each link that answered 4xx or 5xx with the page that drew it.
"""

from __future__ import annotations

import html
import re
from collections import Counter, deque
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx
import pytest

from tests.web.web_helpers import Uploads

#: The crawl's bound: enough for every kind of page of this board (a new path is visited before
#: another sort or page of one already seen), few enough to stay quick.
MAX_PAGES = 400
_LINK_RE = re.compile(r'\s(?:href|src|data-src)="([^"]*)"')
#: Env pictures are not fetched: rendering one takes seconds, and an env without one answers its
#: placeholder image with 404 on purpose (the page draws that image; test_compare_pages.py checks them).
_PICTURE = re.compile(r"^/envs/.+/picture$")


@pytest.fixture(scope="module")
def live_run(web_server: Any) -> str:
    """A run in progress (never sealed) with a few episodes, on an env no upload of this board has."""
    answer = httpx.post(f"{web_server.url}/v1/live_evaluations", json={"env": "Acrobot-v1"},
                        headers=web_server.headers(), timeout=30)  # fmt: skip
    assert answer.status_code == 201, answer.text
    live_id = str(answer.json()["id"])
    chunk = {
        "source": "a",
        "start": 0,
        "initial_reset_timestamp": 1000.0,
        "timestamps": [1001.0, 1002.0, 1003.0],
        "episode_rewards": [-500.0, -420.0, -300.0],
        "episode_lengths": [500, 420, 300],
        "episode_types": None,
    }
    answer = httpx.post(f"{web_server.url}/v1/live_evaluations/{live_id}/chunks", json=chunk,
                        headers=web_server.headers(), timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    return live_id


def _links(base: str, page_url: str, text: str) -> list[str]:
    """The same-origin links of a page, absolute, without their fragment."""
    found = []
    for raw in _LINK_RE.findall(text):
        url = urljoin(page_url, html.unescape(raw)).split("#", 1)[0]
        if url.startswith(base + "/") or url == base:
            found.append(url)
    return found


def _shape(url: str) -> tuple[str, int, frozenset[str]]:
    """What kind of page ``url`` is: its first path segment, its depth and its query's keys."""
    parts = urlsplit(url)
    segments = parts.path.strip("/").split("/")
    return segments[0], len(segments), frozenset(key for key, _ in parse_qsl(parts.query))


def crawl(base: str, headers: dict[str, str], max_pages: int = MAX_PAGES) -> tuple[dict[str, list[str]], int]:
    """``({broken link: [pages that drew it]}, pages read for links)`` of a crawl from ``base/``.

    Every link found is fetched once and its status checked; at most ``max_pages`` pages are read for
    more links, the next one always of the kind read least so far (a front page links to a thousand
    catalogued envs: reading those first would never reach a benchmark's or a ladder's pages).
    ``headers`` carry an API key: the board limits anonymous reads to a person's pace, not a crawl's.
    """
    status: dict[str, int] = {}
    referrers: dict[str, list[str]] = {}
    pending: dict[tuple[str, int, frozenset[str]], deque[tuple[str, str]]] = {}
    read: Counter[tuple[str, int, frozenset[str]]] = Counter()
    pages = 0
    with httpx.Client(timeout=60, follow_redirects=True, headers=headers) as client:

        def check(url: str) -> None:
            response = client.get(url)
            status[url] = response.status_code
            if response.status_code < 400 and response.headers.get("content-type", "").startswith("text/html"):
                pending.setdefault(_shape(url), deque()).append((url, response.text))

        check(base + "/")
        while pages < max_pages and any(pending.values()):
            shape = min((k for k, v in pending.items() if v), key=lambda k: read[k])
            url, text = pending[shape].popleft()
            read[shape] += 1
            pages += 1
            for link in _links(base, url, text):
                referrers.setdefault(link, []).append(url)
                if link not in status and not _PICTURE.match(urlsplit(link).path):
                    check(link)
    broken = {f"{url} ({code})": referrers.get(url, ["(start)"]) for url, code in status.items() if code >= 400}
    return broken, pages


def test_every_link_a_page_draws_answers_without_an_error(
    web_server: Any, uploads: Uploads, ladder_game: tuple[Any, Any], live_run: str
) -> None:
    broken, pages = crawl(web_server.url, web_server.headers())
    listing = "\n".join(f"  {link}, linked from {', '.join(sorted(set(refs))[:3])}" for link, refs in broken.items())
    assert not broken, f"{len(broken)} links of the board's pages answer an error:\n{listing}"
    assert pages > 50  # the crawl reached the board, not just its front page


def test_a_benchmark_task_whose_env_is_not_installed_has_a_page_that_says_so(web_server: Any) -> None:
    page = httpx.get(f"{web_server.url}/envs/MinecraftBasic-v0", timeout=30)
    assert page.status_code == 200
    assert "a task of MinecraftEasy-v0, but it is not installed here" in page.text
    assert "gym-minecraft environment; none exists today" in page.text
    assert '<a href="/benchmarks/MinecraftEasy-v0">MinecraftEasy-v0</a>' in page.text
    # an id that nothing names is still unknown, and said so
    unknown = httpx.get(f"{web_server.url}/envs/NoSuchEnv-v0", timeout=30)
    assert unknown.status_code == 404
    assert "No environment &#39;NoSuchEnv-v0&#39; is known to this scoreboard" in unknown.text
