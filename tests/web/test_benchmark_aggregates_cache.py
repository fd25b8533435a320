"""The benchmark page's per-algorithm aggregates are kept between views, and computed again as soon as
a run of the benchmark is added or scored again (the kept value is never a stale page)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from palaestra.scoreboard.server.core import migrate
from palaestra.scoreboard.server.core.database import Database
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.scores import Algorithm, BenchmarkRun
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


def test_the_page_shows_the_best_algorithms_and_all_of_them_when_asked(tmp_path: Path) -> None:
    """Every algorithm is in the statistics; the page's tables and charts show the best
    ALGORITHMS_SHOWN by IQM (at a thousand algorithms they were 6 MB of page), ``algorithms=all`` all."""
    import httpx

    from palaestra.scoreboard.server.web.benchmark_routes import ALGORITHMS_SHOWN
    from tests.server_process import in_process_server

    count = ALGORITHMS_SHOWN + 5
    with in_process_server(tmp_path) as server:
        with server.state.db.write() as session:
            user = User(name="many")
            session.add(user)
            session.flush()
            for i in range(count):
                algorithm = Algorithm(id=f"alg_{i}", user_seq=user.seq, name=f"agent-{i:02d}")
                session.add(algorithm)
                session.flush()
                value = i / count
                session.add(BenchmarkRun(id=f"brun_{i}", user_seq=user.seq, benchmark_id=BENCHMARK,
                                         algorithm_seq=algorithm.seq, score=_score(value, value + 0.01),
                                         score_value=value, score_evaluations=1))
        with httpx.Client(base_url=server.url, timeout=60) as client:
            page = client.get(f"/benchmarks/{BENCHMARK}").text
            every = client.get(f"/benchmarks/{BENCHMARK}", params={"algorithms": "all"}).text
    assert f"The {ALGORITHMS_SHOWN} best of {count} algorithms by IQM" in page
    best, worst = f"agent-{count - 1:02d}", "agent-00"

    def statistics(html: str) -> str:  # the tables and the charts' data, not the run pickers after them
        return html[html.index('id="statistics"') : html.index('id="improvement-x"')]

    assert best in statistics(page) and worst not in statistics(page)
    assert worst in statistics(every) and 'id="algorithms-shown"' not in every
