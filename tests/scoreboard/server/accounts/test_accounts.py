"""Accounts: passwords set by the admin command or an invite link, sign-in sessions and their cookies,
CSRF refusals, and the keys on /settings/profile (real server processes; the browser is tests/web)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from palaestra.scoreboard.server.accounts import sessions as accounts
from palaestra.scoreboard.server.core.config import resolve_config
from palaestra.scoreboard.server.core.state import open_database
from palaestra.scoreboard.server.web import account_routes
from tests.scoreboard.server_helpers import ScoreboardServer, error_of, form_token, signed_in_client
from tests.server_process import InProcessServer

PASSWORD = "correct horse battery"


def _name(prefix: str = "u") -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def _users_create(server: ScoreboardServer, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "palaestra", "users", "create", *args],
        input=stdin, env=server.env, capture_output=True, text=True, timeout=120,
    )


def _sign_in(client: httpx.Client, name: str, password: str, next_path: str | None = None) -> httpx.Response:
    token = form_token(client.get("/login").text)
    data = {"name": name, "password": password, "csrf_token": token}
    if next_path is not None:
        data["next"] = next_path
    return client.post("/login", data=data)


def _key_id(server: ScoreboardServer, name: str) -> str:
    """The id of user ``name``'s first key, as ``palaestra users list --json`` shows it."""
    keys = json.loads(server.palaestra("users", "list", "--json").stdout)
    return next(str(k["key_id"]) for k in keys if k["user"] == name)


def _set_cookie(response: httpx.Response, name: str) -> str:
    cookies = [c for c in response.headers.get_list("set-cookie") if c.startswith(f"{name}=")]
    assert len(cookies) == 1, response.headers.get_list("set-cookie")
    return cookies[0]


# -- the admin command -------------------------------------------------------------------------------------


def test_users_create_password_stdin_lets_the_user_sign_in_and_the_key_is_still_the_last_line(
    scoreboard_server: ScoreboardServer,
) -> None:
    name = _name()
    r = _users_create(scoreboard_server, name, "--password-stdin", stdin=PASSWORD + "\n")
    assert r.returncode == 0, r.stderr
    assert f"sign in at {scoreboard_server.url}/login" in r.stdout
    key = r.stdout.strip().splitlines()[-1]
    assert key.startswith("pal_")
    with httpx.Client(base_url=scoreboard_server.url) as c:
        assert _sign_in(c, name, "not the password").status_code == 401
        r = _sign_in(c, name, PASSWORD)
        assert r.status_code == 303 and r.headers["location"] == "/settings/profile"
        page = c.get("/settings/profile").text
    assert key[:10] in page, "the key the command printed is listed (by its first characters)"
    keys = json.loads(scoreboard_server.palaestra("users", "list", "--json").stdout)
    assert [k["password_set"] for k in keys if k["user"] == name] == [True]
    assert any(not k["password_set"] for k in keys if k["user"] == "tester")
    assert f"{name}\t" in (listed := scoreboard_server.palaestra("users", "list").stdout)
    assert next(line for line in listed.splitlines() if line.startswith(name)).endswith("\tpassword")


def test_users_create_refuses_a_short_password_or_a_prompt_without_a_terminal_and_creates_nothing(
    scoreboard_server: ScoreboardServer,
) -> None:
    name = _name()
    r = _users_create(scoreboard_server, name, "--password-stdin", stdin="short\n")
    assert r.returncode != 0 and "at least 8 characters" in r.stderr
    r = _users_create(scoreboard_server, name, "--password", stdin=PASSWORD + "\n")
    assert r.returncode != 0 and "--password-stdin" in r.stderr
    assert name not in scoreboard_server.palaestra("users", "list").stdout


def test_an_invite_link_sets_the_password_once(scoreboard_server: ScoreboardServer) -> None:
    name = _name()
    r = _users_create(scoreboard_server, name, "--invite")
    assert r.returncode == 0, r.stderr
    link = re.search(r"(http://\S+/invite/\S+)", r.stdout)
    assert link, r.stdout
    with httpx.Client() as c:
        page = c.get(link.group(1))
        assert page.status_code == 200 and name in page.text
        token = form_token(page.text)
        differ = c.post(link.group(1), data={"csrf_token": token, "password": PASSWORD, "password_again": "x"})
        assert differ.status_code == 400 and "differ" in differ.text
        r = c.post(link.group(1), data={"csrf_token": token, "password": PASSWORD, "password_again": PASSWORD})
        assert r.status_code == 303 and r.headers["location"] == "/settings/profile"
        assert c.get(f"{scoreboard_server.url}/settings/profile").status_code == 200, "signed in by the invite"
        again = c.get(link.group(1))
        assert again.status_code == 404 and "used already" in again.text
    with httpx.Client(base_url=scoreboard_server.url) as c:
        assert _sign_in(c, name, PASSWORD).status_code == 303


