"""``/v1/envs`` and ``/v1/groups``: the scoreboard's catalogue of environments (spec §4.5), and every
env id that has evaluations, with its aggregates (kept current as evaluations arrive)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response

from palaestra import catalogue
from palaestra.scoreboard import protocol
from palaestra.scoreboard.server.api.deps import State, query_params
from palaestra.scoreboard.server.core.answers import answer
from palaestra.scoreboard.server.problems import Problem, not_found
from palaestra.scoreboard.server.tables.scores import EnvStats

__all__ = ["env_object", "router"]

router = APIRouter(tags=["envs"])


def env_object(env_id: str, stats: EnvStats | None) -> protocol.EnvObject:
    entry = catalogue.lookup(env_id)
    counts: dict[str, Any] = {}
    if stats is not None:
        counts = {
            "evaluation_count": stats.evaluation_count,
            "solved_count": stats.solved_count,
            "best_mean": stats.best_mean,
            "best_evaluation_id": stats.best_evaluation_id,
        }
    if entry is None:
        return protocol.EnvObject(id=env_id, **counts)
    return protocol.EnvObject(
        id=env_id,
        listed=True,
        group=entry.group,
        summary=entry.summary,
        reward_threshold=entry.reward_threshold,
        trials=entry.trials,
        solving_rule=entry.solving_rule,
        **counts,
    )


@router.get("/envs", response_model=protocol.ListPage[protocol.EnvObject])
def list_envs(request: Request, state: State) -> Response:
    """Known environments (``group`` filter) and every env id that has evaluations, with aggregates."""
    group = query_params(request).get("group")
    with state.db.read() as session:
        stats = {s.env_id: s for s in session.scalars(sa.select(EnvStats))}
    try:
        ids = [e.env_id for e in catalogue.entries(group=str(group) if group else None)]
    except ValueError as e:
        raise Problem(400, str(e), "group") from None
    known = set(ids)
    ids += sorted(k for k, s in stats.items() if k not in known and (not group or s.group_id == group))
    data = [env_object(i, stats.get(i)) for i in ids]
    return answer(protocol.ListPage[protocol.EnvObject](url=f"{protocol.API_PREFIX}/envs", data=data))


@router.get("/groups", response_model=protocol.ListPage[protocol.GroupObject])
def list_groups() -> Response:
    """The scoreboard's env groups (spec §4.5) and the env ids of each."""
    data = [
        protocol.GroupObject(
            id=g.id,
            name=g.name,
            description=g.description,
            envs=[e.env_id for e in catalogue.entries(group=g.id)],
        )
        for g in catalogue.GROUPS
    ]
    return answer(protocol.ListPage[protocol.GroupObject](url=f"{protocol.API_PREFIX}/groups", data=data))


@router.get("/envs/{env_id}", response_model=protocol.EnvObject)
def get_env(env_id: str, state: State) -> Response:
    with state.db.read() as session:
        stats = session.get(EnvStats, env_id)
    if stats is None and catalogue.lookup(env_id) is None:
        raise not_found("environment", env_id)
    return answer(env_object(env_id, stats))
