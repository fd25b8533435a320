"""``GET /v1/evaluations.csv`` / ``.parquet`` and ``palaestra export results``: the board's results as one
table, a row per evaluation, that pandas and polars read as they are; streamed in keyset batches.

Against real server processes (SQLite + file store), with uploads made through the API and through
``palaestra upload`` of a TensorBoard run brought in with ``palaestra import tensorboard``.
"""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import httpx
import pytest

import palaestra
from palaestra.cli import main
from palaestra.scoreboard.server.core.config import resolve_config
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.evaluations.conditions import conditions_key
from palaestra.scoreboard.server.evaluations.results_table import COLUMNS, batches, csv_chunks, parquet_chunks
from tests.scoreboard.server_helpers import ScoreboardServer, error_of, make_batch, upload_evaluation

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
pq = pytest.importorskip("pyarrow.parquet")

NAMES = [c.name for c in COLUMNS]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def provenance(seeds: list[Any], commit: str | None = COMMIT) -> dict[str, Any]:
    doc: dict[str, Any] = {"format": 1, "env": {"id": "CartPole-v1"}, "seeds": [{"reset": i, "seed": s} for i, s in enumerate(seeds)]}
    if commit:
        doc["git"] = {"commit": commit, "dirty": False}
    return doc


@pytest.fixture
def board(fresh_scoreboard_server: ScoreboardServer) -> tuple[ScoreboardServer, list[dict[str, Any]]]:
    """Four evaluations: solved and not, two envs, two algorithms, two owners, with and without provenance."""
    server = fresh_scoreboard_server
    other = server.create_user("other")
    made = []
    with server.client() as c:
        made.append(upload_evaluation(c, batch=make_batch(120, reward=500.0), algorithm={"id": "ppo"},
                                      provenance=provenance([1, 1, 2])))
        made.append(upload_evaluation(c, batch=make_batch(20, reward=9.0), algorithm={"id": "dqn"},
                                      provenance=provenance([7], commit=None)))
        made.append(upload_evaluation(c, env="Acrobot-v1", batch=make_batch(10, reward=-100.0)))
    with httpx.Client(base_url=server.url, headers=server.headers(other), timeout=60) as c:
        made.append(upload_evaluation(c, batch=make_batch(5, reward=30.0), algorithm={"id": "ppo-other"}))
    return server, made


def test_every_evaluation_is_one_row_that_pandas_and_polars_read_as_they_are(board):
    server, made = board
    csv = httpx.get(f"{server.url}/v1/evaluations.csv", timeout=60)
    assert csv.status_code == 200 and csv.headers["content-type"] == "text/csv; charset=utf-8"
    assert 'filename="evaluations.csv"' in csv.headers["content-disposition"]
    parquet = httpx.get(f"{server.url}/v1/evaluations.parquet", timeout=60)
    assert parquet.status_code == 200 and parquet.headers["content-type"] == "application/vnd.apache.parquet"

    frames = {
        "pandas csv": pd.read_csv(io.BytesIO(csv.content)),
        "pandas parquet": pd.read_parquet(io.BytesIO(parquet.content)),
    }
    for name, frame in frames.items():
        assert list(frame.columns) == NAMES, name
        assert list(frame["id"]) == [e["id"] for e in made], name  # oldest first
        assert list(frame["solved"]) == [True, False, False, False], name  # bool columns, as bools
        assert list(frame["verified"]) == [False] * 4, name
        assert list(frame["episodes"]) == [120, 20, 10, 5] and list(frame["steps"]) == [
            e["score"]["number_timesteps"] for e in made
        ], name
        assert list(frame["owner"]) == ["tester", "tester", "tester", "other"], name
        assert list(frame["env"]) == ["CartPole-v1", "CartPole-v1", "Acrobot-v1", "CartPole-v1"], name
        assert frame["algorithm"][0] == made[0]["algorithm"]["id"] and pd.isna(frame["algorithm"][2]), name
        assert list(frame["algorithm_name"])[:2] == ["ppo", "dqn"] and pd.isna(frame["algorithm_name"][2]), name
        # what the leaderboard ranks by: the best 100-episode mean, else the mean of a short run's episodes
        assert list(frame["score"]) == pytest.approx(
            [e["score"]["mean"] if e["score"]["mean"] is not None else e["score"]["episodes_mean"] for e in made]
        ), name
        assert made[0]["score"]["mean"] is not None and made[1]["score"]["mean"] is None
        assert frame["seeds"][0] == "[1,2]" and frame["seeds"][1] == "[7]" and pd.isna(frame["seeds"][2]), name
        assert frame["commit"][0] == COMMIT and pd.isna(frame["commit"][1]), name
        assert frame["conditions_key"][0] == conditions_key(made[0]["conditions"]), name
        assert pd.isna(frame["conditions_key"][2]), name  # no provenance: no conditions recorded
    assert str(frames["pandas parquet"]["created"].dtype).startswith("datetime64") and "UTC" in str(
        frames["pandas parquet"]["created"].dtype
    )
    for frame in (pl.read_csv(io.BytesIO(csv.content)), pl.read_parquet(io.BytesIO(parquet.content))):
        assert frame.columns == NAMES and frame.height == 4
        assert frame["solved"].to_list() == [True, False, False, False]
        assert frame["episodes"].to_list() == [120, 20, 10, 5]