# -- sessions and cookies ------------------------------------------------------------------------------------


def test_the_session_cookie_is_httponly_samesite_lax_and_not_secure_over_plain_http(
    scoreboard_server: ScoreboardServer,
) -> None:
    name = _name()
    scoreboard_server.create_user(name, PASSWORD)
    with httpx.Client(base_url=scoreboard_server.url) as c:
        token = form_token(c.get("/login").text)
        # a proxy header from a client the server was not told to trust changes nothing
        r = c.post("/login", data={"name": name, "password": PASSWORD, "csrf_token": token},
                   headers={"X-Forwarded-Proto": "https"})
    cookie = _set_cookie(r, "palaestra_session").lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/" in cookie
    assert "secure" not in cookie
    assert "max-age=1209600" in cookie, "a session lasts 14 days"


def test_behind_a_trusted_proxy_that_speaks_https_the_cookie_is_secure(scoreboard_factory: object) -> None:
    server: ScoreboardServer = scoreboard_factory(args=["--trust-proxy"])  # type: ignore[operator]
    server.create_user("proxied", PASSWORD)
    with httpx.Client(base_url=server.url, headers={"X-Forwarded-Proto": "https"}) as c:
        page = c.get("/login")
        form_cookie = _set_cookie(page, "palaestra_form")
        assert "secure" in form_cookie.lower()
        # (httpx keeps a Secure cookie for https URLs: here the proxy's leg is plain http, so send it by hand)
        r = c.post("/login", data={"name": "proxied", "password": PASSWORD, "csrf_token": form_token(page.text)},
                   headers={"Cookie": form_cookie.split(";")[0]})
    cookie = _set_cookie(r, "palaestra_session").lower()
    assert "secure" in cookie and "httponly" in cookie and "samesite=lax" in cookie


def test_with_an_https_public_url_the_cookie_is_secure(scoreboard_factory: object) -> None:
    server: ScoreboardServer = scoreboard_factory(env={"PALAESTRA_PUBLIC_URL": "https://gym.example.org"})  # type: ignore[operator]
    server.create_user("public", PASSWORD)
    with httpx.Client(base_url=server.url) as c:
        page = c.get("/login")
        form_cookie = _set_cookie(page, "palaestra_form")
        r = c.post("/login", data={"name": "public", "password": PASSWORD, "csrf_token": form_token(page.text)},
                   headers={"Cookie": form_cookie.split(";")[0]})
    assert "secure" in form_cookie.lower() and "secure" in _set_cookie(r, "palaestra_session").lower()


def test_a_session_expires_and_signing_out_ends_it(in_process_factory: Callable[..., InProcessServer]) -> None:
    server = in_process_factory(PALAESTRA_SESSION_TTL_S="2")
    server.create_user("brief", PASSWORD)
    with httpx.Client(base_url=server.url) as c:
        r = _sign_in(c, "brief", PASSWORD)
        assert "max-age=2" in _set_cookie(r, "palaestra_session").lower()
        assert c.get("/settings/profile").status_code == 200
        server.clock.advance(1.5)
        assert c.get("/settings/profile").status_code == 200, "not expired yet"
        server.clock.advance(1)  # the browser still sends the cookie: the server refuses it
        r = c.get("/settings/profile")
        assert r.status_code == 303 and r.headers["location"].startswith("/login")
    with httpx.Client(base_url=server.url) as c:
        _sign_in(c, "brief", PASSWORD)
        cookie = c.cookies["palaestra_session"]
        token = form_token(c.get("/settings/profile").text)
        r = c.post("/logout", data={"csrf_token": token})
        assert r.status_code == 303
        assert "max-age=0" in _set_cookie(r, "palaestra_session").lower()
    # the old cookie, replayed after signing out, signs in nobody: the session row is gone
    with httpx.Client(base_url=server.url, cookies={"palaestra_session": cookie}) as c:
        assert c.get("/settings/profile").status_code == 303


