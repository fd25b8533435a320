"""Loading a training directory: ``load_results`` and the 2017 merge rules (spec §3.6)."""

from __future__ import annotations

import json
import math
import os
from typing import Any, TypedDict

import numpy as np

from palaestra.episodes import Episodes, EpisodesError
from palaestra.errors import ResultsError
from palaestra.monitoring import files
from palaestra.monitoring.journal import (
    RECORD_DTYPE,
    episodes_of_records,
    read_journal,
    read_journal_records,
    split_by_source,
)

#: A sub-environment of a vector Monitor of the layout before issue 27 (a stats file and a manifest per
#: sub-environment): (the shared journal's path, the sub-environment's source index).
JournalSource = tuple[str, int]


class Results(TypedDict):
    """What :func:`load_results` returns: the 2017 keys, then palaestra's.

    Per-episode lists are sorted by ``timestamps`` (the time each episode ended) across every
    stats file of the directory.
    """

    manifests: list[str]
    env_info: dict[str, Any]
    data_sources: list[int]
    timestamps: list[float]
    episode_lengths: list[int]
    episode_rewards: list[float]
    episode_types: list[str] | None
    initial_reset_timestamps: list[float]
    initial_reset_timestamp: float
    videos: list[tuple[str, str]]
    # palaestra's additions
    episode_truncated: list[bool]
    abandoned_steps: list[int]
    abandoned_timestamps: list[float]
    total_steps: int
    #: each episode's sub-environment in a vector Monitor's run (0 for a single Monitor's episodes)
    env_index: list[int]


