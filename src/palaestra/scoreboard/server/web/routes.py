"""The scoreboard's web pages (server-rendered HTML): home, search, envs, users, algorithms,
evaluations and compare. The downloads they link to are :mod:`.downloads`, the benchmark pages
:mod:`.benchmark_routes`."""

from __future__ import annotations

import dataclasses
import re
from typing import Any
from urllib.parse import quote, urlencode

import sqlalchemy as sa
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from palaestra import catalogue
from palaestra.scoreboard.protocol import parse_json
from palaestra.scoreboard.server.core.deps import state_of
from palaestra.scoreboard.server.core.storage import BlobStore
from palaestra.scoreboard.server.evaluations import pictures
from palaestra.scoreboard.server.evaluations.records import (
    EvaluationRecord,
    StoredVideo,
    evaluation_record,
    evaluation_select,
)
from palaestra.scoreboard.server.tables.base import sorted_keys
from palaestra.scoreboard.server.tables.scores import Evaluation
from palaestra.scoreboard.server.web import (
    agent_pages,
    aggregate,
    compare,
    entries,
    index_queries,
    ladder_pages,
    live_pages,
    page_cache,
    queries,
)
from palaestra.scoreboard.server.web.provenance_view import provenance_view
from palaestra.scoreboard.server.web.render import render
from palaestra.scoreboard.server.web.services import (
    blob_store,
    database,
    evaluation_of,
    not_found,
    page_number,
)
from palaestra.scoreboard.server.web.views import (
    PAGE_SIZE,
    Download,
    Page,
    VideoView,
    clamp_page,
    video_titles,
)

router = APIRouter(include_in_schema=False)
#: Terminal recordings larger than this get no text fallback on the page (the player still works).
MAX_FALLBACK_RECORDING_BYTES = 2 * 1024 * 1024
_ANSI_ESCAPE_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]")


# -- home and env pages ------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
def home_page(request: Request) -> HTMLResponse:
    with database(request).read() as session:
        groups, total, active = queries.home(session)
        recent = index_queries.recent_evaluations(session)
    return render(
        request,
        "index.html",
        groups=groups,
        total_evaluations=total,
        envs_with_evaluations=active,
        recent=recent,
    )


@router.get("/search", response_class=HTMLResponse)
def search_page(
    request: Request,
    q: str = Query("", max_length=index_queries.MAX_QUERY_LENGTH),
    kind: str = Query("", max_length=20),
    page: str = Query("1", max_length=12),
) -> HTMLResponse:
    text = q.strip()
    if not text:
        return render(request, "search.html", nav="search", query="", kind="", hits=[], page=None, counts={})
    with database(request).read() as session:
        hits, pager, counts = index_queries.search(session, text, kind, page_number(page), request.url.path)
    shown_kind = kind if kind in index_queries.SEARCH_KINDS else ""
    return render(
        request,
        "search.html",
        nav="search",
        query=text,
        kind=shown_kind,
        hits=hits,
        page=pager,
        counts=counts,
    )


#: What an env without a picture shows (with a 404: browsers draw an image body whatever the status).
_NO_PICTURE_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="320" height="60" viewBox="0 0 320 60">'
    '<rect width="320" height="60" fill="#f5f7fa"/><text x="160" y="35" font-family="sans-serif" '
    'font-size="13" fill="#5d6677" text-anchor="middle">No picture: no video uploaded, not installed here</text></svg>'
)


# registered before the env page, whose {env_id:path} would match this address too
@router.get("/envs/{env_id:path}/picture")
def env_picture(request: Request, env_id: str) -> Response:
    """The env's picture: a short animation of an uploaded video, or a still rendered here once
    (pictures.py); PNG or animated WebP."""
    config = state_of(request).config
    entry = catalogue.lookup(env_id)
    installed = entry is not None and entry.available and config.render_env_pictures
    keep = not config.read_only
    found = pictures.env_picture(blob_store(request), database(request), env_id, installed, keep)
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "public, max-age=86400"}
    if found is None:
        return Response(_NO_PICTURE_SVG, status_code=404, media_type="image/svg+xml", headers=headers)
    picture, source = found
    return Response(
        picture, media_type=pictures.media_type(picture), headers={**headers, "X-Picture-Source": source}
    )