def test_expired_sessions_are_deleted_at_the_next_sign_in(tmp_path: object) -> None:
    config = resolve_config(data_dir=str(tmp_path), environ={})
    db = open_database(config, migrate_now=True)
    try:
        from palaestra.scoreboard.server.accounts import auth

        auth.create_user(db, "ada")
        accounts.set_password(db, "ada", PASSWORD)
        user = accounts.authenticate(db, "ada", PASSWORD)
        assert user is not None and accounts.authenticate(db, "ada", "wrong password") is None
        assert accounts.authenticate(db, "nobody", PASSWORD) is None
        old = accounts.start_session(db, user, ttl_s=-1)
        assert accounts.session_user(db, old) is None, "an expired session signs in nobody"
        new = accounts.start_session(db, user, ttl_s=60)
        assert accounts.session_user(db, new) == user
        with db.read() as session:
            from palaestra.scoreboard.server.tables.accounts import WebSession

            assert session.query(WebSession).count() == 1, "the expired session row was deleted"
        accounts.set_password(db, "ada", "another long password")
        assert accounts.session_user(db, new) is None, "a new password signs every browser out"
    finally:
        db.dispose()


def test_sign_in_goes_back_only_to_a_page_of_this_server(scoreboard_server: ScoreboardServer) -> None:
    name = _name()
    scoreboard_server.create_user(name, PASSWORD)
    for target, expected in [("/users/x", "/users/x"), ("//evil.example/", "/settings/profile"),
                             ("https://evil.example/", "/settings/profile"), ("/\\evil.example", "/settings/profile")]:
        with httpx.Client(base_url=scoreboard_server.url) as c:
            assert _sign_in(c, name, PASSWORD, next_path=target).headers["location"] == expected


def test_the_sign_in_pages_own_sign_in_link_keeps_its_target_without_nesting(scoreboard_server: ScoreboardServer) -> None:
    with httpx.Client(base_url=scoreboard_server.url) as c:
        page = c.get("/login", params={"next": "/envs/CartPole-v1"}).text
        assert 'href="/login?next=/envs/CartPole-v1"' in page  # not /login?next=/login%3Fnext%3D...
        assert 'href="/login?next=/"' in c.get("/login", params={"next": "//evil.example/"}).text
        assert 'href="/login?next=/users%3Fq%3Da"' in c.get("/users", params={"q": "a"}).text  # other pages: themselves


# -- the 2017 hint URL and the profile's keys ------------------------------------------------------------


def test_the_2017_hint_url_leads_through_sign_in_back_to_the_profile(scoreboard_server: ScoreboardServer) -> None:
    name = _name()
    scoreboard_server.create_user(name, PASSWORD)
    with httpx.Client(base_url=scoreboard_server.url, follow_redirects=True) as c:
        page = c.get("/settings/profile")
        assert page.url.path == "/login" and page.url.params["next"] == "/settings/profile"
        r = c.post("/login", data={"name": name, "password": PASSWORD, "csrf_token": form_token(page.text)})
        assert r.url.path == "/settings/profile" and "API keys" in r.text
    # and the API's 401 names the page
    r = httpx.post(f"{scoreboard_server.url}/v1/files", json={"purpose": "episode_batch"},
                   headers={"Authorization": "Bearer pal_wrong"})
    assert f"{scoreboard_server.url}/settings/profile" in error_of(r, 401)["detail"]


def test_a_key_created_on_the_profile_uploads_until_it_is_revoked_there(in_process_server: InProcessServer) -> None:
    name, server = _name(), in_process_server
    server.create_user(name, PASSWORD)
    with signed_in_client(server.url, name, PASSWORD) as c:
        token = form_token(c.get("/settings/profile").text)
        page = c.post("/settings/profile/keys", data={"csrf_token": token})
        assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
        key = re.search(r'id="new-key-value">([^<]+)<', page.text)
        assert key, "the new key is shown once"
        key_id = re.search(r"New API key (key_\w+)", page.text)
        assert key_id
        assert key.group(1) not in c.get("/settings/profile").text, "and not again"
        api = {"Authorization": f"Bearer {key.group(1)}"}
        assert httpx.post(f"{server.url}/v1/files", json={"purpose": "episode_batch"}, headers=api).status_code == 201
        r = c.post(f"/settings/profile/keys/{key_id.group(1)}/revoke", data={"csrf_token": token})
        assert r.status_code == 303
        assert re.search(rf'id="key-{key_id.group(1)}" class="revoked"', c.get("/settings/profile").text)
        # this server forgets the key at once (the others on its database when their key cache expires)
        error_of(httpx.post(f"{server.url}/v1/files", json={"purpose": "episode_batch"}, headers=api), 401)


