"""`palaestra server backup DEST` copies a running SQLite scoreboard (online backup of the database,
the blob folder, the upload secret) into a folder that a new server serves as it was."""

from __future__ import annotations

import json

from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    create_file,
    make_batch,
    post_upload,
    upload_evaluation,
    video_archive,
)


def test_a_backup_of_a_running_server_restores_every_evaluation_blob_and_form(
    fresh_scoreboard_server, tmp_path
):
    server = fresh_scoreboard_server
    with server.client() as c:
        evaluation = upload_evaluation(c, batch=make_batch(12), videos=video_archive(2))
        pending = create_file(c, "episode_batch")  # a form handed out before the backup
    # the server is still running: its last commits are in the write-ahead log
    assert (server.data_dir / "scoreboard.sqlite3-wal").stat().st_size > 0

    dest = tmp_path / "backup"
    result = server.palaestra("server", "backup", str(dest))
    root = server.data_dir / "blobs"
    # not the store's own dot-folders (temporary files of writes, the health probe)
    blobs = [p for p in root.rglob("*") if p.is_file() and not p.relative_to(root).parts[0].startswith(".")]
    assert f"and {len(blobs)} blobs" in result.stdout and f"into {dest}" in result.stdout
    assert sorted(p.name for p in dest.iterdir()) == ["blobs", "scoreboard.sqlite3", "upload-secret.json"]

    restored = ScoreboardServer(tmp_path / "restored-log", env={"PALAESTRA_DATA_DIR": str(dest)}).start()
    try:
        with restored.client() as c:
            again = c.get(f"/v1/evaluations/{evaluation['id']}").json()
            assert again["score"] == evaluation["score"] and again["videos"] == evaluation["videos"]
            batch = c.get(f"/evaluations/{evaluation['id']}/episode_batch.json")
            assert batch.status_code == 200 and len(batch.json()["episode_rewards"]) == 12
            for video in evaluation["videos"]:
                got = c.get(f"/evaluations/{evaluation['id']}/videos/{video['name']}")
                assert got.status_code == 200 and len(got.content) == video["size"]
        moved = {**pending, "post_url": pending["post_url"].replace(server.url, restored.url)}
        assert post_upload(moved, json.dumps(make_batch(3)).encode()).status_code == 204
    finally:
        restored.stop()


def test_a_backup_never_writes_into_a_folder_that_holds_something(fresh_scoreboard_server, tmp_path):
    dest = tmp_path / "used"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    result = fresh_scoreboard_server.palaestra("server", "backup", str(dest), check=False)
    assert result.returncode == 1 and (dest / "keep.txt").read_text() == "mine"
    [line] = result.stderr.strip().splitlines()
    assert line == f"palaestra server: error: The backup folder {dest} is not empty; pick a new one"