@router.get("/envs/{env_id:path}", response_class=HTMLResponse)
def env_page(
    request: Request,
    env_id: str,
    sort: str = queries.DEFAULT_SORT,
    page: str = Query("1", max_length=12),
    conditions: str = Query("", max_length=40),
    rank: str = Query("", max_length=20),
    verified: str = Query("", max_length=2),
) -> HTMLResponse:
    """The leaderboard of single runs (the 2017 ranking, each row labelled with its conditions), one
    set of conditions apart (``conditions=KEY``), or seed groups ranked as entries (``rank=entries``);
    ``verified=1``: the evaluations this board ran itself, ranked apart."""
    rank = rank if rank == "entries" else ""
    verified = "1" if verified == "1" else ""
    with database(request).read() as session:
        header = queries.env_header(session, env_id)
        if header is None:
            return not_found(request, f"No environment {env_id!r} is known to this scoreboard.")
        sets = entries.condition_sets(session, env_id)
        only = entries.condition_filter(conditions)
        if verified:
            own = agent_pages.verified_filter(verified)
            only = own if only is None else sa.and_(only, own)
        rows, pager = queries.leaderboard(
            session, env_id, sort, page_number(page), request.url.path, only=only
        )
        ranked = entries.rank_entries(session, env_id, only) if rank else None
        running = live_pages.in_progress_rows(request, session, live_pages.env_filter(env_id))
    params = {k: v for k, v in (("conditions", conditions), ("rank", rank), ("verified", verified)) if v}
    # entries are paged as single runs are: at field scale an env has thousands of them
    entries_page = _entries_page(ranked, page_number(page), request.url.path, params)
    return render(
        request,
        "env.html",
        env=header,
        rows=rows,
        page=dataclasses.replace(pager, params=params),
        condition_sets=sets,
        differing=entries.differing_fields(sets) if len(sets) > 1 else [],
        chosen_conditions=conditions,
        rank=rank,
        ranked=None if ranked is None else ranked[entries_page.offset : entries_page.offset + entries_page.size],
        entries_page=entries_page,
        few_seeds=entries.FEW_SEEDS,
        live_runs=running,
        verified_only=bool(verified),
    )


def _entries_page(ranked: list[Any] | None, number: int, path: str, params: dict[str, str]) -> Page:
    total = len(ranked or [])
    return Page(clamp_page(number, total), PAGE_SIZE, total, path, params=params)


# -- users and algorithms ----------------------------------------------------------------------------


@router.get("/users", response_class=HTMLResponse)
def users_page(
    request: Request, sort: str = "evaluations", page: str = Query("1", max_length=12)
) -> HTMLResponse:
    with database(request).read() as session:
        users, pager = index_queries.users_index(session, sort, page_number(page), request.url.path)
    return render(request, "users.html", nav="users", users=users, page=pager)


@router.get("/algorithms", response_class=HTMLResponse)
def algorithms_page(
    request: Request, sort: str = "evaluations", page: str = Query("1", max_length=12)
) -> HTMLResponse:
    with database(request).read() as session:
        algorithms, pager = index_queries.algorithms_index(session, sort, page_number(page), request.url.path)
    return render(request, "algorithms.html", nav="algorithms", algorithms=algorithms, page=pager, named=None)


@router.get("/users/{name:path}", response_class=HTMLResponse)
def user_page(request: Request, name: str, page: str = Query("1", max_length=12)) -> HTMLResponse:
    with database(request).read() as session:
        row = queries.user(session, name)
        if row is None:
            return not_found(request, f"No user {name!r}.")
        rows, pager = queries.user_evaluations(session, row, page_number(page), request.url.path)
        running = live_pages.in_progress_rows(request, session, live_pages.user_filter(row.seq))
    facts = [("Member since", row.created.strftime("%Y-%m-%d") if row.created else "—")]
    return render(
        request,
        "evaluations_list.html",
        heading=f"User {name}",
        description=None,
        facts=facts,
        writeup_url=None,
        rows=rows,
        page=pager,
        show_algorithm=True,
        show_user=False,
        nav="users",
        live_runs=running,
    )


