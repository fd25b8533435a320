"""The static mirror (``palaestra server export --static DEST``): the board as a static website.

- **Rendered by the real app.** The scoreboard app is built over the board's database and store, in
  read-only mode (:mod:`..guards.readonly`: nothing is written, no env picture cached), and driven in process
  through its own routes; the mirror is what those routes answer, so it cannot drift from the pages.
- **Crawled from the home page.** Every link a page makes (``href``, ``src``, ``data-src``) to a page,
  a download or an asset of the board is fetched and written; the pages' links are rewritten to
  relative file paths (:func:`file_name` names the files), so the mirror works from any static file
  host and from ``file://``.
- **Dynamic pages are named as such, or done in the browser.** Compare, sign-in and every form's
  settings (the across-runs chart's, a benchmark's run comparison) need the live scoreboard: their
  links and forms lead to one page, :data:`NOTICE_PAGE`, that says so; never a dead link. Search is
  answered in the browser (``static/mirror-search.js``) from :data:`SEARCH_INDEX`, written from the env,
  algorithm and user pages the crawl found. Sort orders and page numbers are finite, so those pages
  are rendered each.

What needs no server stays: the charts (uPlot over JSON blocks in the pages), the mp4 videos
(``<video src>``), the episode downloads and each evaluation's ``/v1`` JSON. Terminal recordings
are fetched by the player's script, which a browser allows over HTTP but not from ``file://``;
there the page keeps showing the recording's last frame as text.
"""

from __future__ import annotations

import html
import json
import logging
import mimetypes
import posixpath
import re
import warnings
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from palaestra.errors import ConfigurationError
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.core.logs import ACCESS_LOGGER

__all__ = ["NOTICE_PAGE", "SEARCH_INDEX", "MirrorReport", "export_static", "file_name", "page_links"]

logger = logging.getLogger("palaestra.scoreboard.mirror")

#: The page every dynamic link and form of the mirror leads to.
NOTICE_PAGE = "not-in-mirror.html"
#: The search index the mirror's search page reads (a script: a browser fetches nothing from file://).
SEARCH_INDEX = "search-index.js"
#: The board's search page (empty: a static page) and the script that answers it in the mirror.
SEARCH_PATH = "/search"
SEARCH_SCRIPT = "/assets/mirror-search.js"
#: The pages the search finds, by path prefix: (kind, prefix).
SEARCHED_PAGES = (("env", "/envs/"), ("algorithm", "/algorithms/"), ("user", "/users/"))
_TITLE_RE = re.compile(r"<title>(.*?) · palaestra</title>", re.S)
#: Where the pages are fetched from (no network: the app is called in process). ``/v1`` answers
#: that hold URLs name this host unless the board has a public URL.
MIRROR_BASE_URL = "http://scoreboard.mirror.invalid"
#: Pages that only a running scoreboard answers (a search with a query is answered in the browser).
DYNAMIC_PREFIXES = ("/search", "/compare", "/login", "/logout", "/settings", "/invite")
#: Query parameters whose every value the pages link to: each combination is a page of its own.
STATIC_PARAMETERS = frozenset({"page", "sort"})
#: The attributes that hold a link, as the templates write them (always double-quoted, escaped).
_LINK_RE = re.compile(r'(?P<before>\s(?P<attr>href|src|data-src|action)=")(?P<url>[^"]*)(?P<after>")')
#: Characters kept as they are in file names; every other byte becomes ``~XX``.
_PLAIN_NAME_RE = re.compile(rb"[A-Za-z0-9._-]")
#: File name endings of the media types the board serves (others keep the name the route has).
EXTENSIONS = {
    "text/html": ".html",
    "application/json": ".json",
    "text/csv": ".csv",
    "text/plain": ".txt",
    "image/svg+xml": ".svg",
    "image/png": ".png",
    "image/webp": ".webp",
    "video/mp4": ".mp4",
}
NOTICE = (
    "This is a static mirror of a palaestra scoreboard, exported on {day}. Its pages, charts, videos and "
    "downloads are all here, and its search works in your browser. Comparing evaluations on one chart, "
    "changing a chart's settings and signing in need the live scoreboard (palaestra server), so they are "
    "not available in the mirror."
)


@dataclass
class MirrorReport:
    """What an export wrote."""

    destination: Path
    pages: int = 0
    files: int = 0
    bytes: int = 0
    #: links and forms that lead to :data:`NOTICE_PAGE` instead of a page of their own
    dynamic_links: int = 0
    #: targets the board itself answered with an error (written as answered, so links still resolve)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"Wrote a static mirror of {self.pages} pages and {self.files - self.pages} other files "
            f"({self.bytes} bytes) into {self.destination}; open {self.destination / 'index.html'} or serve "
            "the folder with any static file server."
        )
        if self.errors:
            shown = ", ".join(self.errors[:5]) + (", ..." if len(self.errors) > 5 else "")
            text += (
                f" {len(self.errors)} of the board's links answer an error on the board itself too, mirrored "
                f"as answered: {shown}."
            )
        return text


