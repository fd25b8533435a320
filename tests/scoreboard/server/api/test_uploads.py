"""The post_url of a file: signed, expiring, single-use; the bytes validated once, when they arrive, with errors
that name the field."""

from __future__ import annotations

import json
import tarfile
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from palaestra.scoreboard import protocol
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    ansi_recording,
    create_file,
    error_of,
    make_batch,
    post_upload,
    tar_gz,
    upload_evaluation,
    video_archive,
)
from tests.server_process import InProcessServer


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"episode_rewards": [1.0, 2.0]}, "episode_rewards"),
        ({"episode_types": ["t", "x", "t"]}, "episode_types"),
        ({"timestamps": [1.0, "later", 3.0]}, "timestamps"),
        ({"episode_lengths": [1, -2, 3]}, "episode_lengths"),
        ({"surprise": 1}, "surprise"),
        ({"env_index": [0, 1]}, "env_index"),
    ],
)
def test_bad_episode_batch_is_400_naming_the_field(
    scoreboard_server: ScoreboardServer, change: dict[str, Any], field: str
) -> None:
    with scoreboard_server.client() as c:
        f = create_file(c, "episode_batch")
        r = post_upload(f, json.dumps({**make_batch(3), **change}).encode())
        body = error_of(r, 400)
        assert body["type"] == field and field in body["detail"]
        # a rejected upload does not use up the URL
        assert post_upload(f, json.dumps(make_batch(3)).encode()).status_code == 204