def test_query_parameters_narrow_the_table(board):
    server, made = board
    ppo = made[0]["algorithm"]["id"]

    def ids(**params: str) -> list[str]:
        r = httpx.get(f"{server.url}/v1/evaluations.csv", params=params, timeout=60)
        assert r.status_code == 200, r.text
        return list(pd.read_csv(io.BytesIO(r.content), dtype=str)["id"])

    assert ids(env="Acrobot-v1") == [made[2]["id"]]
    assert ids(env="CartPole-v1", owner="tester") == [made[0]["id"], made[1]["id"]]
    assert ids(algorithm=ppo) == [made[0]["id"]] and ids(algorithm="ppo") == [made[0]["id"]]  # id or name
    assert ids(solved="true") == [made[0]["id"]]
    assert ids(verified="false") == [e["id"] for e in made] and ids(verified="true") == []
    assert ids(env="NoSuchEnv-v0") == []  # no rows: the header alone, which pandas still reads
    empty = httpx.get(f"{server.url}/v1/evaluations.parquet", params={"env": "NoSuchEnv-v0"}, timeout=60)
    assert list(pd.read_parquet(io.BytesIO(empty.content)).columns) == NAMES


@pytest.mark.parametrize(
    ("params", "param", "words"),
    [
        ({"colour": "red"}, "colour", "has no filter 'colour'; filter on env, algorithm, owner"),
        ({"solved": "maybe"}, "solved", "solved='maybe' must be true or false"),
    ],
)
def test_a_wrong_filter_is_a_400_that_names_it(scoreboard_server, params, param, words):
    for suffix in ("csv", "parquet"):
        body = error_of(httpx.get(f"{scoreboard_server.url}/v1/evaluations.{suffix}", params=params), 400)
        assert words in body["detail"] and body["type"] == param


def test_the_rows_come_in_keyset_batches_each_row_once(board):
    server, made = board
    db = Database(resolve_config(environ=server.env).database_url)
    try:
        got = list(batches(db, {}, batch_rows=3))
        assert [len(b) for b in got] == [3, 1] and [row[0] for b in got for row in b] == [e["id"] for e in made]
        assert all(len(row) == len(COLUMNS) for b in got for row in b)
        table = pq.read_table(io.BytesIO(b"".join(parquet_chunks(batches(db, {}, batch_rows=2)))))
        assert table.num_rows == 4 and pq.ParquetFile(
            io.BytesIO(b"".join(parquet_chunks(batches(db, {}, batch_rows=2))))
        ).num_row_groups == 2  # a row group per batch: written as the rows arrive
        text = b"".join(csv_chunks(batches(db, {}, batch_rows=1))).decode()
        assert text.splitlines()[0] == ",".join(NAMES) and len(text.splitlines()) == 5
    finally:
        db.dispose()


