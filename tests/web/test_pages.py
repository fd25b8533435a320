"""The web pages over HTTP, without a browser: the app served by uvicorn in a thread on its own
database, and the session's real server filled by real uploads (conftest.py)."""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import re
import secrets
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.core.config import resolve_config
from palaestra.scoreboard.server.core.state import build_state
from palaestra.scoreboard.server.evaluations import index_stats
from palaestra.scoreboard.server.evaluations.derive import curves_of
from palaestra.scoreboard.server.tables import scores as m
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.web import assets
from palaestra.solved_stats import ranking_mean, score_from_merged
from tests.server_process import serving
from tests.web.web_helpers import HOSTILE_NAME, Uploads

EVAL_LINK_RE = re.compile(r'<td(?: class="opt(?: id)?")?><a href="/evaluations/(eval_\w+)"[ >]')
N_EVALUATIONS = 30


def _store_evaluations(state: Any) -> dict[str, Any]:
    """30 CartPole-v1 evaluations: evaluation i solves after 10*i episodes when i is even."""
    t0 = 1.7e9
    now = datetime.now(timezone.utc)
    with state.db.write() as s:
        alice, bob = User(name="alice"), User(name="bob")
        s.add_all([alice, bob])
        s.flush()
        hostile = m.Algorithm(id="alg_hostile", user_seq=bob.seq, name=HOSTILE_NAME, writeup="javascript:alert(3)")
        plain = m.Algorithm(id="alg_plain", user_seq=alice.seq, name="plain", writeup="https://example.org/plain")
        s.add_all([hostile, plain])
        s.flush()
        ids = []
        for i in range(N_EVALUATIONS):
            before = 10 * i if i % 2 == 0 else None
            n = (before or 0) + 150
            rewards = [(10.0 if before is None or k < before else 500.0) + i for k in range(n)]
            lengths = [int(r) for r in rewards]
            stamps = [t0 + k + 1.0 for k in range(n)]
            stats = score_from_merged(lengths, rewards, None, stamps, t0, 100, 475.0)
            key = f"test/eval_{i:02d}.json"
            doc = {"episode_lengths": lengths, "episode_rewards": rewards, "episode_types": ["t"] * n,
                   "timestamps": stamps, "initial_reset_timestamp": t0, "env_id": "CartPole-v1"}
            state.store.put_bytes(key, json.dumps(doc).encode())
            evaluation = m.Evaluation(
                id=f"eval_{i:02d}", user_seq=(alice if i % 2 else bob).seq, env_id="CartPole-v1", env_listed=True,
                algorithm_seq=(hostile if i == 4 else plain).seq, trials=100, reward_threshold=475.0,
                solved=stats["episode_t_value"] is not None, episode_batch_key=key,
                curves=curves_of(doc, 100, 475.0),  # what ingest derives from the batch
                created=now - timedelta(minutes=N_EVALUATIONS - i), **stats,
                ranking_mean=ranking_mean(stats["mean"], stats["episodes_mean"]),
            )
            s.add(evaluation)
            s.flush()
            m.upsert_env_stats(s, "CartPole-v1", "classic_control", True, stats["mean"], evaluation.solved,
                               evaluation.id, evaluation.created)
            index_stats.add_evaluation(s, evaluation.seq, evaluation.user_seq, evaluation.algorithm_seq,
                                       "CartPole-v1", evaluation.solved)
            ids.append(evaluation.id)
    return {"ids": ids}


PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


