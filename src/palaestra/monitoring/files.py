"""The training-directory format: file names, JSON documents and how they are written.

This module is the one implementation of the 2017 ``openaigym.*`` layout (spec §3.2-3.3). The
Monitor writes through it, ``load_results`` reads through it, and the upload client and the
scoreboard use its names. Nothing else should spell out a file name.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from palaestra.durable import write_atomically

FILE_PREFIX = "openaigym"
MANIFEST_PREFIX = f"{FILE_PREFIX}.manifest."
MANIFEST_SUFFIX = ".manifest.json"
STATS_SUFFIX = ".stats.json"
#: palaestra's append-only episode journal, kept beside the stats file while a Monitor is open so
#: that a killed process loses nothing; the 2017 loader never looks at it.
JOURNAL_SUFFIX = ".journal"
VIDEO_META_SUFFIX = ".meta.json"
#: palaestra's provenance document (what ran: code, arguments, seeds; :mod:`.provenance`). gym 0.9.4's
#: ``load_results`` reads only ``openaigym.manifest.*``, so it never sees it.
PROVENANCE_PREFIX = f"{FILE_PREFIX}.provenance."
PROVENANCE_SUFFIX = ".json"

#: Names the 2017 upload client (and so the scoreboard) accepts inside a video archive.
VIDEO_NAME_RE = re.compile(r"^[\w.-]+\.(mp4|avi|json)$")
VIDEO_META_NAME_RE = re.compile(r"^[\w.-]+\.meta\.json$")

CONTENT_TYPE_MP4 = "video/mp4"
CONTENT_TYPE_ANSI = "video/vnd.openai.ansivid"


def manifest_name(infix: str) -> str:
    return f"{MANIFEST_PREFIX}{infix}{MANIFEST_SUFFIX}"


def stats_name(infix: str) -> str:
    return f"{FILE_PREFIX}.episode_batch.{infix}{STATS_SUFFIX}"


def provenance_name(infix: str) -> str:
    return f"{PROVENANCE_PREFIX}{infix}{PROVENANCE_SUFFIX}"


def detect_provenance_files(directory: str | os.PathLike[str]) -> list[str]:
    """Paths of the provenance documents in ``directory``, sorted."""
    return sorted(
        os.path.join(directory, name)
        for name in os.listdir(directory)
        if name.startswith(PROVENANCE_PREFIX) and name.endswith(PROVENANCE_SUFFIX)
    )


def journal_path(stats_path: str | os.PathLike[str]) -> str:
    return os.fspath(stats_path) + JOURNAL_SUFFIX


def sub_env_infix(infix: str, index: int, num_envs: int) -> str:
    """The infix of sub-environment ``index`` of a vector Monitor in its video names: ``{infix}-{index}``,
    the index zero-padded to the width of the largest one, so that names sort in sub-environment order.
    (The vector Monitor's stats file and manifest are the whole run's: ``{infix}`` alone.)"""
    return f"{infix}-{index:0{len(str(num_envs - 1))}d}"


def video_base_name(infix: str, episode_id: int) -> str:
    """``openaigym.video.{infix}.video{E:06}`` (the extension is the recorder's)."""
    return f"{FILE_PREFIX}.video.{infix}.video{episode_id:06}"


def detect_training_manifests(directory: str | os.PathLike[str], files: Iterable[str] | None = None) -> list[str]:
    """Paths of the manifests in ``directory`` (names starting ``openaigym.manifest.``), sorted."""
    names = os.listdir(directory) if files is None else files
    return sorted(
        os.path.join(directory, name)
        for name in names
        if name.startswith(MANIFEST_PREFIX) and name.endswith(MANIFEST_SUFFIX)
    )


def detect_monitor_files(directory: str | os.PathLike[str]) -> list[str]:
    """Paths of every file a Monitor may have written in ``directory``."""
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.startswith(f"{FILE_PREFIX}."))


def clear_monitor_files(directory: str | os.PathLike[str]) -> None:
    """Delete every ``openaigym.*`` file in ``directory`` (what ``Monitor(force=True)`` does)."""
    for path in detect_monitor_files(directory):
        os.unlink(path)


def json_default(obj: Any) -> Any:
    """``json.dumps`` hook for numpy values (the 2017 ``json_encode_np``)."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def atomic_write_json(path: str | os.PathLike[str], document: Any, *, durable: bool = True) -> None:
    """Write ``document`` as JSON so that readers see the old file or the new one, never half, and a
    power loss after it returns keeps the new one (:func:`palaestra.durable.write_atomically`).

    The temporary file is ``<path>~`` as in 2017, fsynced and replaced over the target with
    ``os.replace``. Episodes are journaled, not rewritten (:mod:`.journal`), so this runs when a
    Monitor starts and closes (and on every reset only with ``write_upon_reset=True``). ``durable=False``:
    see :func:`~palaestra.durable.write_atomically`.
    """
    data = json.dumps(document, default=json_default).encode("utf-8")
    write_atomically(path, lambda f: f.write(data), durable=durable)


def atomic_write_json_columns(path: str | os.PathLike[str], document: dict[str, Any]) -> None:
    """:func:`atomic_write_json` for a document whose long lists are numpy arrays (a stats document
    from :meth:`palaestra.episodes.Episodes.to_stats_columns`), encoded by orjson straight from the
    arrays. For the vector Monitor's close: at 55,000 episodes (512 sub-environments, 10,000 steps)
    ``json.dumps`` of the lists took 40-75 ms and making the lists 15-20 ms; orjson from the arrays
    takes about 3 ms (bench/vector_monitor.py). The text is JSON that ``json`` reads back to the same
    values (shortest round-trip floats, as ``json`` writes them)."""
    data = orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY)
    write_atomically(path, lambda f: f.write(data))


def read_json(path: str | os.PathLike[str]) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def manifest_document(stats_basename: str, videos: list[tuple[str, str]], env_info: dict[str, Any]) -> dict[str, Any]:
    """The manifest: the 2017 keys. (Before issue 27 the vector Monitor wrote a manifest per
    sub-environment with palaestra's ``"journal": {"file": name, "source": index}``, naming a shared
    journal; ``load_results`` still reads those directories.)"""
    return {
        "stats": stats_basename,
        "videos": [[os.path.basename(v), os.path.basename(m)] for v, m in videos],
        "env_info": env_info,
    }


def ensure_directory(directory: str | os.PathLike[str]) -> Path:
    path = Path(directory).absolute()
    path.mkdir(parents=True, exist_ok=True)
    return path
