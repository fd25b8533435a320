"""Work the server runs on its event loop never waits there for another writer: while a long SQLite
transaction holds the database (a 4 MB ladder upload's store), a write sent meanwhile waits for it in a
worker thread and is done once, and every other request is answered."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import sqlalchemy as sa

from palaestra.scoreboard.server.tables.service import FileRecord
from tests.server_process import in_process_server


def test_a_write_sent_during_another_writers_transaction_waits_off_the_event_loop_and_is_done_once(
    tmp_path: Path,
) -> None:
    with in_process_server(tmp_path) as server:
        db = server.state.db
        assert server.state.inline, "the handlers run on the event loop here (SQLite, a local folder)"
        holding, release = threading.Event(), threading.Event()

        def long_write() -> None:
            with db.write():
                holding.set()
                release.wait(60)

        answers: list[int] = []

        def create_file() -> None:  # POST /v1/files: a small write, run inline on the event loop
            with server.client() as c:
                answers.append(c.post("/v1/files", json={"purpose": "episode_batch"}).status_code)

        writer, poster = threading.Thread(target=long_write), threading.Thread(target=create_file)
        writer.start()
        try:
            assert holding.wait(30)
            poster.start()
            # the loop is free: other requests are answered while the write waits for the lock
            for _ in range(3):
                assert httpx.get(f"{server.url}/v1/envs", headers={"Authorization": f"Bearer {server.api_key}"},
                                 timeout=120).status_code == 200  # fmt: skip
            assert writer.is_alive() and not release.is_set(), "answered while the other transaction went on"
            assert answers == [], "the file cannot have been created while the database was held"
        finally:
            release.set()
            writer.join()
            poster.join(60)
        assert answers == [201]
        with db.read() as session:
            assert session.scalar(sa.select(sa.func.count()).select_from(FileRecord)) == 1