def read_stats_file(
    path: str, journal: JournalSource | None = None, journal_cache: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Read one stats file (or the journal a killed Monitor left beside it) and check its shape.

    ``journal`` names the shared journal and the source index of this stats file's sub-environment,
    for a vector Monitor of the earlier layout (what its manifest says); without it the journal is
    the one beside the file (every Monitor's now).
    ``journal_cache`` (a dict kept across calls) reads a shared journal once for all its sources.
    """
    doc: dict[str, Any] | None = None
    if os.path.exists(path):
        doc = _read_json_file(path, "stats file")
    journal_file = journal[0] if journal is not None else files.journal_path(path)
    if os.path.exists(journal_file):
        try:
            if journal is None:
                from_journal = read_journal(journal_file)
            else:
                from_journal = _journal_source(journal_file, journal[1], journal_cache)
        except (OSError, ValueError) as e:
            raise ResultsError(f"Episode journal {journal_file} cannot be read: {e}") from None
        if doc is None or _size(from_journal) > _size(doc):
            doc = from_journal
    if doc is None:
        raise ResultsError(f"Stats file {path} named by a manifest does not exist")
    _check_stats(doc, path)
    return doc


def _journal_source(path: str, source: int, cache: dict[str, Any] | None) -> dict[str, Any]:
    """One source's document of a shared journal, splitting the journal once per ``cache``."""
    if cache is None:
        return read_journal(path, source)
    if path not in cache:
        journal = read_journal_records(path)
        cache[path] = (journal.initial_reset_timestamp, split_by_source(journal.records))
    initial, by_source = cache[path]
    records = by_source.get(source)
    return episodes_of_records(initial, records if records is not None else np.zeros(0, RECORD_DTYPE)).to_stats_document()


def _size(doc: dict[str, Any]) -> int:
    return len(doc.get("timestamps") or []) + len(doc.get("abandoned_steps") or [])


def _read_json_file(path: str, what: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise ResultsError(f"Cannot read {what} {path}: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ResultsError(f"{what.capitalize()} {path} is not valid JSON: {e}") from None


def _check_stats(doc: Any, path: str) -> None:
    if not isinstance(doc, dict):
        raise ResultsError(f"Stats file {path} must hold a JSON object, not {type(doc).__name__}")
    for key in ("timestamps", "episode_lengths", "episode_rewards"):
        if not isinstance(doc.get(key), list):
            raise ResultsError(f"Stats file {path} has no list {key!r}")
    n = len(doc["timestamps"])
    for key in ("episode_lengths", "episode_rewards"):
        if len(doc[key]) != n:
            raise ResultsError(
                f"Stats file {path} is inconsistent: {len(doc[key])} {key} but {n} timestamps"
            )
    for key in ("timestamps", "episode_rewards", "episode_lengths"):
        for value in doc[key]:
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise ResultsError(f"Stats file {path} has a non-numeric or non-finite value in {key!r}: {value!r}")
    types = doc.get("episode_types")
    if types is not None:
        if not isinstance(types, list) or any(t not in ("t", "e") for t in types):
            raise ResultsError(f"Stats file {path} has episode_types other than 't' and 'e'")
        if len(types) < n:
            raise ResultsError(f"Stats file {path} is inconsistent: {len(types)} episode_types but {n} timestamps")
    env_index = doc.get("env_index")
    if env_index is not None and (
        not isinstance(env_index, list)
        or len(env_index) != n
        or any(not isinstance(k, int) or isinstance(k, bool) or k < 0 for k in env_index)
    ):
        raise ResultsError(
            f"Stats file {path} has a malformed env_index: it must list one sub-environment index (an "
            f"integer >= 0) per episode, {n} in all"
        )


def collapse_env_infos(env_infos: list[dict[str, Any]], training_dir: str) -> dict[str, Any]:
    """The one ``env_info`` of a directory; unequal ones mean commingled runs (a 2017 error)."""
    if not env_infos:
        raise ResultsError(f"No env_info found in the manifests of {training_dir}")
    first = env_infos[0]
    for other in env_infos[1:]:
        if other != first:
            raise ResultsError(
                f"Found two unequal env_infos: {first} and {other}. This usually indicates that your "
                f"training directory {training_dir} has commingled results from multiple runs."
            )
    for key in ("env_id", "gym_version"):
        if key not in first:
            raise ResultsError(
                f"env_info {first} in {training_dir} is missing required key {key}. "
                "(HINT: the Monitor writes env_id only when the environment has a spec; create it with "
                "gymnasium.make.)"
            )
    return first


def _read_manifests(training_dir: str) -> list[str]:
    if not os.path.exists(training_dir):
        raise ResultsError(f"Training directory {training_dir} does not exist")
    if not os.path.isdir(training_dir):
        raise ResultsError(f"Training directory {training_dir} is not a directory")
    manifests = files.detect_training_manifests(training_dir)
    if not manifests:
        raise ResultsError(
            f"Could not find any manifest files in {training_dir}. (HINT: is this the directory you gave "
            "to palaestra.Monitor?)"
        )
    return manifests


def load_env_info_from_manifests(manifests: list[str], training_dir: str) -> dict[str, Any]:
    """Only the collapsed ``env_info`` of the given manifests."""
    env_infos = []
    for path in manifests:
        manifest = _read_json_file(path, "manifest")
        if not isinstance(manifest, dict) or "env_info" not in manifest:
            raise ResultsError(f"Manifest {path} has no env_info")
        env_infos.append(manifest["env_info"])
    return collapse_env_infos(env_infos, training_dir)


def load_results(training_dir: str | os.PathLike[str]) -> Results:
    """Load and merge every run recorded in ``training_dir``.

    Several manifests (several monitors, resumed runs, vector sub-environments) are merged and their
    episodes sorted by end time, as in 2017. Raises :class:`~palaestra.errors.ResultsError`, naming
    the file and the problem, for a missing directory, no manifests, unreadable or inconsistent JSON,
    or manifests with unequal ``env_info`` (commingled runs).
    """
    training_dir = os.path.abspath(os.fspath(training_dir))
    manifests = _read_manifests(training_dir)
    stats_files: list[str] = []
    journals: list[JournalSource | None] = []
    videos: list[tuple[str, str]] = []
    env_infos = []
    for path in manifests:
        manifest = _read_json_file(path, "manifest")
        if not isinstance(manifest, dict) or not isinstance(manifest.get("stats"), str):
            raise ResultsError(f"Manifest {path} has no 'stats' file name")
        if "env_info" not in manifest:
            raise ResultsError(f"Manifest {path} has no env_info")
        stats_files.append(os.path.join(training_dir, manifest["stats"]))
        journals.append(_manifest_journal(manifest, path, training_dir))
        for pair in manifest.get("videos") or []:
            if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
                raise ResultsError(f"Manifest {path} has a malformed video entry {pair!r}")
            videos.append((os.path.join(training_dir, pair[0]), os.path.join(training_dir, pair[1])))
        env_infos.append(manifest["env_info"])
    env_info = collapse_env_infos(env_infos, training_dir)
    merged = merge_stats_files(stats_files, journals)
    return Results(manifests=manifests, env_info=env_info, videos=videos, **merged)  # type: ignore[typeddict-item]


def _manifest_journal(manifest: dict[str, Any], path: str, training_dir: str) -> JournalSource | None:
    """The shared journal that the manifest of a vector Monitor's sub-environment names (the layout
    palaestra wrote before issue 27: ``"journal": {"file": name, "source": index}``)."""
    journal = manifest.get("journal")
    if journal is None:
        return None
    name = journal.get("file") if isinstance(journal, dict) else None
    source = journal.get("source") if isinstance(journal, dict) else None
    if not isinstance(name, str) or os.path.basename(name) != name or not isinstance(source, int) or source < 0:
        raise ResultsError(
            f"Manifest {path} has a malformed journal entry {journal!r}: it must be "
            '{"file": <a file name in the directory>, "source": <a sub-environment index>}'
        )
    return os.path.join(training_dir, name), source


def merge_stats_files(stats_files: list[str], journals: list[JournalSource | None] | None = None) -> dict[str, Any]:
    """Merge stats files the 2017 way, with two defects fixed.

    ``journals`` gives, for each stats file of a sub-environment of a vector Monitor of the earlier
    layout, the shared journal and the sub-environment's source index in it (``None`` for the others).
    ``env_index`` is each episode's sub-environment: a vector Monitor's stats file lists it, the
    earlier layout's is the journal source, and any other stats file's episodes have 0.

    * ``data_sources[k]`` indexes ``initial_reset_timestamps`` (2017 advanced the index over empty
      files too, so the two lists could disagree).
    * ``episode_types`` is cut to the number of completed episodes per file (2017 appended the type
      at reset, leaving one extra entry for an unfinished last episode).
    """
    journal_cache: dict[str, Any] = {}
    docs = []
    for path, journal in zip(stats_files, journals or [None] * len(stats_files), strict=True):
        doc = read_stats_file(path, journal, journal_cache)
        if journal is not None and not doc.get("env_index"):  # the earlier layout: the journal's source
            doc = {**doc, "env_index": [journal[1]] * len(doc["timestamps"])}
        docs.append(doc)
    return merge_stats_documents(docs, stats_files)


def merge_stats_documents(docs: list[dict[str, Any]], names: list[str] | None = None) -> dict[str, Any]:
    """:func:`merge_stats_files` on stats documents already read, in manifest order (the scoreboard
    merges the sources of a live run with it, so that sealing one equals uploading its directory).
    ``names`` (each document's file) name the document in errors."""
    tables: list[Episodes] = []
    abandoned: list[tuple[float, int]] = []
    any_types = False
    for i, doc in enumerate(docs):
        what = f"Stats file {names[i]}" if names else f"Stats document {i}"
        try:
            episodes = Episodes.from_stats_document(doc, what)
        except EpisodesError as e:
            raise ResultsError(str(e)) from None
        abandoned.extend(zip(episodes.abandoned_timestamps.tolist(), episodes.abandoned_steps.tolist()))
        if len(episodes) == 0:
            continue
        any_types = any_types or bool(doc.get("episode_types"))
        tables.append(episodes)
    initial_resets = [float(t.initial_reset_timestamp) for t in tables]  # type: ignore[arg-type]

    stamps = _concatenated(tables, "timestamps")
    order = np.argsort(stamps, kind="stable")
    sources = np.repeat(np.arange(len(tables)), [len(t) for t in tables])
    lengths = _concatenated(tables, "lengths")
    abandoned.sort()
    return {
        "data_sources": sources[order].tolist(),
        "timestamps": stamps[order].tolist(),
        "episode_lengths": lengths[order].tolist(),
        "episode_rewards": _concatenated(tables, "rewards")[order].tolist(),
        "episode_types": _concatenated(tables, "types")[order].tolist() if any_types else None,
        "episode_truncated": _concatenated(tables, "truncated")[order].tolist(),
        "initial_reset_timestamps": initial_resets,
        "initial_reset_timestamp": min(initial_resets) if initial_resets else 0,
        "abandoned_steps": [s for _, s in abandoned],
        "abandoned_timestamps": [t for t, _ in abandoned],
        "total_steps": int(lengths.sum()) + sum(s for _, s in abandoned),
        "env_index": _concatenated(tables, "env_index")[order].tolist(),
    }


def _concatenated(tables: list[Episodes], column: str) -> np.ndarray:
    """One column of several episode tables, end to end (an empty float column for none)."""
    return np.concatenate([getattr(t, column) for t in tables]) if tables else np.zeros(0)