@contextlib.contextmanager
def _database_url(kind: str) -> Iterator[str | None]:
    """``None`` (the embedded SQLite) or a fresh PostgreSQL database, dropped afterwards."""
    if kind == "sqlite":
        yield None
        return
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)
    except Exception as e:
        pytest.skip(f"no PostgreSQL at {PG_ADMIN_URL}: {e}")
    name = f"palaestra_web_{secrets.token_hex(6)}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def _served(state: Any) -> Iterator[httpx.Client]:
    """A client of the app on ``state``, served from a thread of this process (tests.server_process)."""
    with serving(state) as url, httpx.Client(base_url=url, follow_redirects=True, timeout=30) as client:
        yield client


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def app_client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[httpx.Client, dict[str, Any]]]:
    """The app on SQLite and on PostgreSQL, with 30 evaluations stored directly."""
    with _database_url(request.param) as database_url:
        config = resolve_config(data_dir=tmp_path_factory.mktemp("web-app"), database_url=database_url)
        state = build_state(config)
        info = _store_evaluations(state)
        info["state"] = state
        with _served(state) as client:
            yield client, info
        state.close()


def _eval_ids(html: str) -> list[str]:
    return EVAL_LINK_RE.findall(html)


def test_home_page_groups_and_counts(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    r = client.get("/")
    assert r.status_code == 200
    assert "Classic control" in r.text and "Toy text" in r.text
    row = re.search(r'<a href="/envs/CartPole-v1">CartPole-v1</a>.*?</tr>', r.text, re.S)
    assert row is not None
    assert f'<td class="num">{N_EVALUATIONS}</td>' in row.group(0)
    assert "solved after 0 episodes" in row.group(0)


def test_env_page_rule_leaderboard_order_and_pages(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    r = client.get("/envs/CartPole-v1")
    assert r.status_code == 200
    assert "CartPole-v1 defines solving as an average reward of 475.0 over 100 consecutive episodes." in r.text
    first = _eval_ids(r.text)
    assert len(first) == 25
    # solved (even i) by episodes before solve, then unsolved by best mean (higher i, higher mean)
    solved = [f"eval_{i:02d}" for i in range(0, N_EVALUATIONS, 2)]
    unsolved = [f"eval_{i:02d}" for i in range(N_EVALUATIONS - 1, 0, -2)]
    second = _eval_ids(client.get("/envs/CartPole-v1?page=2").text)
    assert first + second == solved + unsolved
    assert 'rel="next" href="/envs/CartPole-v1?sort=episodes&amp;page=2"' in r.text
    assert _eval_ids(client.get("/envs/CartPole-v1?page=999").text) == second  # clamped to the last page
    assert _eval_ids(client.get("/envs/CartPole-v1?sort=bogus").text) == first

    newest = _eval_ids(client.get("/envs/CartPole-v1?sort=submitted").text)
    assert newest[:3] == ["eval_29", "eval_28", "eval_27"]
    by_mean = _eval_ids(client.get("/envs/CartPole-v1?sort=mean").text)
    assert by_mean[0] == "eval_28"  # 500 + 28 in its best window
    assert _eval_ids(client.get("/envs/CartPole-v1?page=0").text) == first
    assert _eval_ids(client.get("/envs/CartPole-v1?page=abc").text) == first


def test_hostile_strings_are_escaped(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    for path in ("/envs/CartPole-v1", "/evaluations/eval_04", "/algorithms/alg_hostile", "/users/bob"):
        html = client.get(path).text
        assert "<script>alert(1)" not in html and "<img src=x" not in html, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in html, path
        assert 'href="javascript:' not in html, path
    page = client.get("/evaluations/eval_04").text
    assert "javascript:alert(3)" in page  # shown as text, not as a link


def test_security_headers(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    r = client.get("/envs/CartPole-v1")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    "path",
    ["/envs/Nope-v0", "/evaluations/eval_nope", "/users/nobody", "/algorithms/alg_nope", "/benchmarks/Nope-v0",
     "/benchmark_runs/brun_nope"],
)
def test_unknown_objects_are_404_pages(app_client: tuple[httpx.Client, dict[str, Any]], path: str) -> None:
    client, _ = app_client
    r = client.get(path)
    assert r.status_code == 404
    assert "<h1>Not found</h1>" in r.text


def test_evaluation_page_and_downloads(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    html = client.get("/evaluations/eval_02").text
    assert '<dd id="solved">yes</dd>' in html
    data = json.loads(re.search(r'<script type="application/json" id="curves-data">(.*?)</script>', html, re.S)[1])
    assert len(data["episode"]) == 170 and data["threshold"] == 475.0 and data["trials"] == 100
    assert data["reward_mean"][-1] == pytest.approx(502.0)

    batch = client.get("/evaluations/eval_02/episode_batch.json")
    assert batch.status_code == 200 and batch.json()["env_id"] == "CartPole-v1"
    rows = list(csv.reader(io.StringIO(client.get("/evaluations/eval_02/episodes.csv").text)))
    assert rows[0][:4] == ["episode", "type", "length", "reward"] and len(rows) == 171
    assert client.get("/evaluations/eval_02/videos/nothing.mp4").status_code == 404


def test_user_and_algorithm_pages(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    alice = client.get("/users/alice").text
    assert len(_eval_ids(alice)) == N_EVALUATIONS // 2
    plain = client.get("/algorithms/alg_plain").text
    assert "Algorithm plain" in plain and 'href="https://example.org/plain"' in plain
    assert len(_eval_ids(plain)) == 25 and "page 1 of 2" in plain


def _table_rows(html: str, table_class: str) -> list[str]:
    """The body rows of the page's ``<table class=table_class>``, as HTML."""
    body = html.split(f'<table class="{table_class}">', 1)[1].split("</tbody>", 1)[0]
    return body.split("<tr>")[2:]  # past the header row


def test_users_index_counts_and_sorts(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    html = client.get("/users").text
    assert 'aria-current="page">Users</a>' in html
    rows = {re.search(r'href="/users/([^"]+)"', r)[1]: r for r in _table_rows(html, "users")}  # type: ignore[index]
    # alice uploaded the odd evaluations (none solved), bob the even ones (all solved)
    assert re.findall(r'<td class="num">(\d+)</td>', rows["alice"]) == ["15", "0"]
    assert re.findall(r'<td class="num">(\d+)</td>', rows["bob"]) == ["15", "15"]
    by_name = [re.search(r'href="/users/([^"]+)"', r)[1] for r in _table_rows(client.get("/users?sort=name").text, "users")]  # type: ignore[index]
    assert by_name == sorted(by_name)
    recent = _table_rows(client.get("/users?sort=recent").text, "users")
    assert 'href="/users/alice"' in recent[0], "alice uploaded eval_29, the newest"


def test_users_index_is_paged_like_the_leaderboards(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, info = app_client
    with info["state"].db.write() as s:
        if s.scalar(sa.select(sa.func.count()).select_from(User).where(User.name.like("pager-%"))) == 0:
            s.add_all([User(name=f"pager-{i:02d}") for i in range(30)])
    first = client.get("/users?sort=name")
    assert "page 1 of 2" in first.text and 'rel="next" href="/users?sort=name&amp;page=2"' in first.text
    second = client.get("/users?sort=name&page=2").text
    assert len(_table_rows(first.text, "users")) == 25 and _table_rows(second, "users")
    assert not set(_table_rows(first.text, "users")) & set(_table_rows(second, "users"))
    assert _table_rows(client.get("/users?sort=name&page=99").text, "users") == _table_rows(second, "users")
    assert client.get("/users?sort=bogus").status_code == 200


def test_algorithms_index(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    html = client.get("/algorithms").text
    rows = _table_rows(html, "algorithms")
    assert 'href="/algorithms/alg_plain">plain</a>' in rows[0], "most evaluations first"
    assert re.findall(r'<td class="num">(\d+)</td>', rows[0]) == [str(N_EVALUATIONS - 1), "1"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rows[1] and "<script>alert(1)" not in html
    by_name = client.get("/algorithms?sort=name").text
    assert by_name.index("alg_hostile") < by_name.index("alg_plain")  # "<" sorts before "p"


def test_home_page_feed_of_recent_uploads(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    feed = client.get("/").text.split('<section id="recent">', 1)[1].split("</section>", 1)[0]
    items = re.findall(r'<a href="/evaluations/(eval_\d+)">', feed)
    assert items == [f"eval_{i:02d}" for i in range(N_EVALUATIONS - 1, N_EVALUATIONS - 11, -1)]
    assert re.search(r"solved after \d+ episodes", feed) and "± " in feed  # a solved one and an unsolved one


def _hits(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<li class="hit (\w+)">.*?<a href="[^"]+">([^<]+)</a>', html)


def test_one_search_box_finds_envs_algorithms_and_users(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    assert 'action="/search"' in client.get("/").text
    hits = _hits(client.get("/search", params={"q": "cartpole-v1"}).text)
    assert hits[0] == ("env", "CartPole-v1")
    assert _hits(client.get("/search", params={"q": "ALIC"}).text) == [("user", "alice")]  # any case
    assert ("algorithm", "plain") in _hits(client.get("/search", params={"q": "plain"}).text)
    assert _hits(client.get("/search", params={"q": "%"}).text) == [], "% is a character, not a wildcard"
    assert _hits(client.get("/search", params={"q": "_", "kind": "user"}).text) == [], "as is _"
    page = client.get("/search", params={"q": "a", "kind": "user"}).text
    assert {kind for kind, _ in _hits(page)} == {"user"} and ("user", "alice") in _hits(page)
    assert "Nothing matches" in client.get("/search", params={"q": "zzzz-nothing"}).text
    assert client.get("/search", params={"q": "x" * 101}).status_code == 400
    # many hits are paged
    first = client.get("/search", params={"q": "-v"}).text
    assert "page 1 of" in first and len(_hits(first)) == 25
    second = client.get("/search", params={"q": "-v", "page": "2"}).text
    assert _hits(second) and not set(_hits(first)) & set(_hits(second))


def test_compare_and_across_runs_on_both_databases(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    page = client.get("/algorithms/alg_plain", params={"stat": "iqm"}).text
    across = json.loads(html.unescape(re.search(r'id="across-data">(.*?)</script>', page, re.S)[1]))
    # every evaluation but eval_04 (the hostile algorithm's), pooled up to episode 149 (the shortest run)
    assert across["runs"] == N_EVALUATIONS - 1 and across["x"][-1] == 149 and across["metric"] == "iqm"
    assert all(lo <= v <= hi for lo, v, hi in zip(across["low"], across["value"], across["high"], strict=True))
    assert re.search(r'<option value="CartPole-v1" selected>CartPole-v1 \(29 evaluations\)</option>', page)
    compared = client.get("/compare", params=[("e", "eval_00"), ("e", "eval_04"), ("e", "eval_nope")])
    assert compared.status_code == 200 and "<code>eval_nope</code>" in compared.text
    data = json.loads(html.unescape(re.search(r'id="compare-data">(.*?)</script>', compared.text, re.S)[1]))
    assert [s["id"] for s in data["series"]] == ["eval_00", "eval_04"] and data["threshold"] == 475.0


def test_pages_work_without_vendor_assets(
    app_client: tuple[httpx.Client, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    client, _ = app_client
    monkeypatch.setattr(assets, "VENDOR_DIR", tmp_path / "no-vendor")
    r = client.get("/evaluations/eval_02")
    assert r.status_code == 200
    assert "Charts are unavailable" in r.text
    assert "/assets/vendor/" not in r.text
    assert "Best 100-episode mean" in r.text  # the numbers are still there


def test_own_static_assets_are_served(app_client: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = app_client
    for name in ("palaestra.css", "common.js", "charts.js", "compare.js", "players.js"):
        assert client.get(f"/assets/{name}").status_code == 200
    assert client.get("/assets/vendor/nothing.js").status_code == 404


# -- the real server, filled by real uploads --------------------------------------------------------------


def test_uploaded_evaluations_over_http(web_server: Any, uploads: Uploads) -> None:
    with httpx.Client(base_url=web_server.url, timeout=30) as client:
        html = client.get("/envs/CartPole-v0").text
        ids = _eval_ids(html)
        assert ids[:2] == uploads.cartpole[:2], "the solved ones first, fewest episodes before solve first"
        # then the unsolved ones by their best 100-episode mean, or the mean of a shorter run's episodes
        scores = [client.get(f"/v1/evaluations/{i}").json()["score"] for i in ids[2:]]
        ranking = [s["mean"] if s["mean"] is not None else s["episodes_mean"] for s in scores]
        assert ranking == sorted(ranking, reverse=True)
        # so the benchmark run's 11 perfect episodes rank above the random agent's 2,500 steps
        perfect = [i for i, s in zip(ids[2:], scores, strict=True) if s["number_episodes"] < 100 and s["episodes_mean"] == 200]
        assert perfect and ids.index(perfect[0]) < ids.index(uploads.cartpole[2])
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
        assert "balance-agent" in html  # a benchmark evaluation shows its run's algorithm

        page = client.get(f"/evaluations/{uploads.cartpole[0]}").text
        # the conditions in plain words (issue 36: "Conditions:" alone was jargon)
        assert re.search(r'<p id="conditions">How the environment was set up: <strong>[^<]+</strong>\. '
                         r"Runs set up differently are ranked and drawn apart\.</p>", page)
        video_url = re.search(r'<video [^>]*src="([^"]+\.mp4)"', page)[1]
        head = client.get(video_url, headers={"Range": "bytes=0-99"})
        assert head.status_code == 206 and head.headers["content-type"] == "video/mp4"
        assert len(head.content) == 100 and head.content[4:8] == b"ftyp"

        page = client.get(f"/evaluations/{uploads.frozenlake}").text
        recording_url = re.search(r'class="terminal-player" data-src="([^"]+)"', page)[1]
        recording = client.get(recording_url)
        assert recording.headers["content-type"].startswith("application/json")
        assert recording.json()["version"] == 1
        assert "FHFH" in page  # the no-JavaScript fallback frame

        run = client.get(f"/benchmark_runs/{uploads.benchmark_runs[0]}")
        assert run.status_code == 200 and "CartPole-v0" in run.text and "Pendulum-v1" in run.text
        assert client.get("/benchmarks").status_code == 200


def test_blobs_in_s3_are_served_from_this_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With S3 storage the pages still link to this server (the CSP allows no other origin for media)."""
    pytest.importorskip("boto3")
    moto_server = pytest.importorskip("moto.server")
    import boto3

    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{server._server.server_port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="web-test")
        config = resolve_config(data_dir=tmp_path, storage="s3://web-test/sb", s3_endpoint_url=endpoint)
        state = build_state(config)
        try:
            with state.db.write() as s:
                user = User(name="s3-user")
                s.add(user)
                s.flush()
                state.store.put_bytes("v/video.mp4", b"\x00\x00\x00\x18ftypisom" + bytes(200))
                s.add(m.Evaluation(
                    id="eval_s3", user_seq=user.seq, env_id="CartPole-v1", videos=[{
                        "name": "video.mp4", "metadata_name": "video.meta.json", "episode_id": 0,
                        "content_type": "video/mp4", "size": 212, "key": "v/video.mp4", "metadata_key": "v/none",
                    }],
                ))
            with _served(state) as client:
                page = client.get("/evaluations/eval_s3").text
                assert 'src="/evaluations/eval_s3/videos/video.mp4"' in page
                part = client.get("/evaluations/eval_s3/videos/video.mp4", headers={"Range": "bytes=4-11"})
                assert part.status_code == 206 and part.content == b"ftypisom"
                assert client.get("/evaluations/eval_s3/videos/video.meta.json").status_code == 404
        finally:
            state.close()
    finally:
        server.stop()