def test_the_export_is_a_read_like_any_other(board, tmp_path):
    """Counted against the anonymous read limit; served by a read-only board."""
    server, made = board
    server.stop()
    server.env["PALAESTRA_RATE_LIMIT_ANONYMOUS_READS"] = "2"
    server.start()
    from tests.scoreboard.server.guards.test_read_limits import start_of_a_window

    start_of_a_window(margin_s=10)
    for _ in range(2):
        assert httpx.get(f"{server.url}/v1/evaluations.csv", timeout=60).status_code == 200
    refused = httpx.get(f"{server.url}/v1/evaluations.parquet", timeout=60)
    assert "Too many requests" in error_of(refused, 429)["detail"]
    with server.client() as keyed:  # a key is not counted
        assert keyed.get("/v1/evaluations.csv").status_code == 200
    server.stop()
    server.args = ["--read-only"]
    server.start()
    r = httpx.get(f"{server.url}/v1/evaluations.csv", timeout=60)
    assert r.status_code == 200 and len(pd.read_csv(io.BytesIO(r.content))) == len(made)


def test_a_server_without_pyarrow_answers_parquet_with_a_501_that_says_what_to_install(tmp_path):
    from tests.server_process import in_process_server

    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "pyarrow.py").write_text("raise ImportError('pyarrow is hidden by the test')\n")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import httpx\n"
        "from pathlib import Path\n"
        "from tests.server_process import in_process_server\n"
        "with in_process_server(Path(sys.argv[2])) as s:\n"
        "    r = httpx.get(s.url + '/v1/evaluations.parquet'); c = httpx.get(s.url + '/v1/evaluations.csv')\n"
        "    print(r.status_code, c.status_code); print(r.json()['detail'])\n"
    )
    assert in_process_server is not None  # the one way to serve from a process, used by the child
    done = subprocess.run(
        [sys.executable, "-c", code, str(hide), str(tmp_path / "board")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    status, detail = done.stdout.splitlines()[:2]
    assert status == "501 200"
    assert "pyarrow is not installed" in detail and "pip install 'palaestra[export]'" in detail
    assert "GET /v1/evaluations.csv" in detail


def test_palaestra_export_results_writes_the_table_and_an_imported_tensorboard_run_is_in_it(
    board, tmp_path, capsys, monkeypatch
):
    server, made = board
    pytest.importorskip("tensorboardX")
    from tests.monitoring.tensorboard_runs import cleanrl_run

    run = tmp_path / "runs" / "CartPole-v1__ppo__3__1700000000"
    logged = cleanrl_run(run, episodes=12, seed=3)
    assert main(["import", "tensorboard", str(run), "--out", str(tmp_path / "imported")]) == 0
    imported = palaestra.upload(str(tmp_path / "imported"), algorithm_id="cleanrl-ppo", server=server.url,
                                api_key=server.api_key)
    monkeypatch.setenv("PALAESTRA_SERVER", server.url)
    monkeypatch.delenv("PALAESTRA_API_KEY", raising=False)
    out = tmp_path / "cartpole.parquet"
    assert main(["export", "results", "--where", "env=CartPole-v1,owner=tester", "-o", str(out)]) == 0
    assert f"Wrote {out} (parquet" in capsys.readouterr().out
    frame = pd.read_parquet(out)
    assert list(frame["id"]) == [made[0]["id"], made[1]["id"], imported]
    row = frame.iloc[-1]
    assert row["episodes"] == len(logged) and row["steps"] == sum(length for _, length, _ in logged)
    assert row["seeds"] == "[3]"  # the seed in CleanRL's run name

    assert main(["export", "results", "--where", "env=Acrobot-v1"]) == 0  # CSV on stdout
    assert pd.read_csv(io.StringIO(capsys.readouterr().out))["id"].tolist() == [made[2]["id"]]

    assert main(["export", "results", "--where", "colour=red", "-o", str(tmp_path / "x.csv")]) == 1
    err = capsys.readouterr().err
    assert "has no filter 'colour'" in err and not (tmp_path / "x.csv").exists()  # no half table left
    assert main(["export", "results", "--where", "env"]) == 1
    assert "--where takes name=value pairs" in capsys.readouterr().err


@pytest.mark.postgres
def test_the_table_is_the_same_on_postgresql(scoreboard_factory, postgres_url):
    """JSONB paths for the seeds and the commit, and the verified column, on PostgreSQL too."""
    server = scoreboard_factory(database_url=postgres_url)
    with server.client() as c:
        made = [
            upload_evaluation(c, batch=make_batch(120, reward=500.0), algorithm={"id": "ppo"},
                              provenance=provenance([[0, 1, 2, 3], 5])),
            upload_evaluation(c, env="Acrobot-v1", batch=make_batch(10, reward=-100.0)),
        ]
    csv = httpx.get(f"{server.url}/v1/evaluations.csv", params={"verified": "false"}, timeout=60)
    parquet = httpx.get(f"{server.url}/v1/evaluations.parquet", timeout=60)
    for frame in (pd.read_csv(io.BytesIO(csv.content)), pd.read_parquet(io.BytesIO(parquet.content))):
        assert list(frame.columns) == NAMES and list(frame["id"]) == [e["id"] for e in made]
        assert frame["seeds"][0] == "[[0,1,2,3],5]" and frame["commit"][0] == COMMIT
        assert pd.isna(frame["seeds"][1]) and pd.isna(frame["commit"][1])
        assert list(frame["solved"]) == [True, False] and list(frame["verified"]) == [False, False]
    solved = httpx.get(f"{server.url}/v1/evaluations.csv", params={"solved": "true", "verified": "true"})
    assert solved.text.strip() == ",".join(NAMES)


def test_an_approximate_sb3_import_says_so_on_its_evaluation_page(scoreboard_server, tmp_path):
    pytest.importorskip("tensorboardX")
    from tests.monitoring.tensorboard_runs import sb3_run

    sb3_run(tmp_path / "tb" / "PPO_1", [(2048, 20.0, 20.0), (4096, 40.0, 40.0)])
    assert main(["import", "tensorboard", str(tmp_path / "tb"), "--env-id", "CartPole-v1",
                 "--out", str(tmp_path / "run")]) == 0
    evaluation_id = palaestra.upload(str(tmp_path / "run"), server=scoreboard_server.url,
                                     api_key=scoreboard_server.api_key)
    page = httpx.get(f"{scoreboard_server.url}/evaluations/{evaluation_id}", timeout=60).text
    assert "import_note" in page and "approximate: the TensorBoard files hold no per-episode returns" in page
    assert "import tensorboard" in page  # "Recorded by"


def test_a_download_cut_half_way_leaves_no_half_table(tmp_path, capsys, monkeypatch):
    """A server that dies mid-table (here: a socket that sends the answer's head and one chunk, then
    closes) fails the export with the reason, and the file is not written."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve_half() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/csv\r\ntransfer-encoding: chunked\r\n\r\n"
            row = b"id,env\neval_1,CartPole-v1\n"
            conn.sendall(head + f"{len(row):x}\r\n".encode() + row + b"\r\n")

    thread = threading.Thread(target=serve_half, daemon=True)
    thread.start()
    monkeypatch.delenv("PALAESTRA_API_KEY", raising=False)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    out = tmp_path / "table.csv"
    assert main(["export", "results", "--server", url, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"The download of {url}/v1/evaluations.csv was cut after" in err and "nothing was written" in err
    assert not out.exists() and not list(tmp_path.iterdir())
    thread.join(10)
    listener.close()
