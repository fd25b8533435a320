"""The server's files are private (0700 folder, 0600 files), and the upload-signing secret lives in a
file of its own, not in the database: moved out of it on first start, shared by the servers on one
database, and rotated with `palaestra server rotate-secret` without breaking an upload in flight."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.core import signing
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    error_of,
    make_batch,
    post_upload,
    upload_evaluation,
    video_archive,
)
from tests.server_process import ServerProcess, free_port

BATCH = json.dumps(make_batch(5)).encode()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def settings(database: Path) -> dict[str, str]:
    with sqlite3.connect(database) as db:
        return dict(db.execute("SELECT key, value FROM server_settings").fetchall())


def current_secret(data_dir: Path) -> str:
    return str(json.loads((data_dir / "upload-secret.json").read_text())["current"])


def test_the_data_folder_and_every_file_the_server_makes_are_private(scoreboard_factory, tmp_path):
    data_dir = tmp_path / "new" / "data"
    server = scoreboard_factory(env={"PALAESTRA_DATA_DIR": str(data_dir)})
    with server.client() as c:
        upload_evaluation(c, videos=video_archive(1))
    assert mode(data_dir) == 0o700
    made = list(data_dir.rglob("*"))
    names = {p.name for p in made}
    assert {"scoreboard.sqlite3", "scoreboard.sqlite3-wal", "upload-secret.json"} <= names
    assert any(p.is_file() and "blobs" in p.parts for p in made)
    for path in made:
        assert mode(path) == (0o700 if path.is_dir() else 0o600), path
    # the secret is not in the database (only its fingerprint)
    secret = current_secret(data_dir)
    assert secret not in json.dumps(settings(data_dir / "scoreboard.sqlite3"))


def test_a_secret_an_older_palaestra_kept_in_the_database_is_moved_out_on_first_start(
    scoreboard_factory, tmp_path
):
    data_dir = tmp_path / "old"
    subprocess.run(
        [sys.executable, "-m", "palaestra", "server", "migrate", "--data-dir", str(data_dir)],
        check=True,
        capture_output=True,
    )
    old_secret = "ab" * 32
    with sqlite3.connect(data_dir / "scoreboard.sqlite3") as db:
        db.execute("INSERT INTO server_settings (key, value) VALUES ('upload_secret', ?)", (old_secret,))
    # as an older palaestra left them: readable by everyone
    data_dir.chmod(0o755)
    (data_dir / "scoreboard.sqlite3").chmod(0o644)
    server = scoreboard_factory(env={"PALAESTRA_DATA_DIR": str(data_dir)})
    assert mode(data_dir / "scoreboard.sqlite3") == 0o600
    assert f"The data folder {data_dir} can be read by other users (mode 755)" in server.log_path.read_text()
    assert current_secret(data_dir) == old_secret
    assert mode(data_dir / "upload-secret.json") == 0o600
    assert "upload_secret" not in settings(data_dir / "scoreboard.sqlite3")
    with server.client() as c:  # forms are signed with the secret it always had
        f = create_file(c, "episode_batch")
    signed = f"{f['id']}\n{f['post_fields']['expires']}\n{protocol.MAX_EPISODE_BATCH_BYTES}".encode()
    expected = hmac.new(bytes.fromhex(old_secret), signed, hashlib.sha256).hexdigest()
    assert f["post_fields"]["signature"] == expected
    assert post_upload(f, BATCH).status_code == 204


@pytest.mark.slow
def test_rotation_keeps_forms_in_flight_and_stored_evaluations_valid(in_process_server):
    server, data_dir = in_process_server, in_process_server.state.config.data_dir
    with server.client() as c:
        evaluation = upload_evaluation(c)
        before = create_file(c, "episode_batch")  # handed out, not yet used
    old_secret = current_secret(data_dir)

    rotated = subprocess.run(
        [sys.executable, "-m", "palaestra", "server", "rotate-secret", "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PALAESTRA_DATABASE_URL": ""},
    )
    assert "Rotated the upload-signing secret" in rotated.stdout and "stay valid until" in rotated.stdout
    assert current_secret(data_dir) != old_secret
    assert mode(data_dir / "upload-secret.json") == 0o600
    server.clock.advance(signing.RELOAD_CHECK_S)  # running servers look at the file this often

    with server.client() as c:
        after = create_file(c, "episode_batch")
        assert after["post_fields"]["signature"] != before["post_fields"]["signature"]
        assert post_upload(before, BATCH).status_code == 204  # signed with the previous secret
        assert post_upload(after, BATCH).status_code == 204
        assert c.get(f"/v1/evaluations/{evaluation['id']}").json()["score"] == evaluation["score"]
        forged = create_file(c, "episode_batch")
    forged["post_fields"]["signature"] = "0" * 64
    error_of(post_upload(forged, BATCH), 401)
    # a new process reads the rotated secret, and its fingerprint matches
    peer = ScoreboardServer(data_dir)
    peer.api_key = server.api_key
    with peer.start().client() as c:
        f = create_file(c, "episode_batch")
    try:
        assert post_upload(f, BATCH).status_code == 204
    finally:
        peer.stop()


def test_a_server_whose_secret_differs_from_its_peers_on_the_database_refuses_to_start(
    fresh_scoreboard_server, tmp_path
):
    peer = fresh_scoreboard_server
    database_url = f"sqlite:///{peer.data_dir / 'scoreboard.sqlite3'}"
    env = {
        **peer.env,
        "PALAESTRA_DATA_DIR": str(tmp_path / "elsewhere"),
        "PALAESTRA_DATABASE_URL": database_url,
    }
    result = subprocess.run(
        [sys.executable, "-m", "palaestra", "server", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3
    [line] = result.stderr.strip().splitlines()
    assert "upload-signing secret" in line and "is not the one the other servers on its database use" in line
    assert "PALAESTRA_UPLOAD_SECRET_FILE" in line
    # the same file makes it a peer
    env["PALAESTRA_UPLOAD_SECRET_FILE"] = str(peer.data_dir / "upload-secret.json")
    with ServerProcess(env=env, log_path=tmp_path / "peer.log"):
        pass  # it served /v1/health from its own socket
