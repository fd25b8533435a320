"""The /v1 API of a real `palaestra server` (SQLite + file store): flows, objects and every error path."""

from __future__ import annotations

import json
import tarfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import (
    ScoreboardServer,
    ansi_recording,
    create_file,
    make_batch,
    post_upload,
    tar_gz,
    upload,
    upload_evaluation,
    video_archive,
)

from palaestra import catalogue, solved_stats
from palaestra.scoreboard import protocol


@pytest.fixture(scope="module")
def limited_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A server with small upload caps and a 2-second upload URL lifetime."""
    server = ScoreboardServer(
        tmp_path_factory.mktemp("scoreboard-limited"),
        env={
            "PALAESTRA_MAX_EPISODE_BATCH_BYTES": "20000",
            "PALAESTRA_MAX_VIDEO_ARCHIVE_BYTES": "200000",
            "PALAESTRA_MAX_ARCHIVE_MEMBER_BYTES": "100000",
            "PALAESTRA_MAX_ARCHIVE_EXPANDED_BYTES": "150000",
            "PALAESTRA_UPLOAD_TTL_S": "2",
            "PALAESTRA_RATE_LIMIT_PER_MINUTE": "30",
        },
    ).start()
    yield server
    server.stop()


def error_of(r: httpx.Response, status: int) -> dict[str, Any]:
    """Assert ``r`` is a 2017-style error: status, JSON ``detail`` + ``type``, ``request-id`` header."""
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert isinstance(body["detail"], str) and body["detail"]
    assert isinstance(body["type"], str)
    assert r.headers["request-id"].startswith("req_")
    return body


# -- the happy path --------------------------------------------------------------------------------------


def test_evaluation_is_scored_on_ingest_with_the_scoring_module(scoreboard_server: ScoreboardServer) -> None:
    batch = make_batch(150, reward=500.0)
    with scoreboard_server.client() as c:
        ev = upload_evaluation(
            c,
            "CartPole-v1",
            batch,
            videos=video_archive(2),
            algorithm={"id": "alg-a"},
            writeup="https://gist.github.com/u/1",
            gym_version="0.9.4",
        )
        assert ev["object"] == "evaluation" and ev["id"].startswith("eval_")
        assert ev["web_url"] == f"{scoreboard_server.url}/evaluations/{ev['id']}"
        entry = catalogue.lookup("CartPole-v1")
        assert entry is not None
        merged = {**batch, "initial_reset_timestamp": min(batch["initial_reset_timestamps"])}
        expected = solved_stats.solved_stats(merged, trials=entry.trials, reward_threshold=entry.reward_threshold)
        score = ev["score"]
        for k, v in expected.items():
            assert score[k] == pytest.approx(v), k
        assert score["solved"] is True and score["reward_threshold"] == entry.reward_threshold
        assert ev["env_listed"] is True and ev["env_group"] == entry.group
        assert [v["episode_id"] for v in ev["videos"]] == [0, 1]
        assert ev["algorithm"]["name"] == "alg-a" and ev["algorithm"]["id"].startswith("alg_")
        # GET gives the same object; the algorithm name resolves to the same algorithm next time
        got = c.get(f"/v1/evaluations/{ev['id']}").json()
        assert got["score"] == ev["score"] and got["videos"] == ev["videos"]
        ev2 = upload_evaluation(c, "CartPole-v1", make_batch(5), algorithm={"id": ev["algorithm"]["id"]})
        ev3 = upload_evaluation(c, "CartPole-v1", make_batch(5), algorithm={"id": "alg-a"})
        assert ev2["algorithm"]["id"] == ev3["algorithm"]["id"] == ev["algorithm"]["id"]
        # the per-env aggregates
        env = c.get("/v1/envs/CartPole-v1").json()
        assert env["evaluation_count"] >= 3 and env["best_mean"] >= 500.0 and env["solved_count"] >= 1


def test_an_upload_is_judged_by_the_rule_of_the_gym_that_recorded_it(scoreboard_server: ScoreboardServer) -> None:
    # Acrobot-v1 had no threshold in 2017 (never "solved"); Gymnasium's is -100
    batch = make_batch(120, reward=-80.0)
    with scoreboard_server.client() as c:
        old = upload_evaluation(c, "Acrobot-v1", batch, algorithm={}, gym_version="0.9.4")
        new = upload_evaluation(c, "Acrobot-v1", batch, algorithm={}, gym_version="1.1.1")
        assert (old["score"]["reward_threshold"], old["score"]["solved"]) == (None, False)
        assert (new["score"]["reward_threshold"], new["score"]["solved"]) == (-100.0, True)
        page = c.get(f"/evaluations/{old['id']}").text
        assert "Acrobot-v1 is an unsolved environment" in page


def test_unknown_env_is_accepted_and_unlisted(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        ev = upload_evaluation(c, "NoSuchEnv-v7", make_batch(3), algorithm={})
        assert ev["env"] == "NoSuchEnv-v7" and ev["env_listed"] is False
        assert ev["score"]["trials"] == solved_stats.DEFAULT_TRIALS and ev["score"]["reward_threshold"] is None
        assert c.get("/v1/envs/NoSuchEnv-v7").json()["listed"] is False
        groups = {g["id"]: g for g in c.get("/v1/groups").json()["data"]}
        assert "CartPole-v1" in groups["classic_control"]["envs"] and groups["toy_text"]["name"] == "Toy text"
        listed = {e["id"]: e for e in c.get("/v1/envs", params={"group": "classic_control"}).json()["data"]}
        assert listed["CartPole-v1"]["reward_threshold"] == catalogue.lookup("CartPole-v1").reward_threshold


def test_lists_page_newest_first_and_take_the_2017_raw_json_query(
    scoreboard_server: ScoreboardServer,
) -> None:
    env = f"Paging{uuid.uuid4().hex[:6]}-v0"
    with scoreboard_server.client() as c:
        ids = [upload_evaluation(c, env, make_batch(2))["id"] for _ in range(3)]
        first = c.get("/v1/evaluations", params={"env": env, "limit": 2}).json()
        assert first["object"] == "list" and first["has_more"] is True
        assert [e["id"] for e in first["data"]] == ids[::-1][:2]
        raw = json.dumps({"env": env, "limit": 2, "starting_after": first["data"][-1]["id"]})
        second = c.get(f"/v1/evaluations?{raw}").json()  # what the 2017 client sends
        assert [e["id"] for e in second["data"]] == [ids[0]] and second["has_more"] is False
        files = c.get("/v1/files", params={"limit": 3}).json()
        assert len(files["data"]) == 3 and all(f["object"] == "file" for f in files["data"])
        assert all(f["post_url"] is None for f in files["data"])


def test_benchmark_runs_tags_commit_and_algorithms(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        r = c.post(
            "/v1/benchmark_runs",
            json={
                "benchmark_id": "Anything-v0",
                "algorithm_id": "bench-alg",
                "tags": json.dumps({"lr": 0.1}),
            },
        )
        assert r.status_code == 201, r.text
        run = r.json()
        assert (
            run["object"] == "benchmark_run" and run["id"].startswith("brun_") and run["tags"] == {"lr": 0.1}
        )
        assert run["web_url"] == f"{scoreboard_server.url}/benchmark_runs/{run['id']}"
        ev = upload_evaluation(c, "CartPole-v1", make_batch(3), benchmark_run_id=run["id"])
        assert ev["benchmark_run_id"] == run["id"]
        assert c.post(f"/v1/benchmark_runs/{run['id']}", json={"tags": {"lr": 0.2}}).json()["tags"] == {
            "lr": 0.2
        }
        committed = c.post(f"/v1/benchmark_runs/{run['id']}/commit").json()
        assert committed["status"] == "committed" and committed["evaluations"] == [ev["id"]]
        assert c.post(f"/v1/benchmark_runs/{run['id']}/commit").json()["status"] == "committed"
        late = create_file(c, "episode_batch")
        assert post_upload(late, json.dumps(make_batch(2)).encode()).status_code == 204
        r = c.post(
            "/v1/evaluations",
            json={"env": "CartPole-v1", "training_episode_batch": late["id"], "benchmark_run_id": run["id"]},
        )
        assert error_of(r, 409)["type"] == "benchmark_run_id"
        listed = c.get("/v1/benchmark_runs", params={"benchmark_id": "Anything-v0"}).json()
        assert run["id"] in [x["id"] for x in listed["data"]]
        name = f"alg-{uuid.uuid4().hex[:6]}"
        alg = c.post("/v1/algorithms", json={"name": name, "description": "d"})
        assert alg.status_code == 201 and alg.json()["object"] == "algorithm"
        assert c.get(f"/v1/algorithms/{alg.json()['id']}").json()["name"] == name
        assert error_of(c.post("/v1/algorithms", json={"name": name}), 409)["type"] == "name"


def test_idempotency_key_returns_the_same_object_once(scoreboard_server: ScoreboardServer) -> None:
    key = uuid.uuid4().hex
    with scoreboard_server.client() as c:
        f1 = create_file(c, "episode_batch", **{"Idempotency-Key": key})
        f2 = create_file(c, "episode_batch", **{"Idempotency-Key": key})
        assert f1 == f2
        assert post_upload(f1, json.dumps(make_batch(4)).encode()).status_code == 204
        body = {"env": "CartPole-v1", "training_episode_batch": f1["id"]}
        ekey = {"Idempotency-Key": uuid.uuid4().hex}
        e1 = c.post("/v1/evaluations", json=body, headers=ekey)
        e2 = c.post("/v1/evaluations", json=body, headers=ekey)
        assert e1.status_code == e2.status_code == 201 and e1.json()["id"] == e2.json()["id"]
        assert e2.headers.get("Idempotent-Replayed") == "true"
        other = c.post("/v1/evaluations", json={**body, "env": "Acrobot-v1"}, headers=ekey)
        assert error_of(other, 409)["type"] == "Idempotency-Key"
        # without the key, reusing the consumed file is a conflict, not a duplicate
        assert error_of(c.post("/v1/evaluations", json=body), 409)["type"] == "training_episode_batch"


def test_openapi_is_served(scoreboard_server: ScoreboardServer) -> None:
    doc = httpx.get(f"{scoreboard_server.url}/openapi.json").json()
    for path in (
        "/v1/files",
        "/v1/evaluations",
        "/v1/benchmark_runs",
        "/v1/benchmark_runs/{run_id}/commit",
        "/v1/algorithms",
        "/v1/uploads/{file_id}",
    ):
        assert path in doc["paths"], path


# -- errors ---------------------------------------------------------------------------------------------


def test_bad_or_missing_key_is_401(scoreboard_server: ScoreboardServer) -> None:
    r = httpx.post(f"{scoreboard_server.url}/v1/files", json={"purpose": "episode_batch"})
    assert "palaestra users create" in error_of(r, 401)["detail"]
    r = httpx.post(
        f"{scoreboard_server.url}/v1/evaluations",
        json={"env": "CartPole-v1"},
        headers={"Authorization": "Bearer pal_wrong"},
    )
    assert "Invalid API key" in error_of(r, 401)["detail"]


def test_revoked_key_is_401(scoreboard_server: ScoreboardServer) -> None:
    name = f"temp{uuid.uuid4().hex[:6]}"
    key = scoreboard_server.create_user(name)
    with httpx.Client(base_url=scoreboard_server.url, headers={"Authorization": f"Bearer {key}"}) as c:
        assert c.post("/v1/files", json={"purpose": "episode_batch"}).status_code == 201
        # `palaestra users revoke` works on the database directly, from another process; the server
        # notices within its one-second key cache
        assert "Revoked key_" in scoreboard_server.palaestra("users", "revoke", name).stdout
        time.sleep(1.1)
        error_of(c.post("/v1/files", json={"purpose": "episode_batch"}), 401)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"episode_rewards": [1.0, 2.0]}, "episode_rewards"),
        ({"episode_types": ["t", "x", "t"]}, "episode_types"),
        ({"timestamps": [1.0, "later", 3.0]}, "timestamps"),
        ({"episode_lengths": [1, -2, 3]}, "episode_lengths"),
        ({"surprise": 1}, "surprise"),
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


def test_bad_request_bodies_name_the_parameter(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        assert error_of(c.post("/v1/files", json={"purpose": "pictures"}), 400)["type"] == "purpose"
        r = c.post("/v1/benchmark_runs", json={"benchmark_id": "X", "tags": "{not json"})
        assert error_of(r, 400)["type"] == "tags"
        r = c.post("/v1/benchmark_runs", json={"benchmark_id": "X", "tags": "{}", "extra": 1})
        assert "Additional properties are not allowed" in error_of(r, 400)["detail"]
        assert error_of(c.post("/v1/evaluations", json={}), 400)["type"] == "env"
        video = create_file(c, "video")
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": video["id"]})
        assert error_of(r, 400)["type"] == "training_episode_batch"
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_video": video["id"]})
        assert "no content yet" in error_of(r, 400)["detail"]


def test_unknown_ids_are_404(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        for path in (
            "/v1/evaluations/eval_nope",
            "/v1/files/file_nope",
            "/v1/benchmark_runs/brun_nope",
            "/v1/algorithms/alg_nope",
            "/v1/envs/Nope-v0",
            "/v1/nothing-here",
        ):
            error_of(c.get(path), 404)
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": "file_nope"})
        assert error_of(r, 404)["type"] == "training_episode_batch"
        r = c.post("/v1/evaluations", json={"env": "CartPole-v1", "benchmark_run_id": "brun_nope"})
        assert error_of(r, 404)["type"] == "benchmark_run_id"
        error_of(c.post("/v1/benchmark_runs/brun_nope/commit"), 404)
        error_of(c.get("/v1/evaluations", params={"starting_after": "eval_nope"}), 404)
    other = scoreboard_server.create_user(f"other{uuid.uuid4().hex[:6]}")
    with scoreboard_server.client() as c:
        fid = upload(c, "episode_batch", json.dumps(make_batch(2)).encode())
    with httpx.Client(base_url=scoreboard_server.url, headers={"Authorization": f"Bearer {other}"}) as c2:
        r = c2.post("/v1/evaluations", json={"env": "CartPole-v1", "training_episode_batch": fid})
        assert error_of(r, 404)["type"] == "training_episode_batch"  # someone else's file


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


def test_expired_upload_url(limited_server: ScoreboardServer) -> None:
    with limited_server.client() as c:
        f = create_file(c, "episode_batch")
    time.sleep(2.5)
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


def test_stored_batch_is_the_enriched_2017_document(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        ev = upload_evaluation(c, "Acrobot-v1", make_batch(4))
    # the evaluation keeps the upload as it came; its download is the 2017 stored document
    r = httpx.get(f"{scoreboard_server.url}/evaluations/{ev['id']}/episode_batch.json")
    assert r.status_code == 200
    doc = r.json()
    assert (
        doc["env_id"] == "Acrobot-v1"
        and doc["initial_reset_timestamp"] == make_batch(4)["initial_reset_timestamps"][0]
    )
    assert doc["episode_rewards"] == make_batch(4)["episode_rewards"]


def test_too_many_requests_is_429(limited_server: ScoreboardServer) -> None:
    """(Last in this file: it spends the limited server's request budget.)"""
    key = limited_server.create_user(f"fast{uuid.uuid4().hex[:6]}")
    with httpx.Client(base_url=limited_server.url, headers={"Authorization": f"Bearer {key}"}) as c:
        statuses = [c.post("/v1/files", json={"purpose": "episode_batch"}) for _ in range(35)]
    limited = [r for r in statuses if r.status_code == 429]
    assert limited and all(r.status_code == 201 for r in statuses[:30])
    body = error_of(limited[0], 429)
    assert "per minute" in body["detail"] and int(limited[0].headers["Retry-After"]) >= 1


def test_a_corrupt_stored_batch_is_a_404_and_the_page_still_renders(scoreboard_server: ScoreboardServer) -> None:
    with scoreboard_server.client() as c:
        ev = upload_evaluation(c, "Acrobot-v1", make_batch(6))
    blob = Path(scoreboard_server.data_dir) / "blobs" / "files"
    (stored,) = [f for f in blob.iterdir() if f.name.startswith(ev["training_episode_batch"])]
    original = stored.read_bytes()
    stored.write_bytes(b"{not json")
    try:
        download = httpx.get(f"{scoreboard_server.url}/evaluations/{ev['id']}/episode_batch.json")
        assert download.status_code == 404
        assert httpx.get(f"{scoreboard_server.url}/evaluations/{ev['id']}/episodes.csv").status_code == 404
        page = httpx.get(f"{scoreboard_server.url}/evaluations/{ev['id']}")  # falls back to the stored curves
        assert page.status_code == 200 and ev["id"] in page.text
    finally:
        stored.write_bytes(original)


def test_an_upload_over_the_inline_limit_is_ingested_too(scoreboard_server: ScoreboardServer) -> None:
    """Uploads over 1 MiB are ingested in a worker thread instead of on the event loop."""
    batch = make_batch(40_000)
    data = json.dumps(batch).encode()
    assert len(data) > 1024 * 1024
    with scoreboard_server.client() as c:
        ev = upload_evaluation(c, "CartPole-v1", batch)
        assert ev["score"]["number_episodes"] == 40_000