@router.get("/algorithms/{algorithm_id}", response_class=HTMLResponse)
def algorithm_page(
    request: Request,
    algorithm_id: str,
    page: str = Query("1", max_length=12),
    env: str = Query("", max_length=200),
    stat: str = Query("mean", max_length=10),
    x: str = Query("episode", max_length=20),
    conditions: str = Query("", max_length=20),
    live: str = Query("", max_length=4),
    sort: str = Query("evaluations", max_length=20),
) -> Response:
    """The algorithm's evaluations, and its learning curve across those of one env (``env``): the runs
    under the newest one's conditions (``conditions=all``: every run, mixed on purpose), and with
    ``live=1`` its runs in progress too, labelled. ``algorithm_id`` may be a name (:func:`_algorithms_named`)."""
    with database(request).read() as session:
        found = queries.algorithm(session, algorithm_id)
        if found is None:
            return _algorithms_named(request, session, algorithm_id, sort, page)
        alg, owner = found
        curve_signature = page_cache.of_database(session, "algorithm curve", alg.id)
        rows, pager = queries.algorithm_evaluations(session, alg, page_number(page), request.url.path)
        envs = queries.algorithm_envs(session, alg)
        chosen = env if env in dict(envs) else (envs[0][0] if envs else None)
        ids = queries.algorithm_evaluation_ids(session, alg, chosen, aggregate.MAX_RUNS) if chosen else []
        found_rows = session.execute(evaluation_select().where(Evaluation.id.in_(ids))).all() if ids else []
        live_ids = (
            live_pages.algorithm_live_ids(session, alg.user_seq, (alg.id, alg.name), chosen, aggregate.MAX_RUNS)
            if chosen
            else []
        )
    records = sorted(map(evaluation_record, found_rows), key=lambda ev: ids.index(ev.id))
    running = live_pages.compared_live(request, live_ids) if live == "1" else {}
    records = [record for record, _ in running.values()] + records
    # Runs under other conditions than the newest one's are not averaged in (conditions=all mixes them).
    split = entries.split_by_conditions(records, mix=conditions == entries.ALL_CONDITIONS)
    records = split.shown
    metric = stat if stat in aggregate.METRICS else "mean"
    axis = x if x in aggregate.AXES else "episode"
    # by env, metric, axis and the evaluations pooled
    signature = (*curve_signature, chosen, metric, axis, *[ev.id for ev in records])
    cache = database(request).cache
    hit, chart = page_cache.lookup(cache, signature) if not running else (False, None)  # live curves still grow
    if not hit:
        chart = aggregate.aggregate_curve(_lines(request, records, running), metric, axis)
        if not running:
            page_cache.store(cache, signature, chart)
    query = {"env": chosen or "", "stat": metric, "x": axis}
    across = {
        "envs": envs,
        "env": chosen,
        "metric": metric,
        "axis": axis,
        "metrics": aggregate.METRICS,
        "axes": aggregate.AXES,
        "chart": chart,
        "threshold": records[0].score.reward_threshold if records else None,
        "evaluations": len(records),
        "max_runs": aggregate.MAX_RUNS,
        "path": request.url.path,
        "split": split,
        "mix_url": f"{request.url.path}?{urlencode({**query, 'conditions': 'all'})}",
        # runs in progress: how many are pooled (live=1), else how many could be, and the switch
        "live": len([ev for ev in records if ev.id in running]),
        "live_available": len(live_ids),
        "live_url": f"{request.url.path}?{urlencode({**query, 'live': '1'})}",
    }
    facts = [("Id", alg.id), ("User", owner)]
    return render(
        request,
        "evaluations_list.html",
        heading=f"Algorithm {alg.name}",
        description=alg.description,
        facts=facts,
        writeup_url=alg.writeup,
        rows=rows,
        page=pager,
        show_algorithm=False,
        show_user=True,
        across=across,
        nav="algorithms",
    )


