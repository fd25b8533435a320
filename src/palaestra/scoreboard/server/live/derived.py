"""A live run derived once per chunk, as an evaluation is derived once at ingest: what its page, its
JSON and compare show, kept in ``live_derived`` and continued by every chunk in the transaction that
applies it, so that a read costs one row whatever the run's length (bench/live_pages.py).

- :func:`advance`: the derivation after one chunk: its episodes merged into the *tail* (the newest
  :data:`TAIL` episodes of the merged order, still open to episodes of another source that ended
  earlier), the tail's oldest folded into fixed-size aggregates;
- :func:`rebuild`: the derivation from every stored chunk (a run from before this table, or a chunk
  older than the folded part, which another source's late follower can send: rare, and exact);
- :func:`view_of`: what pages read (the score so far as :class:`~palaestra.scoreboard.protocol.EvaluationScore`,
  the curve series as :func:`palaestra.curves.from_episode_batch` draws them),
  computed at ingest and stored as JSON text.

The merged order is the one ``load_results`` and the seal use (episodes by end time, ties by source).
The aggregates are those of :mod:`palaestra.solved_stats` and the curves: the ``trials``-episode
windows (their best, the first one at the threshold), training and evaluation counts, and the curve
cells: consecutive training episodes pooled into at most :data:`~palaestra.curves.MAX_POINTS`
cells of a power-of-two size, doubled as the run grows. The sealed evaluation is derived again
from its whole batch, as every evaluation is: this derivation is for the run in progress.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from palaestra import catalogue, solved_stats
from palaestra.curves import MAX_POINTS
from palaestra.episodes import Episodes

__all__ = ["TAIL", "advance", "empty_state", "pack", "rebuild", "unpack", "view_of"]

#: Episodes kept unfolded at the end of the merged order: a second source's chunk lands among the
#: newest episodes of the first (its follower polls as often), never thousands behind.
TAIL = 2000
#: a curve cell: count, then the sums of episode index, steps before, end time, reward, length;
#: then the trailing means of reward and length at its last episode
_COUNT, _EP, _STEP, _T, _R, _L, _RMEAN, _LMEAN = range(8)


def empty_state(env_id: str, gym_version: str | None) -> dict[str, Any]:
    """The derivation of a run with no episode, judged as its evaluation will be."""
    trials, threshold = catalogue.solving_criteria(env_id, gym_version)
    entry = catalogue.lookup(env_id)
    return {
        "trials": trials,
        "threshold": threshold,
        "listed": entry is not None,
        "resets": {},
        "tail": _columns(),
        "folded": _empty_folded(),
    }


def _columns(t: Any = (), r: Any = (), ln: Any = (), e: Any = (), s: Any = ()) -> dict[str, np.ndarray]:
    """Episodes in merged order: end time, reward, length, evaluation or not, source number."""
    return {
        "t": np.asarray(t, dtype=float),
        "r": np.asarray(r, dtype=float),
        "l": np.asarray(ln, dtype=np.int64),
        "e": np.asarray(e, dtype=bool),
        "s": np.asarray(s, dtype=np.int64),
    }


def _empty_folded() -> dict[str, Any]:
    return {
        "n": 0,
        "last_t": None,
        "train_n": 0,
        "train_steps": 0,
        "train_sum": 0.0,
        "train_last_t": None,
        "eval_n": 0,
        "eval_sum": 0.0,
        "outcomes": [0, 0, 0],
        # the last trials - 1 training episodes: where the windows and trailing means continue from
        "window": {
            "r": np.empty(0),
            "l": np.empty(0, dtype=np.int64),
            "t": np.empty(0),
            "steps": np.empty(0, dtype=np.int64),
        },
        "best": None,  # [mean, start, error]
        "solved": None,  # [start, steps before it, its end time]
        "size": 1,
        "cells": np.empty((0, 8)),
    }


def advance(
    state: dict[str, Any],
    source: int,
    initial_reset: float | None,
    timestamps: Sequence[float],
    rewards: Sequence[float],
    lengths: Sequence[int],
    types: Sequence[str] | None,
) -> dict[str, Any] | None:
    """``state`` after one chunk of ``source``; None when the chunk ends before the folded part (the
    caller rebuilds from every chunk)."""
    if not timestamps:
        return state
    folded = state["folded"]
    if folded["last_t"] is not None and min(timestamps) < folded["last_t"]:
        return None
    key = str(source)
    if key not in state["resets"]:
        state["resets"][key] = initial_reset if initial_reset is not None else float(timestamps[0])
    is_eval = [t == "e" for t in types] if types is not None else [False] * len(timestamps)
    new = _columns(timestamps, rewards, lengths, is_eval, [source] * len(timestamps))
    merged = {k: np.concatenate([v, new[k]]) for k, v in state["tail"].items()}
    order = np.lexsort((merged["s"], merged["t"]))  # by end time, ties by source; stable within one
    merged = {k: v[order] for k, v in merged.items()}
    over = max(0, len(merged["t"]) - TAIL)
    if over:
        _fold(state, folded, {k: v[:over] for k, v in merged.items()})
    state["tail"] = {k: v[over:] for k, v in merged.items()}
    return state


def rebuild(
    env_id: str, gym_version: str | None, episodes: Episodes, sources: list[int], resets: dict[int, float]
) -> dict[str, Any]:
    """The derivation of a run's merged ``episodes`` (``sources``: each one's source number)."""
    state = empty_state(env_id, gym_version)
    state["resets"] = {str(k): v for k, v in resets.items()}
    columns = _columns(episodes.timestamps, episodes.rewards, episodes.lengths, episodes.is_evaluation, sources)
    over = max(0, len(episodes) - TAIL)
    if over:
        _fold(state, state["folded"], {k: v[:over] for k, v in columns.items()})
    state["tail"] = {k: v[over:] for k, v in columns.items()}
    return state


def _fold(state: dict[str, Any], folded: dict[str, Any], eps: dict[str, np.ndarray]) -> None:
    """Fold episodes (the merged order's next ones) into the aggregates, in place."""
    trials, threshold = state["trials"], state["threshold"]
    folded["n"] += len(eps["t"])
    folded["last_t"] = float(eps["t"][-1])
    evaluation = eps["e"]
    folded["eval_n"] += int(evaluation.sum())
    folded["eval_sum"] += float(eps["r"][evaluation].sum())
    r, ln, t = eps["r"][~evaluation], eps["l"][~evaluation], eps["t"][~evaluation]
    k = len(r)
    if not k:
        return
    base, steps0 = folded["train_n"], folded["train_steps"]
    steps_before = steps0 + np.concatenate([[0], np.cumsum(ln[:-1])]).astype(np.int64)
    window = folded["window"]
    p = len(window["r"])
    ext_r = np.concatenate([window["r"], r])
    ext_l = np.concatenate([window["l"].astype(float), ln.astype(float)])
    ext_t = np.concatenate([window["t"], t])
    ext_steps = np.concatenate([window["steps"], steps_before])
    cs_r = np.concatenate([[0.0], np.cumsum(ext_r)])
    cs_l = np.concatenate([[0.0], np.cumsum(ext_l)])
    # trailing means at each new episode: over its last min(index + 1, trials) episodes
    ends = np.arange(p + 1, p + k + 1)
    global_index = base + np.arange(k)
    widths = np.minimum(global_index + 1, trials)
    r_mean = (cs_r[ends] - cs_r[ends - widths]) / widths
    l_mean = (cs_l[ends] - cs_l[ends - widths]) / widths
    # full windows ending at a new episode: their start (global), their mean
    full = global_index + 1 >= trials
    if full.any():
        w_ends = ends[full]
        means = (cs_r[w_ends] - cs_r[w_ends - trials]) / trials
        starts_local = w_ends - trials  # index into the ext arrays
        i = int(np.argmax(means))
        best = folded["best"]
        if best is None or means[i] > best[0]:
            rewards = ext_r[starts_local[i] : starts_local[i] + trials]
            start = int(global_index[full][i]) - trials + 1
            folded["best"] = [float(np.mean(rewards)), start, solved_stats.window_error(rewards, trials, False)]
        if folded["solved"] is None and threshold is not None:
            hit = np.flatnonzero(means >= threshold)
            if len(hit):
                j = int(starts_local[hit[0]])
                start = int(global_index[full][hit[0]]) - trials + 1
                folded["solved"] = [start, int(ext_steps[j]), float(ext_t[j])]
    folded["train_n"] = base + k
    folded["train_steps"] = int(steps0 + ln.sum())
    folded["train_sum"] += float(r.sum())
    folded["train_last_t"] = float(t[-1])
    folded["outcomes"] = [
        folded["outcomes"][0] + int((r > 0).sum()),
        folded["outcomes"][1] + int((r == 0).sum()),
        folded["outcomes"][2] + int((r < 0).sum()),
    ]
    keep = max(0, trials - 1)
    folded["window"] = {
        "r": ext_r[len(ext_r) - keep :],
        "l": ext_l[len(ext_l) - keep :].astype(np.int64),
        "t": ext_t[len(ext_t) - keep :],
        "steps": ext_steps[len(ext_steps) - keep :],
    }
    new = np.column_stack(
        [np.ones(k), global_index.astype(float), steps_before.astype(float), t, r, ln.astype(float), r_mean, l_mean]
    )
    folded["cells"], folded["size"] = _add_cells(folded["cells"].copy(), folded["size"], new)


def _add_cells(cells: np.ndarray, size: int, new: np.ndarray) -> tuple[np.ndarray, int]:
    """Per-episode rows ``new`` pooled onto ``cells`` (full ones of ``size`` episodes, the last may be
    partial); the size doubles while more than ``MAX_POINTS`` cells would be needed."""
    while len(new):
        if len(cells) and cells[-1, _COUNT] < size:  # fill the partial cell first
            room = int(size - cells[-1, _COUNT])
            cells[-1] = _pooled(np.vstack([cells[-1:], new[:room]])[None, :, :])[0]
            new = new[room:]
            continue
        if len(cells) + -(-len(new) // size) > MAX_POINTS:
            cells, size = _halved(cells), size * 2
            continue
        full = len(new) // size * size
        blocks = [_pooled(new[:full].reshape(-1, size, 8))] if full else []
        if full < len(new):
            blocks.append(_pooled(new[full:][None, :, :]))
        cells = np.vstack([cells, *blocks])
        new = new[:0]
    return cells, size


def _halved(cells: np.ndarray) -> np.ndarray:
    """Cells of twice the size: pairs pooled (an odd last one stays, now partial)."""
    even = len(cells) // 2 * 2
    out = _pooled(cells[:even].reshape(-1, 2, 8)) if even else np.empty((0, 8))
    return np.vstack([out, cells[even:]])


def _pooled(groups: np.ndarray) -> np.ndarray:
    """One cell per group (axis 1): sums, and the trailing means of the group's last row."""
    out = groups.sum(axis=1)
    out[:, _RMEAN], out[:, _LMEAN] = groups[:, -1, _RMEAN], groups[:, -1, _LMEAN]
    return out


def pack(state: dict[str, Any]) -> bytes:
    """``state`` as bytes for ``live_derived.state``: a JSON header of its numbers and its arrays' raw
    bytes after it (a state of 2,000 cells and a tail of 2,000 episodes as JSON cost 35 ms a chunk to
    write and read back; so, under 1 ms: bench/live_pages.py)."""
    arrays: list[tuple[str, np.ndarray]] = []

    def strip(value: Any, path: str) -> Any:
        if isinstance(value, np.ndarray):
            arrays.append((path, np.ascontiguousarray(value)))
            return None
        if isinstance(value, dict):
            return {k: strip(v, f"{path}.{k}" if path else k) for k, v in value.items()}
        return value

    header = strip(state, "")
    header["arrays"] = [[path, a.dtype.str, list(a.shape)] for path, a in arrays]
    head = json.dumps(header).encode()  # a sum past a float is inf: kept as JSON spells it
    return len(head).to_bytes(4, "little") + head + b"".join(a.tobytes() for _, a in arrays)


def unpack(data: bytes) -> dict[str, Any]:
    """The state :func:`pack` wrote."""
    size = int.from_bytes(data[:4], "little")
    state: dict[str, Any] = json.loads(data[4 : 4 + size])
    offset = 4 + size
    for path, dtype, shape in state.pop("arrays"):
        kind = np.dtype(dtype)
        count = int(np.prod(shape)) if shape else 1
        array = np.frombuffer(data, dtype=kind, count=count, offset=offset).reshape(shape).copy()
        offset += count * kind.itemsize
        *parents, name = path.split(".")
        node = state
        for parent in parents:
            node = node[parent]
        node[name] = array
    return state


def view_of(state: dict[str, Any]) -> dict[str, Any]:
    """What the pages show of a run at ``state``: ``score`` (an EvaluationScore's fields and
    ``ranking_mean``) and ``curves`` (as an evaluation's page curves), JSON-ready, no NaN or infinity."""
    folded = dict(state["folded"])  # a copy (_fold replaces its values): the tail is folded for the view only
    if len(state["tail"]["t"]):
        _fold(state, folded, state["tail"])
    trials, threshold = state["trials"], state["threshold"]
    resets = [float(v) for v in state["resets"].values()]
    first_reset = min(resets) if resets else None
    n = folded["train_n"]
    best, solved = folded["best"], folded["solved"]
    score = {
        "episode_t_value": solved[0] if solved else None,
        "timestep_t_value": solved[1] if solved else None,
        "mean": best[0] if best else None,
        "error": best[2] if best else None,
        "number_episodes": n,
        "number_timesteps": folded["train_steps"],
        "seconds_to_solve": solved[2] - first_reset if solved and first_reset is not None else None,
        "seconds_in_total": (
            folded["train_last_t"] - first_reset if folded["train_last_t"] is not None and first_reset is not None else None
        ),
        "episodes_mean": folded["train_sum"] / n if 0 < n < trials else None,
        "evaluation_episodes": folded["eval_n"],
        "evaluation_mean": folded["eval_sum"] / folded["eval_n"] if folded["eval_n"] else None,
        "trials": trials,
        "reward_threshold": threshold,
        "solved": solved is not None,
    }
    score = {k: _finite(v) for k, v in score.items()}
    score["ranking_mean"] = solved_stats.ranking_mean(score["mean"], score["episodes_mean"])
    return {"score": score, "listed": state["listed"], "curves": _curves(folded, trials, threshold, first_reset)}


def _curves(folded: dict[str, Any], trials: int, threshold: float | None, first_reset: float | None) -> dict[str, Any]:
    cells = folded["cells"]
    if not len(cells):
        return {}
    count = cells[:, _COUNT]
    won, drawn, lost = folded["outcomes"]
    seconds = cells[:, _T] / count - (first_reset if first_reset is not None else 0.0)
    return {
        "trials": trials,
        "threshold": threshold,
        "episodes": folded["train_n"],
        "binned": folded["size"] > 1,
        "bin": folded["size"],
        "outcomes": {"won": won, "drawn": drawn, "lost": lost},
        "episode": _series(cells[:, _EP] / count),
        "timestep": _series(cells[:, _STEP] / count),
        "seconds": _series(seconds),
        "reward": _series(cells[:, _R] / count),
        "length": _series(cells[:, _L] / count),
        "reward_mean": _series(cells[:, _RMEAN]),
        "length_mean": _series(cells[:, _LMEAN]),
    }


def _series(values: np.ndarray) -> list[float | None]:
    rounded = np.round(values, 6)
    return [x if math.isfinite(x) else None for x in rounded.tolist()]


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value
