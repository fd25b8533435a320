"""A video's sha256 (and its metadata's) is recorded when it is stored and checked on every read:
bytes changed in the store are never served (a 500 naming the fault), on the file store and on S3.
An evaluation stored before hashes were recorded gets them on its first read, and is checked from
then on."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import sqlalchemy as sa

from palaestra.scoreboard.server.core.config import resolve_config
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.tables.scores import Evaluation
from tests.scoreboard.server_helpers import ScoreboardServer, make_mp4, upload_evaluation, video_archive


def stored_videos(server: ScoreboardServer, evaluation_id: str) -> list[dict[str, Any]]:
    db = Database(resolve_config(environ=server.env).database_url)
    try:
        with db.connect() as conn:
            videos: list[dict[str, Any]] = conn.scalar(sa.select(Evaluation.videos).where(Evaluation.id == evaluation_id))
        return videos
    finally:
        db.dispose()


def forget_hashes(server: ScoreboardServer, evaluation_id: str) -> None:
    """Make the evaluation look stored by a palaestra that recorded no video hashes."""
    videos = [{k: v for k, v in doc.items() if k not in ("sha256", "metadata_sha256")}
              for doc in stored_videos(server, evaluation_id)]  # fmt: skip
    db = Database(resolve_config(environ=server.env).database_url)
    try:
        with db.write() as session:
            session.execute(sa.update(Evaluation).where(Evaluation.id == evaluation_id).values(videos=videos))
    finally:
        db.dispose()


def damage_on_disk(server: ScoreboardServer, key: str) -> None:
    path = server.data_dir / "blobs" / key
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte, same size
    path.write_bytes(bytes(data))


def video_url(server: ScoreboardServer, evaluation_id: str, name: str) -> str:
    return f"{server.url}/evaluations/{evaluation_id}/videos/{name}"


def assert_refused(r: httpx.Response, video: bytes, evaluation_id: str) -> None:
    assert r.status_code == 500, r.status_code
    assert "is not the one uploaded" in r.text and evaluation_id in r.text
    assert video[:64] not in r.content and len(r.content) < 2000  # none of the bytes


def test_a_video_changed_in_the_file_store_is_never_served(fresh_scoreboard_server: ScoreboardServer) -> None:
    server = fresh_scoreboard_server
    with server.client() as c:
        ev = upload_evaluation(c, videos=video_archive(2, kind="mp4"))
    first, second = stored_videos(server, ev["id"])
    original = make_mp4(seed=0)
    assert first["sha256"] == hashlib.sha256(original).hexdigest()  # recorded at ingest
    assert len(first["metadata_sha256"]) == 64
    r = httpx.get(video_url(server, ev["id"], first["name"]))
    assert r.status_code == 200 and r.content == original

    damage_on_disk(server, first["key"])
    assert_refused(httpx.get(video_url(server, ev["id"], first["name"])), original, ev["id"])
    ranged = httpx.get(video_url(server, ev["id"], first["name"]), headers={"Range": "bytes=0-99"})
    assert ranged.status_code == 500  # a part of it neither
    assert "Not serving " + first["name"] in server.log_path.read_text()
    # the rest of the evaluation is served as before
    assert httpx.get(video_url(server, ev["id"], second["name"])).status_code == 200
    assert httpx.get(video_url(server, ev["id"], first["metadata_name"])).status_code == 200
    assert httpx.get(f"{server.url}/evaluations/{ev['id']}").status_code == 200

    damage_on_disk(server, second["metadata_key"])
    r = httpx.get(video_url(server, ev["id"], second["metadata_name"]))
    assert r.status_code == 500 and "is not the one uploaded" in r.text


def test_an_evaluation_stored_before_video_hashes_gets_them_on_first_read(
    fresh_scoreboard_server: ScoreboardServer,
) -> None:
    server = fresh_scoreboard_server
    with server.client() as c:
        ev = upload_evaluation(c, videos=video_archive(1, kind="mp4", seed=3))
    forget_hashes(server, ev["id"])
    (video,) = stored_videos(server, ev["id"])
    assert "sha256" not in video
    original = make_mp4(seed=3000)
    assert httpx.get(video_url(server, ev["id"], video["name"])).content == original
    assert httpx.get(video_url(server, ev["id"], video["metadata_name"])).status_code == 200
    (video,) = stored_videos(server, ev["id"])
    assert video["sha256"] == hashlib.sha256(original).hexdigest() and len(video["metadata_sha256"]) == 64
    damage_on_disk(server, video["key"])
    assert_refused(httpx.get(video_url(server, ev["id"], video["name"])), original, ev["id"])


def test_a_video_changed_in_s3_is_never_served(
    scoreboard_factory: Any, s3_storage: tuple[str, dict[str, str]]
) -> None:
    storage, env = s3_storage
    server: ScoreboardServer = scoreboard_factory(storage=storage, env=env)
    with server.client() as c:
        ev = upload_evaluation(c, videos=video_archive(1, kind="mp4", seed=5))
    (video,) = stored_videos(server, ev["id"])
    original = make_mp4(seed=5000)
    assert httpx.get(video_url(server, ev["id"], video["name"])).content == original
    import boto3

    s3 = boto3.client("s3", endpoint_url=env["PALAESTRA_S3_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    bucket, prefix = storage.removeprefix("s3://").split("/", 1)
    s3.put_object(Bucket=bucket, Key=f"{prefix}/{video['key']}", Body=original[:-1] + b"\x00")
    assert_refused(httpx.get(video_url(server, ev["id"], video["name"])), original, ev["id"])


def test_a_changed_terminal_recording_loses_its_page_fallback_not_the_page(
    fresh_scoreboard_server: ScoreboardServer,
) -> None:
    server = fresh_scoreboard_server
    with server.client() as c:
        ev = upload_evaluation(c, videos=video_archive(1, kind="ansi"))
    (video,) = stored_videos(server, ev["id"])
    page = httpx.get(f"{server.url}/evaluations/{ev['id']}")
    assert page.status_code == 200 and "frame 2" in page.text  # the last frame, as text
    damage_on_disk(server, video["key"])
    server.restart()  # the fallback text is cached per process
    page = httpx.get(f"{server.url}/evaluations/{ev['id']}")
    assert page.status_code == 200 and "frame 2" not in page.text
    assert httpx.get(video_url(server, ev["id"], video["name"])).status_code == 500
