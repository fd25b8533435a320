"""The benchmark page's per-algorithm aggregates are kept between views, and computed again as soon as
a run of the benchmark is added or scored again (the kept value is never a stale page)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server import migrate
from palaestra.scoreboard.server.account_tables import User
from palaestra.scoreboard.server.database import Database
from palaestra.scoreboard.server.db import Algorithm, BenchmarkRun
from palaestra.scoreboard.server.web import benchmarks

BENCHMARK = "ClassicControl2-v1"


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    db = Database(f"sqlite:///{tmp_path / 'aggregates.db'}")
    migrate.upgrade(db.engine)
    try:
        yield db
    finally:
        db.dispose()


def _score(*trials: float) -> dict[str, Any]:
    return {"tasks": [{"key": "CartPole-v0", "trial_scores": list(trials)}], "score": sum(trials) / len(trials)}


def _means(db: Database) -> dict[str, float]:
    with db.read() as session:
        rows = benchmarks._algorithm_aggregates(session, BENCHMARK)
    return {row.label: row.mean.value for row in rows if row.mean is not None}


def test_a_new_run_and_a_rescored_run_change_the_aggregates_at_once(database: Database) -> None:
    with database.write() as session:
        user = User(name="tester")
        session.add(user)
        session.flush()
        algorithm = Algorithm(id="alg_cache", user_seq=user.seq, name="cached-agent")
        session.add(algorithm)
        session.flush()
        session.add(BenchmarkRun(id="brun_one", user_seq=user.seq, benchmark_id=BENCHMARK,
                                 algorithm_seq=algorithm.seq, score=_score(0.2), score_value=0.2, score_evaluations=1))
    (label,) = _means(database)
    assert _means(database)[label] == pytest.approx(0.2)

    with database.write() as session:  # a second run of the algorithm
        session.add(BenchmarkRun(id="brun_two", user_seq=1, benchmark_id=BENCHMARK, algorithm_seq=1,
                                 score=_score(0.6), score_value=0.6, score_evaluations=1))
    (label,) = _means(database)
    assert _means(database)[label] == pytest.approx(0.4)

    with database.write() as session:  # the first run gains an evaluation, and its score is rewritten
        session.execute(sa.update(BenchmarkRun).where(BenchmarkRun.id == "brun_one").values(
            score=_score(0.2, 1.0), score_value=0.6, score_evaluations=2))
    (label,) = _means(database)
    assert _means(database)[label] == pytest.approx((0.2 + 1.0 + 0.6) / 3)
