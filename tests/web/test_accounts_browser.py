"""Signing in, the profile's API keys and CSRF refusals in headless Chromium, as a person would.

The key made on the profile page is used by the real ``palaestra upload`` command; the screenshot of
the profile (with the new key) is kept under test-artifacts/web/.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.web import web_recordings as recordings
from tests.web.web_helpers import PageRecord, screenshot

pytestmark = pytest.mark.browser

Page = tuple[Any, PageRecord]
PASSWORD = "a long enough password"


def _upload(server: Any, directory: Path, key: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``palaestra upload DIR`` with ``key`` in $PALAESTRA_API_KEY (and no saved login to fall back on)."""
    env = {**os.environ, "PALAESTRA_API_KEY": key, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    for name in ("PALAESTRA_SERVER", "OPENAI_GYM_API_BASE", "OPENAI_GYM_API_KEY"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "palaestra", "upload", str(directory), "--server", server.url],
        env=env, capture_output=True, text=True, timeout=180,
    )


def _sign_in_from_the_hint_url(pg: Any, server: Any, name: str) -> None:
    """Open /settings/profile signed out (the 2017 client's hint), sign in, land back on it."""
    pg.goto(f"{server.url}/settings/profile")
    pg.wait_for_url("**/login?next=%2Fsettings%2Fprofile")
    pg.get_by_label("User name").fill(name)
    pg.get_by_label("Password").fill(PASSWORD)
    pg.get_by_role("button", name="Sign in").click()
    pg.wait_for_url("**/settings/profile")


def test_sign_in_create_a_key_upload_with_it_then_revoke_it(
    page: Page, web_server: Any, tmp_path: Path
) -> None:
    pg, record = page
    name = f"web{uuid.uuid4().hex[:6]}"
    web_server.create_user(name, PASSWORD)
    _sign_in_from_the_hint_url(pg, web_server, name)
    assert pg.locator("header.site nav.account").inner_text().startswith(name)

    pg.get_by_role("button", name="Create a new key").click()
    key = pg.locator("#new-key-value").inner_text().strip()
    key_id = pg.locator("#new-key h2").inner_text().split()[-1]
    assert key.startswith("pal_") and key_id.startswith("key_")
    assert pg.locator(f"#key-{key_id} td.state").inner_text() == "active"
    screenshot(pg, "settings-profile")

    # (an env no other test of the shared server counts the evaluations of)
    run = recordings.record_steps("Acrobot-v1", tmp_path / "run", 300, seed=3)
    uploaded = _upload(web_server, run, key, tmp_path)
    assert uploaded.returncode == 0, uploaded.stderr
    evaluation_id = uploaded.stdout.strip().splitlines()[-1]
    pg.goto(f"{web_server.url}/evaluations/{evaluation_id}")
    assert pg.locator("dl.facts a[href^='/users/']").inner_text() == name, "uploaded as the signed-in user"

    pg.goto(f"{web_server.url}/settings/profile")
    pg.locator(f"#key-{key_id}").get_by_role("button", name="Revoke").click()
    pg.wait_for_url("**/settings/profile")
    assert pg.locator(f"#key-{key_id} td.state").inner_text().startswith("revoked")
    refused = _upload(web_server, run, key, tmp_path)
    assert refused.returncode != 0
    assert "Invalid API key" in refused.stderr and "/settings/profile" in refused.stderr
    assert record.errors == []


def test_a_form_with_a_wrong_csrf_token_is_refused_and_changes_nothing(page: Page, web_server: Any) -> None:
    pg, _ = page
    name = f"csrf{uuid.uuid4().hex[:6]}"
    web_server.create_user(name, PASSWORD)
    _sign_in_from_the_hint_url(pg, web_server, name)
    keys_before = pg.locator("table.keys tbody tr").count()
    # what a forged or stale form sends: the session cookie, but not this session's token
    pg.evaluate("document.querySelector('form[action=\"/settings/profile/keys\"] input[name=csrf_token]')"
                ".value = 'f'.repeat(64)")
    pg.get_by_role("button", name="Create a new key").click()
    assert pg.locator("h1").inner_text() == "Form refused"
    assert "Nothing was changed" in pg.locator("main").inner_text()
    screenshot(pg, "csrf-refused")
    pg.goto(f"{web_server.url}/settings/profile")
    assert pg.locator("table.keys tbody tr").count() == keys_before
    assert pg.locator("#new-key").count() == 0

    # signing out is a form too; with its token it works, and the profile is behind sign-in again
    pg.get_by_role("button", name="Sign out").click()
    pg.wait_for_url(f"{web_server.url}/")
    assert pg.locator("header.site nav.account").inner_text() == "Sign in"
    pg.goto(f"{web_server.url}/settings/profile")
    pg.wait_for_url("**/login?next=%2Fsettings%2Fprofile")