def export_static(config: ServerConfig, destination: Path) -> MirrorReport:
    """Write the board of ``config`` as a static website into ``destination`` (new or empty)."""
    destination = Path(destination).expanduser().absolute()
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise ConfigurationError(
            f"The mirror's folder {destination} is not empty: pass a new or empty folder (an export never "
            "overwrites files)"
        )
    destination.mkdir(parents=True, exist_ok=True)
    from palaestra.scoreboard.server.app import create_app

    frozen = config.with_overrides(
        read_only=True, gc_interval_s=0, migrate_on_start=False, render_env_pictures=False
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette's note on httpx versions, not the user's concern
        from fastapi.testclient import TestClient

    access = logging.getLogger(ACCESS_LOGGER)
    level = access.level
    access.setLevel(logging.WARNING)  # one line per file written is noise; the summary says what was
    try:
        with TestClient(create_app(frozen), base_url=config.public_url or MIRROR_BASE_URL) as client:
            crawler = _Crawler(client, destination)
            crawler.write_notice()
            crawler.crawl("/")
            crawler.write_search()
    finally:
        access.setLevel(level)
    (destination / ".nojekyll").write_bytes(b"")  # GitHub Pages: serve names as they are
    return crawler.report


# -- names -------------------------------------------------------------------------------------------


def _escaped(text: str) -> str:
    """``text`` as a portable file name: every byte but letters, digits, ``.``, ``_`` and ``-`` as ``~XX``."""
    return "".join(
        chr(b) if _PLAIN_NAME_RE.match(bytes([b])) else f"~{b:02X}" for b in text.encode("utf-8")
    )


def file_name(path: str, query: str, media_type: str) -> str:
    """The mirror's file (relative, ``/``-separated) for the answer to ``GET path?query`` of ``media_type``.

    ``/`` is ``index.html``; ``/envs/CartPole-v0`` is ``envs/CartPole-v0.html``; a query is part of the
    name (``users~3Fsort~3Dname.html``), except on ``/assets/`` where it only busts caches.
    """
    segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
    if not segments or path.endswith("/"):
        segments.append("index")
    if path.startswith("/assets/"):
        query = ""
    last = segments[-1] + (f"?{query}" if query else "")
    names = [_escaped(s) for s in segments[:-1]] + [_escaped(last)]
    extension = EXTENSIONS.get(media_type)
    guessed = mimetypes.guess_type(segments[-1])[0]
    if extension and (query or guessed != media_type):
        names[-1] += extension
    return "/".join(names)


def _query_of(query: str) -> str | None:
    """The query as the mirror names it (sorted), or ``None`` if it holds a dynamic setting."""
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(key not in STATIC_PARAMETERS for key, _ in pairs):
        return None
    return urlencode(sorted(pairs))


def _is_dynamic(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in DYNAMIC_PREFIXES)


def page_links(text: str) -> list[str]:
    """Every link (``href``, ``src``, ``data-src``, ``action``) of a page, unescaped."""
    return [html.unescape(m.group("url")) for m in _LINK_RE.finditer(text)]


# -- the crawl ---------------------------------------------------------------------------------------


class _Crawler:
    """Fetches each target once, writes it, and rewrites the pages' links to the files written."""

    def __init__(self, client: Any, destination: Path) -> None:
        self.client = client
        self.destination = destination
        self.base = str(client.base_url).rstrip("/")
        self.names: dict[str, str] = {}  # target (path?query) -> file name
        self.taken: set[str] = {NOTICE_PAGE}
        self.pending: deque[str] = deque()  # pages written as answered, their links not yet rewritten
        self.report = MirrorReport(destination)
        self.search_entries: list[dict[str, str]] = []

    def crawl(self, start: str) -> None:
        self.file_of(start)
        while self.pending:
            name = self.pending.popleft()
            path = self.destination / name
            path.write_text(self.rewrite(path.read_text(encoding="utf-8"), name), encoding="utf-8")

    def write_notice(self) -> None:
        """:data:`NOTICE_PAGE`, rendered with the pages' own template (links rewritten like theirs)."""
        from palaestra.scoreboard.server.web import assets
        from palaestra.scoreboard.server.web.render import ENVIRONMENT

        day = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        text = ENVIRONMENT.get_template("error.html").render(
            title="Not available in the mirror",
            message=NOTICE.format(day=day),
            nav="",
            vendor_available=assets.vendor_available(),
            read_only=True,
            user=None,
            csrf_token="",
            request_path="/",
            request_target="/",
        )
        self._write(NOTICE_PAGE, text.encode("utf-8"))
        self.report.pages += 1
        self.pending.append(NOTICE_PAGE)

    def file_of(self, target: str) -> str:
        """The file of ``target`` (a path and query of the board), fetched and written on first use."""
        known = self.names.get(target)
        if known is not None:
            return known
        path, _, query = target.partition("?")
        response = self.client.get(target, follow_redirects=True)
        media_type = response.headers.get("content-type", "application/octet-stream").split(";")[0].strip()
        name = self._unique(file_name(path, query, media_type))
        self.names[target] = name
        # an env without a picture answers 404 with a placeholder image: what its page shows, no fault
        if response.status_code >= 400 and not media_type.startswith("image/"):
            logger.debug("The board answered %s to GET %s; mirrored as answered", response.status_code, target)
            self.report.errors.append(f"{target} ({response.status_code})")
        self._write(name, response.content)
        if media_type == "text/html":
            self.report.pages += 1
            self.pending.append(name)
            if response.status_code == 200 and not query:
                self._index(path, name, response.text)
        return name

    def _index(self, path: str, name: str, text: str) -> None:
        """Add the page at ``path`` (written as ``name``) to the search index if it is an env, an
        algorithm or a user page; its label is the page's own title."""
        for kind, prefix in SEARCHED_PAGES:
            if path.startswith(prefix) and not path.endswith("/picture"):
                found = _TITLE_RE.search(text)
                label = html.unescape(found.group(1)) if found else unquote(path[len(prefix) :])
                label = label.removeprefix("Algorithm ").removeprefix("User ")
                self.search_entries.append({"kind": kind, "id": unquote(path[len(prefix) :]), "label": label, "url": name})
                return

    def write_search(self) -> None:
        """The index of the mirror's search page, and its script added to that page."""
        if SEARCH_PATH not in self.names:
            return
        index = json.dumps(self.search_entries, ensure_ascii=True).replace("<", "\\u003c")
        self._write(SEARCH_INDEX, f"window.palaestraMirrorSearch = {index};\n".encode())
        page = self.names[SEARCH_PATH]
        script = _relative(self.file_of(SEARCH_SCRIPT), page)
        tags = f'<script src="{_relative(SEARCH_INDEX, page)}"></script>\n<script src="{script}"></script>\n'
        path = self.destination / page
        path.write_text(path.read_text(encoding="utf-8").replace("</body>", tags + "</body>", 1), encoding="utf-8")

    def _unique(self, name: str) -> str:
        """``name``, or ``name`` with ``~N`` before its ending if another target has it already."""
        candidate, n = name, 1
        stem, dot, ending = name.rpartition(".")
        while candidate in self.taken:
            n += 1
            candidate = f"{stem}~{n}{dot}{ending}" if dot else f"{name}~{n}"
        self.taken.add(candidate)
        return candidate

    def _write(self, name: str, data: bytes) -> None:
        path = self.destination / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.report.files += 1
        self.report.bytes += len(data)

    def rewrite(self, text: str, page: str) -> str:
        """``text`` (the page written as ``page``) with each link to the board made relative."""

        def replace(match: re.Match[str]) -> str:
            url = html.unescape(match.group("url"))
            new = self.link(url, page, form=match.group("attr") == "action")
            return match.group("before") + html.escape(new, quote=True) + match.group("after")

        return _LINK_RE.sub(replace, text)

    def link(self, url: str, page: str, form: bool = False) -> str:
        """``url`` as written on ``page`` of the mirror: relative to it, or unchanged if not the board's."""
        if url.startswith(self.base):
            url = url[len(self.base) :] or "/"
        parts = urlsplit(url)
        if parts.scheme or parts.netloc or not parts.path.startswith("/"):
            return url  # another site's, an in-page anchor (#...), data: or already relative
        query = "" if parts.path.startswith("/assets/") else _query_of(parts.query)  # ?v=: a cache-buster
        if form and parts.path == SEARCH_PATH:
            return _relative(self.file_of(SEARCH_PATH), page)  # answered in the browser
        if form or query is None or _is_dynamic(parts.path):
            self.report.dynamic_links += 1
            return _relative(NOTICE_PAGE, page)
        target = parts.path + (f"?{query}" if query else "")
        fragment = f"#{parts.fragment}" if parts.fragment else ""
        return _relative(self.file_of(target), page) + fragment


def _relative(name: str, page: str) -> str:
    """File ``name`` as a link from file ``page`` (both relative to the mirror's root)."""
    return posixpath.relpath(name, posixpath.dirname(page) or ".")

