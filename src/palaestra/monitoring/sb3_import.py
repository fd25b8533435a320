"""Import Stable-Baselines3 ``monitor.csv`` files as a palaestra training directory.

SB3's ``Monitor`` writes one CSV file per (sub-)environment::

    #{"t_start": 1700000000.123, "env_id": "CartPole-v1"}
    r,l,t
    21.0,21,0.51234
    ...

``r`` is the episode reward, ``l`` its length and ``t`` the seconds from ``t_start`` (the Monitor's
creation) to the end of the episode; extra columns (``info_keywords``) may follow and are ignored.

:func:`import_sb3` turns several such files into one training directory in the 2017 format: one
manifest and one stats file per input file (infixes ``0.sb3``, ``1.sb3``, ...), all with the same
``env_info``, so :func:`palaestra.load_results` merges them and :func:`palaestra.upload` uploads them
like a directory the palaestra Monitor wrote.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium

from palaestra._version import __version__
from palaestra.episodes import Episodes
from palaestra.errors import ResultsError
from palaestra.monitoring import files

logger = logging.getLogger("palaestra.sb3_import")

#: What SB3 names its files: ``monitor.csv`` in a directory, or ``<name>.monitor.csv``.
SB3_MONITOR_SUFFIX = "monitor.csv"
#: The ``uid`` half of the infix of every imported manifest: ``{index}.sb3``.
INFIX_UID = "sb3"
REQUIRED_COLUMNS = ("r", "l", "t")


@dataclass
class SB3MonitorFile:
    """The content of one SB3 ``monitor.csv`` file."""

    path: str
    t_start: float
    env_id: str | None
    rewards: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    #: seconds since ``t_start`` at the end of each episode (the ``t`` column)
    times: list[float] = field(default_factory=list)

    @property
    def timestamps(self) -> list[float]:
        """Unix time at the end of each episode (what the 2017 stats file stores)."""
        return [self.t_start + t for t in self.times]


@dataclass
class ImportSummary:
    """What :func:`import_sb3` wrote."""

    directory: str
    env_id: str
    manifests: list[str]
    episodes: int


def read_sb3_monitor(path: str | os.PathLike[str]) -> SB3MonitorFile:
    """Parse one SB3 ``monitor.csv`` file; raises :class:`ResultsError` naming the file and the line."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            first = f.readline()
            header = _parse_header(first, path)
            reader = csv.DictReader(f)
            columns = reader.fieldnames or []
            missing = [c for c in REQUIRED_COLUMNS if c not in columns]
            if missing:
                raise ResultsError(
                    f"{path} is not an SB3 monitor file: line 2 must be the CSV header 'r,l,t' "
                    f"(found {','.join(columns) or 'nothing'}; missing {', '.join(missing)})"
                )
            monitor = SB3MonitorFile(path=path, t_start=header["t_start"], env_id=header["env_id"])
            for row in reader:
                _add_row(monitor, row, reader.line_num + 1)  # + the '#' header line
    except OSError as e:
        raise ResultsError(f"Cannot read SB3 monitor file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ResultsError(f"SB3 monitor file {path} is not UTF-8 text: {e}") from None
    return monitor


def _parse_header(line: str, path: str) -> dict[str, Any]:
    if not line.startswith("#"):
        raise ResultsError(
            f"{path} is not an SB3 monitor file: line 1 must be '#' followed by a JSON header such as "
            '#{"t_start": 1700000000.0, "env_id": "CartPole-v1"}'
        )
    try:
        header = json.loads(line[1:])
    except ValueError as e:
        raise ResultsError(f"{path}: the '#' header on line 1 is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise ResultsError(f"{path}: the '#' header on line 1 must be a JSON object")
    t_start = header.get("t_start")
    if not isinstance(t_start, (int, float)) or isinstance(t_start, bool) or not math.isfinite(t_start):
        raise ResultsError(f"{path}: the '#' header on line 1 has no numeric t_start (got {t_start!r})")
    env_id = header.get("env_id")
    if env_id in (None, "", "None"):
        env_id = None
    elif not isinstance(env_id, str):
        raise ResultsError(f"{path}: env_id in the '#' header must be a string (got {env_id!r})")
    return {"t_start": float(t_start), "env_id": env_id}


def _add_row(monitor: SB3MonitorFile, row: dict[str | Any, str | Any], line: int) -> None:
    if all(v in (None, "") for v in row.values()):
        return  # a blank line
    try:
        reward = float(row["r"])
        length_f = float(row["l"])
        t = float(row["t"])
    except (TypeError, ValueError):
        raise ResultsError(
            f"{monitor.path}, line {line}: r, l and t must be numbers (got r={row.get('r')!r}, "
            f"l={row.get('l')!r}, t={row.get('t')!r})"
        ) from None
    if not (math.isfinite(reward) and math.isfinite(t)):
        raise ResultsError(f"{monitor.path}, line {line}: r and t must be finite (got r={reward}, t={t})")
    if not (math.isfinite(length_f) and length_f >= 0 and length_f == int(length_f)):
        raise ResultsError(
            f"{monitor.path}, line {line}: l must be a non-negative integer (got {row['l']!r})"
        )
    monitor.rewards.append(reward)
    monitor.lengths.append(int(length_f))
    monitor.times.append(t)


def expand_inputs(paths: list[str | os.PathLike[str]]) -> list[str]:
    """Files as given; a directory stands for the ``*monitor.csv`` files in it (as SB3's loader globs)."""
    found: list[str] = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            inside = sorted(str(q) for q in Path(p).glob(f"*{SB3_MONITOR_SUFFIX}"))
            if not inside:
                raise ResultsError(f"No SB3 monitor files (*{SB3_MONITOR_SUFFIX}) in directory {p}")
            found += inside
        else:
            found.append(p)
    if not found:
        raise ResultsError("No SB3 monitor files given")
    return found


def resolve_env_id(monitors: list[SB3MonitorFile], env_id: str | None) -> str:
    """The one env id of the import: ``env_id`` if given, else the files' headers, which must agree."""
    named = {m.env_id for m in monitors if m.env_id is not None}
    if env_id is not None:
        conflicting = sorted(named - {env_id})
        if conflicting:
            where = ", ".join(m.path for m in monitors if m.env_id in conflicting)
            raise ResultsError(
                f"--env-id {env_id} conflicts with env_id {', '.join(conflicting)} in the header of {where}. "
                "Import files of one environment at a time."
            )
        return env_id
    if not named:
        raise ResultsError(
            "The SB3 monitor files do not name their environment (env_id is null in their '#' header); "
            "pass it with --env-id ID (env_id=... in Python)."
        )
    if len(named) > 1:
        raise ResultsError(
            f"The SB3 monitor files come from different environments ({', '.join(sorted(named))}); "
            "import the files of each environment into its own directory."
        )
    return named.pop()


def stats_document(monitor: SB3MonitorFile) -> dict[str, Any]:
    """The 2017 stats document (spec §3.3) of one SB3 file, episodes in file order: the 2017 keys
    only, since SB3 records neither truncation nor abandoned episodes."""
    episodes = Episodes.from_columns(
        monitor.lengths, monitor.rewards, monitor.timestamps, initial_reset_timestamp=monitor.t_start,
        what=f"SB3 monitor file {monitor.path}",
    )
    return episodes.to_stats_document(palaestra_keys=False)


def env_info(env_id: str) -> dict[str, Any]:
    """The ``env_info`` of every imported manifest (equal for all of them, as ``load_results`` needs)."""
    return {
        "env_id": env_id,
        "gym_version": gymnasium.__version__,
        "palaestra_version": __version__,
        "imported_from": "stable-baselines3 monitor.csv",
    }


def import_sb3(
    paths: list[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    env_id: str | None = None,
    force: bool = False,
) -> ImportSummary:
    """Convert SB3 ``monitor.csv`` files (or directories of them) into the training directory ``out_dir``.

    Every file is read and checked before anything is written. ``out_dir`` must not already hold a
    training run, unless ``force`` (which deletes its ``openaigym.*`` files first).
    """
    monitors = [read_sb3_monitor(p) for p in expand_inputs(paths)]
    chosen = resolve_env_id(monitors, env_id)
    directory = os.fspath(files.ensure_directory(out_dir))
    if force:
        files.clear_monitor_files(directory)
    elif files.detect_training_manifests(directory):
        raise ResultsError(
            f"{directory} already holds a training run; import into an empty directory, or pass --force "
            "(force=True) to replace it."
        )
    info = env_info(chosen)
    manifests = []
    for index, monitor in enumerate(monitors):
        infix = f"{index}.{INFIX_UID}"
        stats = files.stats_name(infix)
        files.atomic_write_json(os.path.join(directory, stats), stats_document(monitor))
        manifest = os.path.join(directory, files.manifest_name(infix))
        files.atomic_write_json(manifest, files.manifest_document(stats, [], info))
        manifests.append(manifest)
        if not monitor.lengths:
            logger.warning("%s has no completed episodes", monitor.path)
    episodes = sum(len(m.lengths) for m in monitors)
    logger.debug(  # debug: `palaestra import sb3` prints the summary itself
        "Imported %d episodes of %s from %d SB3 monitor files into %s",
        episodes,
        chosen,
        len(monitors),
        directory,
    )
    return ImportSummary(directory=directory, env_id=chosen, manifests=manifests, episodes=episodes)