def test_non_finite_rewards_are_400(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        f = create_file(c, "episode_batch")
        body = error_of(
            post_upload(f, b'{"episode_lengths":[1],"episode_rewards":[NaN],"timestamps":[1]}'), 400
        )
        assert body["type"] == "episode_rewards" and "finite" in body["detail"]


def test_upload_url_is_signed_and_single_use(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        f = create_file(c, "episode_batch")
    data = json.dumps(make_batch(2)).encode()
    forged = {**f, "post_fields": {**f["post_fields"], "signature": "0" * 64}}
    assert error_of(post_upload(forged, data), 401)["type"] == "signature"
    stretched = {**f, "post_fields": {**f["post_fields"], "expires": str(int(time.time()) + 10**6)}}
    error_of(post_upload(stretched, data), 401)
    error_of(post_upload({**f, "post_fields": {}}, data), 400)
    assert post_upload(f, data).status_code == 204
    assert "already used" in error_of(post_upload(f, data), 409)["detail"]


def test_expired_upload_url(in_process_factory: Callable[..., InProcessServer]) -> None:
    server = in_process_factory(PALAESTRA_UPLOAD_TTL_S="2")
    with server.client() as c:
        f = create_file(c, "episode_batch")
    server.clock.advance(2.5)
    body = error_of(post_upload(f, json.dumps(make_batch(2)).encode()), 400)
    assert body["type"] == "expires" and "expired" in body["detail"]


def test_oversize_uploads_are_413(limited_server: ScoreboardServer) -> None:
    with limited_server.client() as c:
        f = create_file(c, "episode_batch")
        big = json.dumps(make_batch(2000)).encode()
        assert len(big) > 20000
        error_of(post_upload(f, big), 413)

        # a chunked body without Content-Length is cut off too (a well-formed part that never ends,
        # so that the size cap, not the multipart parser, is what stops it)
        def chunks() -> Any:
            yield b'--zzz\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\n'
            for _ in range(100):
                yield b"x" * 10000

        r = httpx.post(
            f["post_url"], content=chunks(), headers={"Content-Type": "multipart/form-data; boundary=zzz"}
        )
        error_of(r, 413)
        # an archive member over the member cap, and an archive expanding past the total cap
        v = create_file(c, "video")
        r = post_upload(v, tar_gz([("a.json", b" " * 100_001)]))
        assert "a.json" in error_of(r, 413)["detail"]
        v = create_file(c, "video")
        r = post_upload(v, tar_gz([(f"a{i}.json", b" " * 60_000) for i in range(3)]))
        assert "expands" in error_of(r, 413)["detail"]


def _member(name: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = "/etc/passwd"
    return info


@pytest.mark.parametrize(
    ("members", "needle"),
    [
        ([("../evil.json", b"{}")], "has a path"),
        ([("/abs.json", b"{}")], "has a path"),
        ([("dir/a.json", b"{}")], "has a path"),
        ([_member("link.json", tarfile.SYMTYPE)], "symbolic link"),
        ([_member("hard.json", tarfile.LNKTYPE)], "hard link"),
        ([_member("dev.json", tarfile.CHRTYPE)], "device"),
        ([("notes.txt", b"hi")], "does not match"),
        (
            [
                ("v.json", ansi_recording()),
                ("v.meta.json", b'{"episode_id":0,"content_type":"video/vnd.openai.ansivid"}'),
            ],
            "no manifest.json",
        ),
        ([("manifest.json", b'{"version":0,"videos":[["v.json","v.meta.json"]]}')], "no such member"),
        (
            [
                ("v.json", b"[1,2]"),
                ("v.meta.json", b'{"episode_id":0,"content_type":"video/vnd.openai.ansivid"}'),
                ("manifest.json", b'{"version":0,"videos":[["v.json","v.meta.json"]]}'),
            ],
            "not an asciicast",
        ),
        (
            [
                ("v.json", b"{nope"),
                ("v.meta.json", b'{"episode_id":0,"content_type":"video/vnd.openai.ansivid"}'),
                ("manifest.json", b'{"version":0,"videos":[["v.json","v.meta.json"]]}'),
            ],
            "not valid JSON",
        ),
        (
            [
                ("v.mp4", b"\x00\x00\x00\x18ftypmp42 not really a video"),
                ("v.meta.json", b'{"episode_id":0,"content_type":"video/mp4"}'),
                ("manifest.json", b'{"version":0,"videos":[["v.mp4","v.meta.json"]]}'),
            ],
            "not a playable video",
        ),
        (
            [
                ("v.json", ansi_recording()),
                ("v.meta.json", b'{"episode_id":0,"content_type":"image/gif"}'),
                ("manifest.json", b'{"version":0,"videos":[["v.json","v.meta.json"]]}'),
            ],
            "content_type",
        ),
        (
            [
                ("v.json", ansi_recording()),
                ("w.json", ansi_recording()),
                ("v.meta.json", b'{"episode_id":0,"content_type":"video/vnd.openai.ansivid"}'),
                ("manifest.json", b'{"version":0,"videos":[["v.json","v.meta.json"]]}'),
            ],
            "not listed",
        ),
    ],
)
def test_bad_archives_are_400(scoreboard_server: ScoreboardServer, members: list[Any], needle: str) -> None:
    with scoreboard_server.client() as c:
        f = create_file(c, "video")
        body = error_of(post_upload(f, tar_gz(members)), 400)
        assert needle in body["detail"], body["detail"]


def test_garbage_and_too_many_members(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        f = create_file(c, "video")
        assert "tar.gz" in error_of(post_upload(f, b"\x1f\x8b garbage"), 400)["detail"]
        f = create_file(c, "video")
        members = [(f"v{i}.json", b"{}") for i in range(protocol.MAX_ARCHIVE_MEMBERS + 1)]
        assert "more than" in error_of(post_upload(f, tar_gz(members)), 400)["detail"]


def test_real_mp4_videos_pass_ffprobe(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", make_batch(3), videos=video_archive(2, kind="mp4"))
        assert [v["content_type"] for v in ev["videos"]] == ["video/mp4", "video/mp4"]


def test_an_upload_over_the_inline_limit_is_ingested_too(scoreboard_server: ScoreboardServer) -> None:
    """Uploads over 1 MiB are ingested in a worker thread instead of on the event loop."""
    batch = make_batch(40_000)
    data = json.dumps(batch).encode()
    assert len(data) > 1024 * 1024
    with scoreboard_server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", batch)
        assert ev["score"]["number_episodes"] == 40_000