# -- evaluations -------------------------------------------------------------------------------------


def _terminal_fallback(request: Request, video: StoredVideo) -> str | None:
    """The last frame of an asciicast v1 recording as plain text (shown without JavaScript)."""
    if video.kind != "terminal" or video.size > MAX_FALLBACK_RECORDING_BYTES:
        return None
    store = blob_store(request)
    # kept on the state: a stored blob never changes (and one that did is not shown)
    return database(request).cache.get(
        ("recording", video.key, video.sha256), lambda: _last_frame_text(store, video.key, video.sha256)
    )


def _last_frame_text(store: BlobStore, key: str, sha256: str | None) -> str | None:
    try:
        doc = parse_json(store.get_verified(key, sha256), "The recording")
        frames = doc.get("stdout") or []
        text = str(frames[-1][1])
    except Exception:  # a broken recording only loses its fallback text
        return None
    return _ANSI_ESCAPE_RE.sub("", text).replace("\r\n", "\n").replace("\r", "\n").strip("\n")


def _video_views(request: Request, ev: EvaluationRecord) -> list[VideoView]:
    base = f"/evaluations/{ev.id}/videos"
    return [
        VideoView(v, f"{base}/{v.name}", f"{base}/{v.metadata_name}", _terminal_fallback(request, v), title)
        for v, title in zip(ev.videos, video_titles(ev.videos))
    ]


def _stored_curves(request: Request, ids: list[str]) -> dict[str, dict[str, Any] | None]:
    """The curve series ingest derived for each of ``ids`` (``{}``: no training episodes to draw;
    ``None``: never derived, its batch missing when the server derived the evaluations before it)."""
    out: dict[str, dict[str, Any] | None] = {}
    with database(request).read() as session:
        signature = page_cache.of_database(session, "curves")
        for evaluation_id in ids:
            hit, kept = page_cache.lookup(session, (*signature, evaluation_id))
            if hit:
                out[evaluation_id] = kept
        wanted = [i for i in ids if i not in out]
        if wanted:
            rows = session.execute(sa.select(Evaluation.id, Evaluation.curves).where(Evaluation.id.in_(wanted)))
            for evaluation_id, stored in rows:
                data = sorted_keys(stored)  # one key order from SQLite and PostgreSQL's JSONB alike
                out[evaluation_id] = data
                page_cache.store(session, (*signature, evaluation_id), data)
    return out


def _algorithms_named(request: Request, session: Any, name: str, sort: str, page: str) -> Response:
    """``/algorithms/NAME``, as people write it: a 307 to the one algorithm called ``name`` (its query
    kept), the list of them where several users have one of that name, else a 404 that says where to look."""
    cards, pager = index_queries.algorithms_index(session, sort, page_number(page), request.url.path, name=name)
    if pager.total == 1:
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(f"/algorithms/{quote(cards[0].id, safe='')}{query}", status_code=307)
    if pager.total == 0:
        return not_found(
            request,
            f"No algorithm has the id or the name {name!r}. The algorithms page (/algorithms) lists every "
            "one; search (/search) finds one by part of its name.",
        )
    return render(request, "algorithms.html", nav="algorithms", algorithms=cards, page=pager, named=name)


def _lines(request: Request, records: list[EvaluationRecord], running: dict[str, Any]) -> list[Any]:
    """Each record's curve series: a run in progress's own, a stored evaluation's derived one."""
    stored = _stored_curves(request, [ev.id for ev in records if ev.id not in running])
    return [running[ev.id][1] if ev.id in running else stored.get(ev.id) or None for ev in records]


