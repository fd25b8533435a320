"""`palaestra server verify [DEST|URL]` and `/v1/log`: the hash chain of scores holds every scored
evaluation and benchmark run, and a row edited behind the server's back, a rewritten blob, an entry
changed or a record added without one is found and named, on the board, in an export and through a server."""

from __future__ import annotations

import json
import sqlite3
import threading

import httpx

from palaestra.scoreboard import protocol
from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload_evaluation, video_archive


def board(server: ScoreboardServer) -> list[dict]:
    with server.client() as c:
        return [
            upload_evaluation(c, batch=make_batch(10 + i), videos=video_archive(1, "mp4", seed=i))
            for i in range(3)
        ]


def verify(server: ScoreboardServer, *args: str) -> tuple[int, str]:
    result = server.palaestra("server", "verify", *args, check=False)
    return result.returncode, result.stdout + result.stderr


def sql(server: ScoreboardServer, statement: str, *params: object) -> None:
    with sqlite3.connect(server.data_dir / "scoreboard.sqlite3") as conn:
        conn.execute(statement, params)


def test_the_log_pages_through_every_evaluation_in_order_as_its_schema_says(fresh_scoreboard_server):
    server = fresh_scoreboard_server
    evaluations = board(server)
    with httpx.Client(base_url=server.url, timeout=60) as c:  # no key: the log is public
        first = c.get("/v1/log", params={"limit": 2})
        rest = c.get("/v1/log", params={"limit": 2, "starting_after": "2"})
        bad = c.get("/v1/log", params={"starting_after": "eval_x"})
        entries = [
            protocol.LogEntryObject.model_validate(e) for e in first.json()["data"] + rest.json()["data"]
        ]
        blob = c.get(entries[0].blobs[1].url)  # the first evaluation's video, as the store holds it
    assert first.json()["has_more"] and not rest.json()["has_more"]
    assert [e.record_id for e in entries] == [e["id"] for e in evaluations]
    assert [e.seq for e in entries] == [1, 2, 3] and entries[0].previous_sha256 == "0" * 64
    assert entries[1].previous_sha256 == entries[0].entry_sha256
    assert entries[0].record is not None and entries[0].record["mean"] == evaluations[0]["score"]["mean"]
    assert [b.key.endswith(".mp4") for b in entries[0].blobs] == [
        False,
        True,
        False,
    ]  # batch, video, metadata
    assert blob.status_code == 200 and blob.content[4:8] == b"ftyp"
    assert bad.status_code == 400 and "is an entry's seq" in bad.json()["detail"]


def test_an_edited_row_and_a_rewritten_blob_are_each_named_by_verify_on_the_board_the_export_and_the_url(
    fresh_scoreboard_server, tmp_path
):
    server = fresh_scoreboard_server
    evaluations = board(server)
    code, out = verify(server)
    assert code == 0 and "Verified 3 log entries and 9 blobs" in out, out

    second = evaluations[1]["id"]
    sql(
        server, "UPDATE evaluations SET number_episodes = number_episodes + 1 WHERE id = ?", second
    )  # behind its back
    server.palaestra("server", "export", str(tmp_path / "edited"))
    for where in ((), (str(tmp_path / "edited"),), (server.url,)):
        code, out = verify(server, *where)
        assert code == 1, out
        assert f"entry 2 (evaluation {second}): the evaluation was changed after it was scored" in out
    sql(server, "UPDATE evaluations SET number_episodes = number_episodes - 1 WHERE id = ?", second)
    assert verify(server)[0] == 0

    video = next((server.data_dir / "blobs").rglob("*.mp4"))
    key = video.relative_to(server.data_dir / "blobs").as_posix()
    entry = next(
        e
        for e in httpx.get(f"{server.url}/v1/log").json()["data"]
        if any(b["key"] == key for b in e["blobs"])
    )
    video.write_bytes(video.read_bytes() + b"\0")  # rewritten in the store
    server.palaestra("server", "export", str(tmp_path / "rewritten"))
    for where in ((), (str(tmp_path / "rewritten"),), (server.url,)):
        code, out = verify(server, *where)
        assert code == 1, out
        assert f"entry {entry['seq']} (evaluation {entry['record_id']}): blob {key} was rewritten" in out


def test_a_changed_entry_a_forged_history_and_an_unlogged_evaluation_are_found(fresh_scoreboard_server):
    server = fresh_scoreboard_server
    evaluations = board(server)
    head = verify(server)[1].split("the head is ")[1].strip()
    sql(server, "UPDATE score_log SET record_sha256 = ? WHERE seq = 1", "0" * 64)
    code, out = verify(server)
    assert code == 1 and f"entry 1 (evaluation {evaluations[0]['id']}) was changed" in out

    # the whole log rebuilt from the edited rows: consistent by itself, but not the history seen before
    sql(server, "DELETE FROM score_log")
    sql(server, "UPDATE evaluations SET mean = 1000 WHERE id = ?", evaluations[0]["id"])
    for where in ((), (server.url,)):  # nothing logged: the first unlogged evaluation is named
        code, out = verify(server, *where)
        assert code == 1 and "is on the board but not in the log" in out, out
    backfilled = server.palaestra("server", "log-backfill").stdout
    assert "Added 3 entries" in backfilled
    assert verify(server)[0] == 0
    code, out = verify(server, "--expect-head", head)
    assert code == 1 and f"the entry {head} seen earlier is not in the chain" in out

    sql(server, "UPDATE evaluations SET id = 'eval_forged' WHERE id = ?", evaluations[2]["id"])
    code, out = verify(server)
    assert code == 1 and "the evaluation is not on the board" in out


def test_a_committed_benchmark_run_is_logged_once_with_its_evaluations(fresh_scoreboard_server):
    server = fresh_scoreboard_server
    with server.client() as c:
        run = c.post("/v1/benchmark_runs", json={"benchmark_id": "ClassicControl2-v1"}).json()
        evaluation = upload_evaluation(c, env="CartPole-v0", batch=make_batch(30), benchmark_run_id=run["id"])
        assert c.post(f"/v1/benchmark_runs/{run['id']}/commit").status_code == 200
        assert c.post(f"/v1/benchmark_runs/{run['id']}/commit").status_code == 200  # twice: logged once
        data = c.get("/v1/log").json()["data"]
    assert [(e["kind"], e["record_id"]) for e in data] == [
        ("evaluation", evaluation["id"]),
        ("benchmark_run", run["id"]),
    ]
    assert (
        data[1]["record"]["evaluations"] == [evaluation["id"]] and data[1]["record"]["status"] == "committed"
    )
    sql(server, "UPDATE benchmark_runs SET score_value = 99 WHERE id = ?", run["id"])
    code, out = verify(server, server.url)
    assert code == 1 and f"entry 2 (benchmark_run {run['id']}): the benchmark_run was changed" in out
    assert json.loads(json.dumps(data))  # the page is plain JSON


def test_uploads_at_once_on_postgresql_extend_one_unbroken_chain(scoreboard_factory, postgres_url):
    server = scoreboard_factory(database_url=postgres_url)

    def upload_three(seed: int) -> None:
        with server.client() as c:
            for i in range(3):
                upload_evaluation(c, batch=make_batch(5 + seed * 3 + i))

    threads = [threading.Thread(target=upload_three, args=(seed,)) for seed in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    code, out = verify(server, server.url)
    assert code == 0 and "Verified 9 log entries and 9 blobs" in out, out
    assert verify(server)[0] == 0  # and read straight from the database
