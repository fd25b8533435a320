"""Pages of live runs: ``/live/{id}`` (in progress, updated without a reload from ``/live/{id}.json``)
and the "runs in progress" list that the env leaderboard and the user page show apart from their
ranked evaluations (:func:`in_progress_rows`). A live run is never ranked: it is not an evaluation
until it is sealed, and the sealed one is an evaluation like any upload."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from palaestra.scoreboard import protocol
from palaestra.scoreboard.protocol.live import live_web_path
from palaestra.scoreboard.server.core.deps import state_of
from palaestra.scoreboard.server.evaluations.records import EvaluationRecord
from palaestra.scoreboard.server.live import runs as live
from palaestra.scoreboard.server.problems import Problem
from palaestra.scoreboard.server.tables.accounts import User
from palaestra.scoreboard.server.tables.base import snapshot
from palaestra.scoreboard.server.tables.live import LiveEvaluation
from palaestra.scoreboard.server.tables.scores import Algorithm, Evaluation
from palaestra.scoreboard.server.web.render import render
from palaestra.scoreboard.server.web.services import database

__all__ = ["LiveRow", "compared_live", "in_progress_rows", "is_live_id", "router"]

router = APIRouter(include_in_schema=False)
STATUS_LABELS = {
    "in_progress": "in progress",
    "abandoned": "abandoned",
    "sealing": "sealing",
    "sealed": "sealed",
}


@dataclass(frozen=True)
class LiveRow:
    """One run in progress, as the lists show it."""

    id: str
    url: str
    #: what the follower named it (None: an older follower's run)
    name: str | None
    env_id: str
    owner: str | None
    status: str
    episodes: int
    seconds_since_last_episode: float | None
    recent_mean: float | None


def in_progress_rows(request: Request, session: Session, where: Any, limit: int = 50) -> list[LiveRow]:
    """The live runs not sealed yet matching ``where`` (an env's, a user's), newest first (one query)."""
    query = (
        sa.select(LiveEvaluation, User.name)
        .join(User, User.seq == LiveEvaluation.user_seq)
        .where(where, LiveEvaluation.status != "sealed")
        .order_by(LiveEvaluation.seq.desc())
        .limit(limit)
    )
    rows = []
    for found, owner in session.execute(query).all():
        obj = live.live_object(state_of(request), found, {}, owner)
        rows.append(
            LiveRow(
                obj.id,
                live_web_path(obj.id),
                obj.name,
                obj.env,
                owner,
                STATUS_LABELS[obj.status],
                obj.episodes,
                obj.seconds_since_last_episode,
                obj.recent_mean,
            )
        )
    return rows


def _progress(request: Request, live_id: str) -> dict[str, Any]:
    """What the page and its JSON show: the run's row and its derivation (one row each, whatever its
    length: :mod:`palaestra.scoreboard.server.live.derived`)."""
    state = state_of(request)
    with database(request).read() as session:
        try:
            found, sources, owner = live.load_live(session, live_id)
        except Problem:
            return {}
        # a sealed run's page is its evaluation's (a redirect): nothing to derive for it
        view = live.live_view(session, found) if found.status != "sealed" else {}
    obj = live.live_object(state, found, sources, owner)
    recent = len(found.recent_rewards or [])
    return {
        "id": obj.id,
        "env": obj.env,
        "name": obj.name,
        "owner": owner,
        "status": obj.status,
        "status_label": STATUS_LABELS[obj.status],
        "episodes": obj.episodes,
        "timesteps": obj.timesteps,
        "seconds_since_last_episode": obj.seconds_since_last_episode,
        "recent_mean": obj.recent_mean,
        "recent_label": recent_mean_label(recent),
        "evaluation_url": protocol.evaluation_web_path(obj.evaluation_id) if obj.evaluation_id else None,
        "score": view.get("score"),
        "curves": view.get("curves") or {},
    }


def recent_mean_label(received: int) -> str:
    """What the recent mean is over: the last :data:`.live.RECENT_WINDOW` episodes, or those so far."""
    if received >= live.RECENT_WINDOW:
        return f"Mean of the last {live.RECENT_WINDOW} episodes"
    plural = "" if received == 1 else "s"
    return f"Mean of the {received} episode{plural} so far"


@router.get("/live/{live_id}.json")
def live_progress(request: Request, live_id: str) -> Response:
    """What the live page polls: status, counts, seconds since the last episode, the reward curve."""
    progress = _progress(request, live_id)
    if not progress:
        return Response(
            '{"detail": "No such live evaluation."}', status_code=404, media_type="application/json"
        )

    return Response(  # no bare NaN or Infinity: the derivation holds none (a test holds it)
        json.dumps(progress, allow_nan=False), media_type="application/json", headers={"Cache-Control": "no-store"}
    )


@router.get("/live/{live_id}", response_class=HTMLResponse)
def live_page(request: Request, live_id: str) -> Response:
    progress = _progress(request, live_id)
    if not progress:
        return render(
            request, "error.html", status_code=404, title="Not found", message=f"No live run {live_id!r}."
        )
    if progress["status"] == "sealed" and progress["evaluation_url"]:
        return RedirectResponse(progress["evaluation_url"], status_code=303)
    return render(request, "live.html", live=progress, poll_url=f"{live_web_path(live_id)}.json")


def env_filter(env_id: str) -> Any:
    return LiveEvaluation.env_id == env_id


def user_filter(user_seq: int) -> Any:
    return LiveEvaluation.user_seq == user_seq


def algorithm_live_ids(session: Session, user_seq: int, names: tuple[str, ...], env_id: str, limit: int) -> list[str]:
    """The newest runs in progress (not sealed) of an algorithm on ``env_id``: its owner's live runs that
    name it (by id or by name, as an upload does), for its curve across runs."""
    rows = session.execute(
        sa.select(LiveEvaluation.id)
        .where(
            LiveEvaluation.user_seq == user_seq,
            LiveEvaluation.env_id == env_id,
            LiveEvaluation.status == "in_progress",
            LiveEvaluation.algorithm_ref.in_(names),
        )
        .order_by(LiveEvaluation.seq.desc())
        .limit(limit)
    )
    return [live_id for (live_id,) in rows]


# -- compare -----------------------------------------------------------------------------------------


def is_live_id(object_id: str) -> bool:
    return object_id.startswith(protocol.ID_PREFIX["live_evaluation"])


def compared_live(
    request: Request, live_ids: list[str]
) -> dict[str, tuple[EvaluationRecord, dict[str, Any] | None]]:
    """Live runs to draw on the compare page, by id: a record of the score on the episodes received so
    far and its curves, both read from the run's derivation (for display only: nothing is stored)."""
    found: dict[str, tuple[EvaluationRecord, dict[str, Any] | None]] = {}
    with database(request).read() as session:
        for live_id in live_ids:
            try:
                run, _sources, owner = live.load_live(session, live_id)
            except Problem:
                continue
            view = live.live_view(session, run)
            if not view["score"]["number_episodes"] and not view["score"]["evaluation_episodes"]:
                continue
            values = {
                "id": run.id,
                "env_id": run.env_id,
                "env_listed": view["listed"],
                "created": run.created,
                "videos": [],
                **view["score"],
            }
            algorithm = _named_algorithm(session, run.user_seq, run.algorithm_ref)
            record = EvaluationRecord.of(snapshot(Evaluation, values), algorithm, None, owner)
            found[live_id] = (record, view["curves"] or None)
    return found


def _named_algorithm(session: Session, user_seq: int, ref: str | None) -> Algorithm | None:
    """The owner's algorithm a live run names (by id, else by name, as its seal will resolve it), if any."""
    if not ref:
        return None
    return session.scalar(
        sa.select(Algorithm)
        .where(Algorithm.user_seq == user_seq, sa.or_(Algorithm.id == ref, Algorithm.name == ref))
        .order_by(sa.case((Algorithm.id == ref, 0), else_=1))  # by id, else by name
        .limit(1)
    )