@router.get("/evaluations/{evaluation_id}", response_class=HTMLResponse)
def evaluation_page(request: Request, evaluation_id: str) -> HTMLResponse:
    ev = evaluation_of(request, evaluation_id)
    if ev is None:
        return not_found(request, f"No evaluation {evaluation_id!r}.")
    rule = None  # the rule the evaluation was judged by (its era's), not necessarily today's
    if ev.env_id and catalogue.lookup(ev.env_id) is not None:
        rule = catalogue.solving_rule(ev.env_id, ev.score.trials, ev.score.reward_threshold)
    env_info = {"env_id": ev.env_id, "gym_version": ev.gym_version}
    videos = _video_views(request, ev)
    base = f"/evaluations/{ev.id}"
    downloads: list[Download] = []
    if ev.episode_batch_key:
        downloads += [
            Download(
                "Episode batch (JSON)",
                f"{base}/episode_batch.json",
                "the uploaded episodes with env_id and initial_reset_timestamp, as the 2017 server stored them",
            ),
            Download("Episodes (CSV)", f"{base}/episodes.csv", "one row per episode"),
        ]
    downloads.append(Download("Evaluation (JSON, API)", f"/v1/evaluations/{ev.id}"))
    for v in videos:
        downloads.append(Download(f"Video of {v.title.replace('Episode', 'episode', 1)} ({v.video.name})", v.url))
    derived = _stored_curves(request, [ev.id])[ev.id]
    best = None
    ladder_links: list[tuple[str, str]] = []
    if ev.env_id:
        with database(request).read() as session:
            best = queries.best_evaluation_id(session, ev.env_id)
            ladder_links = ladder_pages.ladder_links(session, ev.env_id, ev.algorithm.name if ev.algorithm else None)
    return render(
        request,
        "evaluation.html",
        ev=ev,
        rule=rule,
        writeup_url=ev.writeup or (ev.algorithm.writeup if ev.algorithm else None),
        env_info={k: v for k, v in env_info.items() if v is not None},
        videos=videos,
        curves=derived or None,
        curves_missing=derived is None,
        downloads=downloads,
        has_terminal_videos=any(v.video.kind == "terminal" for v in videos),
        compare_url=compare.CompareSettings().url([ev.id, best]) if best and best != ev.id else None,
        run=provenance_view(ev.provenance, ev.conditions),
        ladder_links=ladder_links,
        verified=agent_pages.verified_view(request, ev),
    )


@router.get("/compare", response_class=HTMLResponse)
def compare_page(
    request: Request,
    e: list[str] = Query([]),
    x: str = Query("episode", max_length=20),
    smooth: str = Query("ema", max_length=20),
    ema: str = Query("", max_length=20),
    window: str = Query("", max_length=20),
    mix: str = Query("", max_length=20),
) -> HTMLResponse:
    """Several evaluations' learning curves overlaid; the query string holds the whole state.

    Evaluations under other conditions than the first one's are left out with a notice naming the
    fields that differ, unless ``mix=conditions`` asks to draw them together."""
    settings = compare.CompareSettings.from_query(x, smooth, ema, window)
    ids, left_out = compare.requested_ids(e)
    with database(request).read() as session:
        rows = session.execute(evaluation_select().where(Evaluation.id.in_(ids))).all() if ids else []
    found = {r.id: r for r in map(evaluation_record, rows)}
    running = live_pages.compared_live(request, [i for i in ids if live_pages.is_live_id(i)])
    found.update({i: record for i, (record, _) in running.items()})
    records = [found[i] for i in ids if i in found]
    missing = [i for i in ids if i not in found]
    if ids and not records:
        listed = ", ".join(repr(i) for i in missing)
        return not_found(request, f"No evaluation {listed}: nothing to compare.")
    split = entries.split_by_conditions(records, mix=mix == "conditions")
    records = split.shown
    compared, data = compare.chart_data(records, _lines(request, records, running), split.mixed)
    return render(
        request,
        "compare.html",
        split=split,
        mix_url=settings.url([ev.id for ev in split.shown + split.apart]) + "&mix=conditions",
        compared=compared,
        chart=data,
        settings=settings,
        axes=compare.AXES,
        smoothings=compare.SMOOTHINGS,
        missing=missing,
        left_out=left_out,
        max_compared=compare.MAX_COMPARED,
        share_url=settings.url([ev.id for ev in records]) + ("&mix=conditions" if split.mixed else ""),
    )


__all__ = ["router"]
