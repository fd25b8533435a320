"""The static mirror (``palaestra server export --static DEST``) of the web tests' board: every link
resolves, its pages are the board's pages, and from a plain static file server (and from ``file://``)
its charts draw and its videos play in headless Chromium."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from palaestra.scoreboard.server.archive.static import NOTICE_PAGE, file_name
from tests.scoreboard.server_helpers import wait_until
from tests.server_process import free_port
from tests.web.test_browser import COUNT_PIXELS_JS, _no_page_errors
from tests.web.web_helpers import HOSTILE_NAME, Uploads, poll, require_vendor_assets, screenshot

#: Attributes that hold a link (or several: srcset), on any tag.
LINK_ATTRIBUTES = {"href", "src", "data-src", "action", "poster", "srcset"}


class _Links(HTMLParser):
    """Every link of a page, as the browser would read the attributes (an independent parser from
    the exporter's)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        #: links that must name a script, a style sheet, an image or a video, never a page
        self.resources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in LINK_ATTRIBUTES and value is not None:
                values = [v.strip().split(" ")[0] for v in value.split(",")] if name == "srcset" else [value]
                self.links.extend(values)
                if tag in ("script", "img", "video", "source") or (tag == "link" and name == "href"):
                    self.resources.extend(values)


def links_of(page: Path) -> tuple[list[str], list[str]]:
    """``(every link, the links to resources)`` of a page or style sheet."""
    parser = _Links()
    text = page.read_text(encoding="utf-8")
    css = [m.group(1) for m in re.finditer(r"url\(['\"]?([^'\")]+)", text)]
    if page.suffix == ".css":
        return css, css
    parser.feed(text)
    return parser.links + css, parser.resources


def resolve(link: str, page: Path, root: Path) -> Path | None:
    """The file a relative ``link`` on ``page`` names, or ``None`` for another site's link."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc:
        return None
    if not parts.path:  # an anchor on the same page
        return page
    assert not parts.path.startswith("/"), f"{page.relative_to(root)} links to {link!r}: not relative"
    return (page.parent / unquote(parts.path)).resolve()


@pytest.fixture(scope="module")
def mirror(web_server: Any, uploads: Uploads, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mirror written by the command, from the database of the running board."""
    destination = tmp_path_factory.mktemp("mirror") / "site"
    done = web_server.palaestra("server", "export", "--static", str(destination))
    assert "static mirror" in done.stdout and str(destination) in done.stdout
    return destination


def test_every_link_in_the_mirror_resolves_to_a_file_in_it(mirror: Path) -> None:
    root = mirror.resolve()
    checked = 0
    for page in sorted(root.rglob("*")):
        if page.suffix not in (".html", ".css"):
            continue
        links, resources = links_of(page)
        for link in links:
            target = resolve(link, page, root)
            if target is None:
                continue
            assert target.is_relative_to(root), f"{page.relative_to(root)} links outside the mirror: {link!r}"
            assert target.is_file(), f"{page.relative_to(root)} links to {link!r}: no such file in the mirror"
            if link in resources and not link.startswith("data:"):
                assert target.suffix != ".html", f"{page.relative_to(root)}: {link!r} is a page, not a resource"
            checked += 1
    assert checked > 500


def test_the_mirror_holds_every_page_and_download(mirror: Path, web_server: Any, uploads: Uploads) -> None:
    with httpx.Client(base_url=web_server.url) as c:
        evaluations = c.get("/v1/evaluations", params={"limit": 100}).json()["data"]
    assert len(evaluations) >= 5
    for ev in evaluations:
        assert (mirror / file_name(f"/evaluations/{ev['id']}", "", "text/html")).is_file()
        assert (mirror / f"v1/evaluations/{ev['id']}.json").is_file()
        for video in ev["videos"]:
            assert (mirror / f"evaluations/{ev['id']}/videos/{video['name']}").is_file()
    first = uploads.cartpole[0]
    with httpx.Client(base_url=web_server.url) as c:
        for download in ("episode_batch.json", "episodes.csv"):
            live = c.get(f"/evaluations/{first}/{download}").content
            assert (mirror / f"evaluations/{first}/{download}").read_bytes() == live
    for run in uploads.benchmark_runs:
        assert (mirror / f"benchmark_runs/{run}.html").is_file()
    for name in ("index.html", "benchmarks.html", "algorithms.html", "users.html", "users/tester.html"):
        assert (mirror / name).is_file(), name
    assert (mirror / "benchmarks/ClassicControl2-v1.html").is_file()
    assert (mirror / "envs/CartPole-v0.html").is_file()


def _main(text: str) -> str:
    """A page's ``<main>`` with its link values and the ages of live runs blanked: what the mirror must
    not change (a live run's "last episode 18 s ago" moves on between the mirror and this look)."""
    main = text[text.index("<main>") : text.index("</main>")]
    main = re.sub(r"\b\d+ s ago\b", "N s ago", main)
    return re.sub(r'(href|src|data-src|action)="[^"]*"', r'\1=""', main)


def test_mirror_pages_are_the_boards_pages(mirror: Path, web_server: Any, uploads: Uploads) -> None:
    paths = [
        "/",
        "/envs/CartPole-v0",
        f"/evaluations/{uploads.cartpole[0]}",
        f"/evaluations/{uploads.frozenlake}",
        f"/benchmark_runs/{uploads.benchmark_runs[0]}",
        "/benchmarks/ClassicControl2-v1",
        "/users/tester",
    ]
    with httpx.Client(base_url=web_server.url) as c:
        for path in paths:
            live = c.get(path).text
            mirrored = (mirror / file_name(path, "", "text/html")).read_text(encoding="utf-8")
            assert _main(mirrored) == _main(live), path


def test_dynamic_pages_and_forms_lead_to_the_notice_or_the_mirrors_search(mirror: Path, uploads: Uploads) -> None:
    page = (mirror / "envs/CartPole-v0.html").read_text(encoding="utf-8")
    assert f'action="../{NOTICE_PAGE}"' in page  # the compare form
    assert 'action="../search.html"' in page  # the header's search, answered in the browser
    assert "/login" not in page and "read-only archive" in page
    notice = (mirror / NOTICE_PAGE).read_text(encoding="utf-8")
    assert "not available in the mirror" in notice
    sorted_page = mirror / file_name("/users", "sort=name", "text/html")
    assert (mirror / "users.html").is_file()
    assert sorted_page.is_file() or "sort=" not in (mirror / "users.html").read_text()


@contextlib.contextmanager
def static_server(folder: Path) -> Iterator[str]:
    """``python -m http.server`` serving ``folder``: a plain static file host."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(url), timeout=30)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/index.html", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _charts_drawn_and_video_played(pg: Any, record: Any, page_url: str, shot: str) -> None:
    pg.goto(page_url)
    pg.locator("#chart-reward[data-points]").wait_for()
    pixels = pg.evaluate(COUNT_PIXELS_JS, "#chart-reward canvas")
    assert pixels["blue"] > 300 and pixels["red"] > 100, f"the chart was not drawn: {pixels}"
    poll(pg, "document.querySelector('figure.video video').readyState >= 1")
    pg.evaluate("(async () => { const v = document.querySelector('figure.video video'); v.muted = true; "
                "await v.play(); })()")
    poll(pg, "(() => { const v = document.querySelector('figure.video video'); "
             "return v.readyState >= 2 && (v.currentTime > 0 || v.ended); })()")
    screenshot(pg, shot)
    _no_page_errors(record)


@pytest.mark.browser
def test_from_a_static_file_server_the_charts_draw_and_the_videos_play(
    mirror: Path, uploads: Uploads, page: Any
) -> None:
    require_vendor_assets()
    pg, record = page
    with static_server(mirror) as url:
        name = file_name(f"/evaluations/{uploads.cartpole[0]}", "", "text/html")
        _charts_drawn_and_video_played(pg, record, f"{url}/{name}", "mirror-evaluation-http")
        pg.goto(f"{url}/{file_name(f'/evaluations/{uploads.frozenlake}', '', 'text/html')}")
        # the terminal player fetches its recording from the mirror: FrozenLake's map (FHFH) drawn
        poll(pg, "document.querySelector('.terminal-player.ready') !== null && "
                 "document.querySelector('.terminal-player').innerText.includes('FHFH')")
        screenshot(pg, "mirror-terminal-http", full_page=False)
        pg.goto(f"{url}/benchmarks/ClassicControl2-v1.html")
        poll(pg, "document.querySelectorAll('canvas').length > 0")
        screenshot(pg, "mirror-benchmark-http")
        pg.goto(f"{url}/index.html")
        pg.locator("a[href='envs/CartPole-v0.html']").first.click()
        pg.wait_for_url(f"{url}/envs/CartPole-v0.html")
        poll(pg, "document.querySelector('.env-picture img').naturalWidth > 0")  # the env picture (lazy)
        _no_page_errors(record)


@pytest.mark.browser
def test_the_mirrors_search_finds_envs_algorithms_and_users_in_the_browser(
    mirror: Path, uploads: Uploads, page: Any
) -> None:
    pg, record = page
    with static_server(mirror) as url:
        pg.goto(f"{url}/envs/Hex9x9-v0.html")
        pg.locator("header form.search input[name=q]").fill("cartpole")
        pg.keyboard.press("Enter")
        pg.wait_for_url(f"{url}/search.html?q=cartpole")
        hits = pg.locator("main ul.hits li")
        hits.first.wait_for()
        assert "CartPole-v0" in pg.locator("main ul.hits").inner_text()
        pg.locator("main ul.hits a", has_text="CartPole-v0").first.click()
        pg.wait_for_url(f"{url}/envs/CartPole-v0.html")
        _no_page_errors(record)
    # from file:// too, and a hostile name is shown as text, never run
    pg.goto((mirror / "search.html").resolve().as_uri() + "?q=script")
    pg.locator("main ul.hits li.algorithm").first.wait_for()
    assert HOSTILE_NAME in pg.locator("main ul.hits").inner_text() and record.dialogs == []
    pg.goto((mirror / "search.html").resolve().as_uri() + "?q=tester")
    assert pg.locator("main ul.hits li.user a").first.inner_text() == "tester"
    pg.goto((mirror / "search.html").resolve().as_uri() + "?q=no-such-thing-here")
    assert "Nothing matches" in pg.locator("#mirror-search-summary").inner_text()
    screenshot(pg, "mirror-search-file")


@pytest.mark.browser
def test_from_file_urls_the_charts_draw_and_the_videos_play(mirror: Path, uploads: Uploads, page: Any) -> None:
    require_vendor_assets()
    pg, record = page
    name = file_name(f"/evaluations/{uploads.cartpole[0]}", "", "text/html")
    _charts_drawn_and_video_played(pg, record, (mirror / name).resolve().as_uri(), "mirror-evaluation-file")
    # a browser fetches nothing from file://: the terminal recording's last frame shows as text
    terminal = file_name(f"/evaluations/{uploads.frozenlake}", "", "text/html")
    pg.goto((mirror / terminal).resolve().as_uri())
    assert "FHFH" in pg.locator("pre.terminal-fallback").first.inner_text()
