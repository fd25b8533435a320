"""Pages of agents the board evaluates itself: ``/agents/{job_id}`` (a job's status, each finished
episode's return while it runs, the failure's reason and log when it fails), and what the evaluation
page shows of a verified evaluation (:func:`verified_view`): "verified by this board" with its seeds,
artifact and evaluator, and beside it the self-reported evaluations of the same algorithm and env,
each flagged when its score is outside the verified one's interval."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from palaestra.envs import BOARD_GAME_IDS
from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.agents import jobs as agent_jobs
from palaestra.scoreboard.server.evaluations.records import EvaluationRecord
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.agents import AgentJob
from palaestra.scoreboard.server.tables.scores import Algorithm, Evaluation
from palaestra.scoreboard.server.web.render import render
from palaestra.scoreboard.server.web.services import database, not_found

__all__ = ["VerifiedView", "router", "verified_filter", "verified_view"]

router = APIRouter(include_in_schema=False)

#: The normal quantile of the verified score's two-sided 95 % interval.
Z95 = 1.959964
#: Self-reported evaluations shown beside a verified one, newest first.
MAX_SELF_REPORTED = 20
#: Seconds between reloads of a job's page while it is queued or running.
REFRESH_S = 3


@router.get("/agents/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: str) -> Response:
    with database(request).read() as session:
        try:
            job, owner = agent_jobs.load_job(session, job_id)
        except Problem:
            return not_found(request, f"No agent job {job_id!r}.")
        matches = agent_jobs.job_matches(session, job_id)
    shown = agent_jobs.job_object(job, owner, "", matches)
    running = shown.status in ("queued", "running")
    return render(
        request,
        "agent_job.html",
        job=shown,
        worker=job.worker,
        refresh_s=REFRESH_S if running else None,
        evaluation_url=protocol.evaluation_web_path(shown.evaluation_id) if shown.evaluation_id else None,
        board_game=shown.env in BOARD_GAME_IDS,
        mean=_mean(shown.returns),
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


# -- the evaluation page ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SelfReported:
    """A self-reported evaluation of the same algorithm and env, beside the verified one."""

    id: str
    url: str
    score: float | None
    #: outside the verified interval (None: no score to compare)
    outside: bool | None


@dataclass(frozen=True)
class VerifiedView:
    job_id: str
    job_url: str
    seeds: list[int]
    artifact_sha256: str
    evaluator: dict[str, Any]
    descriptor: dict[str, Any]
    score: float | None
    #: the verified score's 95 % interval (mean ± 1.96 standard errors of its episodes' returns)
    low: float | None
    high: float | None
    self_reported: list[SelfReported] = field(default_factory=list)


def headline(score: protocol.EvaluationScore) -> float | None:
    """The number an evaluation is compared by: its best window's mean, else its episodes' mean."""
    return score.mean if score.mean is not None else score.episodes_mean


def interval(returns: list[float]) -> tuple[float | None, float | None]:
    """The mean's 95 % normal interval over ``returns`` (a single episode: the point itself)."""
    if not returns:
        return None, None
    n = len(returns)
    mean = sum(returns) / n
    if n == 1:
        return mean, mean
    sd = math.sqrt(sum((r - mean) ** 2 for r in returns) / (n - 1))
    half = Z95 * sd / math.sqrt(n)
    return mean - half, mean + half


def verified_view(request: Request, ev: EvaluationRecord) -> VerifiedView | None:
    """What the evaluation page shows of a verified evaluation (None for a self-reported one)."""
    if not ev.verified or not ev.verification:
        return None
    facts = ev.verification
    job_id = str(facts.get("job_id", ""))
    with database(request).read() as session:
        returns = session.scalar(sa.select(AgentJob.returns).where(AgentJob.id == job_id))
        others = _self_reported(session, ev) if ev.algorithm is not None else []
    low, high = interval([float(r) for r in returns or []])
    rows = []
    for other_id, other in others:
        value = headline(other)
        outside = None if value is None or low is None or high is None else not low <= value <= high
        rows.append(SelfReported(other_id, protocol.evaluation_web_path(other_id), value, outside))
    return VerifiedView(
        job_id=job_id,
        job_url=f"/agents/{job_id}",
        seeds=[int(s) for s in facts.get("seeds", [])],
        artifact_sha256=str(facts.get("artifact_sha256", "")),
        evaluator=dict(facts.get("evaluator") or {}),
        descriptor=dict(facts.get("descriptor") or {}),
        score=headline(ev.score),
        low=low,
        high=high,
        self_reported=rows,
    )


def _self_reported(session: Any, ev: EvaluationRecord) -> list[tuple[str, protocol.EvaluationScore]]:
    """The newest self-reported evaluations of ``ev``'s algorithm on its env, with their scores."""
    assert ev.algorithm is not None
    algorithm_seq = session.scalar(sa.select(Algorithm.seq).where(Algorithm.id == ev.algorithm.id))
    rows = session.execute(
        sa.select(Evaluation.id, Evaluation.mean, Evaluation.episodes_mean)
        .where(
            Evaluation.env_id == ev.env_id,
            Evaluation.algorithm_seq == algorithm_seq,
            Evaluation.verified.is_(False),
        )
        .order_by(Evaluation.seq.desc())
        .limit(MAX_SELF_REPORTED)
    ).all()
    return [
        (row.id, protocol.EvaluationScore(mean=row.mean, episodes_mean=row.episodes_mean)) for row in rows
    ]


def verified_filter(verified: str) -> Any:
    """The leaderboard's condition for ``?verified=1``: the board's own evaluations only (else None)."""
    return Evaluation.verified.is_(True) if verified == "1" else None