def test_a_user_cannot_revoke_another_users_key(scoreboard_server: ScoreboardServer) -> None:
    mallory, victim = _name("m"), _name("v")
    scoreboard_server.create_user(mallory, PASSWORD)
    victim_key = scoreboard_server.create_user(victim)
    victim_key_id = _key_id(scoreboard_server, victim)
    with scoreboard_server.signed_in_client(mallory, PASSWORD) as c:
        token = form_token(c.get("/settings/profile").text)
        r = c.post(f"/settings/profile/keys/{victim_key_id}/revoke", data={"csrf_token": token})
        assert r.status_code == 404
    assert httpx.post(f"{scoreboard_server.url}/v1/files", json={"purpose": "episode_batch"},
                      headers={"Authorization": f"Bearer {victim_key}"}).status_code == 201


# -- CSRF ------------------------------------------------------------------------------------------------------


POST_ROUTES = sorted(
    route.path for route in account_routes.router.routes if "POST" in getattr(route, "methods", set())
)


@pytest.mark.parametrize("token", [None, "0" * 64])
def test_every_form_refuses_a_post_without_its_sessions_csrf_token_and_changes_nothing(
    scoreboard_server: ScoreboardServer, token: str | None
) -> None:
    assert POST_ROUTES == ["/invite/{token}", "/login", "/logout", "/settings/profile/keys",
                           "/settings/profile/keys/{key_id}/revoke"]
    name = _name()
    scoreboard_server.create_user(name, PASSWORD)
    key_id = _key_id(scoreboard_server, name)
    r = _users_create(scoreboard_server, name, "--invite")
    invite_path = re.search(r"http://\S+(/invite/\S+)", r.stdout).group(1)  # type: ignore[union-attr]
    data = {} if token is None else {"csrf_token": token}
    with scoreboard_server.signed_in_client(name, PASSWORD) as c:
        before = c.get("/settings/profile").text
        for path, extra in [
            ("/settings/profile/keys", {}),
            (f"/settings/profile/keys/{key_id}/revoke", {}),
            ("/logout", {}),
            ("/login", {"name": name, "password": PASSWORD}),
            (invite_path, {"password": "a new password", "password_again": "a new password"}),
        ]:
            r = c.post(path, data={**data, **extra})
            assert r.status_code == 403, path
            assert "Form refused" in r.text and "Nothing was changed" in r.text
        after = c.get("/settings/profile")
        assert after.status_code == 200, "still signed in"
        assert after.text.count('class="state">active') == before.count('class="state">active') == 2
    with httpx.Client(base_url=scoreboard_server.url) as fresh:
        assert fresh.get(invite_path).status_code == 200, "the invite is unused"
        assert _sign_in(fresh, name, PASSWORD).status_code == 303, "the password is unchanged"


def test_a_signed_in_forms_token_is_its_sessions_own(scoreboard_server: ScoreboardServer) -> None:
    """Another session's token (say, an attacker's own) does not pass."""
    name = _name()
    scoreboard_server.create_user(name, PASSWORD)
    with scoreboard_server.signed_in_client(name, PASSWORD) as mine, \
            scoreboard_server.signed_in_client(name, PASSWORD) as theirs:
        their_token = form_token(theirs.get("/settings/profile").text)
        assert mine.post("/settings/profile/keys", data={"csrf_token": their_token}).status_code == 403
        assert form_token(mine.get("/settings/profile").text) != their_token



def _create_at_a_terminal(data_dir: str, name: str, first: str, second: str) -> subprocess.CompletedProcess[str]:
    """``palaestra users create NAME --password`` with a pseudo-terminal as standard input, answering
    its two hidden prompts (each answer sent once its prompt is shown: getpass drops earlier input)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "palaestra", "users", "create", name, "--password"],
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        env={**os.environ, "PALAESTRA_DATA_DIR": data_dir, "PALAESTRA_DATABASE_URL": ""},
    )
    os.close(slave)
    assert proc.stderr is not None
    try:
        for prompt, answer in ((b"Password for", first), (b"again: ", second)):
            seen = b""
            while prompt not in seen:
                byte = os.read(proc.stderr.fileno(), 1)
                assert byte, f"the command ended before asking {prompt!r}"
                seen += byte
            os.write(master, answer.encode() + b"\n")
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())


def test_users_create_password_asks_twice_at_a_hidden_prompt(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "scoreboard")
    differ = _create_at_a_terminal(data_dir, "typist", PASSWORD, PASSWORD + "x")
    assert differ.returncode != 0 and "differ" in differ.stderr
    done = _create_at_a_terminal(data_dir, "typist", PASSWORD, PASSWORD)
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr, "the password is never echoed"
    db = open_database(resolve_config(data_dir=data_dir, environ={}), migrate_now=False)
    try:
        assert accounts.authenticate(db, "typist", PASSWORD) is not None
    finally:
        db.dispose()
