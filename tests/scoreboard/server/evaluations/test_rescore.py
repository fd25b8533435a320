"""``palaestra server rescore`` on a real server's data folder: every stored evaluation derived again
from its episode batch (score columns, curves, TaskScores), every benchmark run scored again from the
TaskScores, an evaluation whose batch is gone left as it was and named, and the score log still
verifying when the scoring did not change."""

from __future__ import annotations

import re
from typing import Any

import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.core.config import resolve_config
from tests.scoreboard.server_helpers import ScoreboardServer, make_batch, upload_evaluation

BENCHMARK = "ClassicControl2-v1"
_DERIVED = "SELECT id, mean, curves, benchmark_score FROM evaluations ORDER BY seq"


def _rows(engine: sa.Engine, query: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(query))]


def test_rescore_derives_every_evaluation_and_run_of_a_server_data_dir_again(
    fresh_scoreboard_server: ScoreboardServer,
) -> None:
    server = fresh_scoreboard_server
    with server.client() as c:
        run_id = c.post("/v1/benchmark_runs", json={"benchmark_id": BENCHMARK}).json()["id"]
        for reward in (40.0, 90.0):
            upload_evaluation(c, "CartPole-v0", make_batch(120, reward=reward), benchmark_run_id=run_id)
        gone = upload_evaluation(c, "CartPole-v1", make_batch(30))["id"]
    server.stop()
    engine = sa.create_engine(resolve_config(data_dir=server.data_dir, environ={}).database_url)
    try:
        derived = _rows(engine, _DERIVED)
        run_score = _rows(engine, "SELECT score, score_value FROM benchmark_runs")
        assert all(curves for _, _, curves, _ in derived) and derived[0][3] is not None
        # a scoring change to undo: the stored derivations rewritten, one batch lost
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE evaluations SET curves = NULL, benchmark_score = NULL"))
            conn.execute(sa.text("UPDATE evaluations SET mean = mean + 1 WHERE seq = 1"))
            conn.execute(sa.text("UPDATE benchmark_runs SET score = NULL, score_value = NULL"))
            key = conn.execute(sa.text("SELECT episode_batch_key FROM evaluations WHERE id = :i"), {"i": gone}).scalar()
        (server.data_dir / "blobs" / key).unlink()

        result = server.palaestra("server", "rescore")
        assert "Derived 2 of 3 evaluations again and scored 1 benchmark runs" in result.stdout, result.stdout
        assert f"1 left as they were, their episode batch unreadable: {gone}" in result.stdout
        # their TaskScores (and one's mean) were not what the score log hashed at ingest
        assert f"2 evaluations' scores changed ({derived[0][0]}, {derived[1][0]})" in result.stdout

        after = _rows(engine, _DERIVED)
        assert after[:2] == derived[:2], "the two readable evaluations derived as at ingest"
        assert after[2][2] is None and after[2][0] == gone
        assert _rows(engine, "SELECT score, score_value FROM benchmark_runs") == run_score
    finally:
        engine.dispose()
    # the log's first failure is the last entry, whose batch was lost: its curves (hashed since version 2
    # of the log) could not be derived again; the rescored evaluations before it hash as they did at ingest
    verified = server.palaestra("server", "verify", check=False)
    assert verified.returncode != 0
    assert f"entry 3 (evaluation {gone}): the evaluation was changed after it was scored: its curves changed" in (
        verified.stdout
    )


def test_a_running_server_shows_what_rescore_derived_not_what_its_pages_kept(
    fresh_scoreboard_server: ScoreboardServer,
) -> None:
    """The server keeps page values by the rows they were computed from (web/page_cache.py); a rescore
    changes rows without adding any, from another process, so it starts a new generation that every
    kept value is keyed by, and derives the envs' best means again."""
    server = fresh_scoreboard_server
    with server.client() as c:
        upload_evaluation(c, "CartPole-v1", make_batch(120, reward=40.0))
    engine = sa.create_engine(resolve_config(data_dir=server.data_dir, environ={}).database_url)
    try:
        with engine.begin() as conn:  # as an older scoring would have stored it
            conn.execute(sa.text("UPDATE evaluations SET mean = 777.25"))
            conn.execute(sa.text("UPDATE envs SET best_mean = 777.25"))
        with server.client() as c:
            assert re.search(r"mean 777", c.get("/").text), "the home page shows the stored best mean"
        result = server.palaestra("server", "rescore")
        assert "Derived 1 of 1 evaluations again" in result.stdout, result.stdout
        assert _rows(engine, "SELECT best_mean FROM envs")[0][0] == pytest.approx(41.0, abs=1)
        with server.client() as c:
            home = c.get("/").text
        assert not re.search(r"mean 777", home), "a kept value from before the rescore"
        assert re.search(r"mean 4[01]\b", home)
    finally:
        engine.dispose()
