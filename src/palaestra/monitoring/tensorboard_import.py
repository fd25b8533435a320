"""Import a run's TensorBoard event files as a palaestra training directory.

* :func:`import_tensorboard` -- one run (an event file, or the directory of one run's event files)
  into a training directory that ``palaestra results`` scores and ``palaestra upload`` uploads;
* :func:`read_event_scalars` -- the scalar series of an event file, by tag;
* :func:`find_event_files` -- the event files of one run under a path (several runs are refused).

What is read:

- **CleanRL** logs each finished episode as ``charts/episodic_return`` and ``charts/episodic_length``
  at the episode's global step. Every pair is one episode, in the order they were logged; its end
  time is the event's wall time. These episodes are exact.
- **Stable-Baselines3** logs no per-episode scalar, only ``rollout/ep_rew_mean`` and
  ``rollout/ep_len_mean`` (the means of the last 100 episodes) at each log step. Where the
  per-episode tags are absent, the steps between two log points are filled with
  ``round(steps / ep_len_mean)`` episodes of that mean return and length: the timesteps and the curve
  are close to the run's, the spread of the returns is lost, and "solved" is judged on these
  smoothed returns. The import says so (:attr:`TensorBoardImport.notes`, printed by the command,
  and kept in the directory's provenance and manifest, which the scoreboard shows).

The event files are read with TensorBoard's own loader (``tensorboard`` package, the
``tensorboard`` extra): the one TensorBoard's ``EventAccumulator`` reads through, without its
sampling and without the migration of every event to tensors (bench/tensorboard_import.py).
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from palaestra._version import __version__
from palaestra.episodes import Episodes
from palaestra.errors import ResultsError
from palaestra.extras import require
from palaestra.monitoring import files

__all__ = [
    "CLEANRL_TAGS",
    "SB3_TAGS",
    "EventScalars",
    "TensorBoardImport",
    "find_event_files",
    "import_tensorboard",
    "read_event_scalars",
]

logger = logging.getLogger("palaestra.tensorboard_import")

#: CleanRL's per-episode scalars: (return, length)
CLEANRL_TAGS = ("charts/episodic_return", "charts/episodic_length")
#: Stable-Baselines3's rolling means over the last 100 episodes: (return, length)
SB3_TAGS = ("rollout/ep_rew_mean", "rollout/ep_len_mean")
#: The ``uid`` half of the infix of the imported manifest: ``0.tensorboard``.
INFIX = "0.tensorboard"
#: TensorBoard's event files are named ``events.out.tfevents.{time}.{host}[...]``.
EVENT_FILE_MARK = "tfevents"
#: CleanRL names its runs ``{env_id}__{exp_name}__{seed}__{unix time}``.
CLEANRL_RUN_NAME = re.compile(r"^(?P<env_id>[^_].*?)__(?P<exp_name>.+)__(?P<seed>\d+)__(?P<time>\d+)$")

SB3_NOTE = (
    "approximate: the TensorBoard files hold no per-episode returns, only Stable-Baselines3's "
    "rollout/ep_rew_mean and rollout/ep_len_mean (means over the last 100 episodes) at each log step; "
    "the steps between two log points became round(steps / ep_len_mean) episodes of that mean return and "
    "length, so the timesteps and the curve are close, the spread of the returns is lost, and 'solved' "
    "is judged on smoothed returns"
)


@dataclass
class EventScalars:
    """The scalars of some event files: each wanted tag's steps, wall times and values, in file order."""

    paths: list[str]
    #: tag -> (steps, wall times, values)
    series: dict[str, tuple[list[int], list[float], list[float]]]
    #: every scalar tag found, wanted or not (for the errors that list them)
    tags: set[str]
    #: the wall time of the first event (the writer's creation: the run's start)
    first_wall_time: float | None

    def has(self, tag: str) -> bool:
        return bool(self.series.get(tag, ([], [], []))[0])


@dataclass
class TensorBoardImport:
    """What :func:`import_tensorboard` wrote."""

    directory: str
    env_id: str
    source: str
    episodes: int
    #: the scalar tags the episodes came from
    tags: tuple[str, str]
    #: what is approximate in the import (empty when the episodes are exact)
    notes: list[str] = field(default_factory=list)


def find_event_files(path: str | os.PathLike[str]) -> list[str]:
    """The event files of one run: ``path`` itself, or the event files in the directory ``path`` (or
    in its one sub-directory that holds some), sorted by name as TensorBoard orders them."""
    path = os.fspath(path)
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise ResultsError(f"No such file or directory: {path}")
    here = sorted(str(p) for p in Path(path).iterdir() if EVENT_FILE_MARK in p.name and p.is_file())
    if here:
        return here
    runs: dict[str, list[str]] = {}
    for p in sorted(Path(path).rglob(f"*{EVENT_FILE_MARK}*")):
        if p.is_file():
            runs.setdefault(str(p.parent), []).append(str(p))
    if not runs:
        raise ResultsError(
            f"No TensorBoard event files (events.out.tfevents.*) in {path} or below it: give the folder "
            "of one run (CleanRL's runs/RUN_NAME, SB3's tensorboard_log/PPO_1) or one event file"
        )
    if len(runs) > 1:
        names = ", ".join(os.path.relpath(r, path) for r in runs)
        first = os.path.join(path, os.path.relpath(next(iter(runs)), path))
        raise ResultsError(
            f"{path} holds {len(runs)} TensorBoard runs ({names}); import one run at a time, e.g. "
            f"palaestra import tensorboard {first} --env-id ID --out DIR"
        )
    return next(iter(runs.values()))


def _scalar(value: Any) -> float:
    """The number of one summary value: a legacy ``simple_value``, or a scalar tensor (torch's and
    newer writers', TensorBoard's ``scalars`` plugin format)."""
    if value.WhichOneof("value") == "simple_value":
        return float(value.simple_value)
    tensor = value.tensor
    for numbers in (tensor.float_val, tensor.double_val, tensor.int64_val, tensor.int_val):
        if len(numbers) == 1:
            return float(numbers[0])
    from tensorboard.util import tensor_util

    return float(np.asarray(tensor_util.make_ndarray(tensor)).reshape(-1)[0])


def read_event_scalars(paths: Iterable[str], wanted: Iterable[str]) -> EventScalars:
    """The ``wanted`` scalar series of the event files ``paths`` (read in that order) and every
    scalar tag they hold; raises :class:`ResultsError` naming a file that is not an event file."""
    require("tensorboard", "Importing TensorBoard event files")
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    paths = list(paths)
    series: dict[str, tuple[list[int], list[float], list[float]]] = {tag: ([], [], []) for tag in wanted}
    tags: set[str] = set()
    first: float | None = None
    for path in paths:
        try:
            # LegacyEventFileLoader: the Event protos as written (the non-legacy loader migrates each
            # to tensors first, ~7x slower on 10^6 scalars: bench/tensorboard_import.py)
            events = 0
            for event in LegacyEventFileLoader(path).Load():
                events += 1
                if first is None:
                    first = event.wall_time
                if not event.HasField("summary"):
                    continue
                for value in event.summary.value:
                    found = series.get(value.tag)
                    if found is None:
                        kind = value.WhichOneof("value")
                        if kind == "simple_value" or (kind == "tensor" and not value.tensor.tensor_shape.dim):
                            tags.add(value.tag)
                        continue
                    tags.add(value.tag)
                    found[0].append(event.step)
                    found[1].append(event.wall_time)
                    found[2].append(_scalar(value))
        except Exception as e:  # the loader's DataLossError, a protobuf DecodeError, ...
            raise ResultsError(
                f"{path} is not a readable TensorBoard event file ({type(e).__name__}: {e})"
            ) from None
        # the loader stops quietly at a damaged or truncated record (a file still being written ends
        # in one), as TensorBoard does; a file with no record at all is something else
        if not events and os.path.getsize(path):
            raise ResultsError(
                f"{path} is not a TensorBoard event file: not one record in it could be read (every writer "
                "starts a file with one)"
            )
    return EventScalars(paths=paths, series=series, tags=tags, first_wall_time=first)


def _cleanrl_episodes(scalars: EventScalars, what: str) -> Episodes:
    """One episode per (return, length) pair at the same global step, in the order they were logged."""
    r_steps, r_times, returns = scalars.series[CLEANRL_TAGS[0]]
    l_steps, _, lengths = scalars.series[CLEANRL_TAGS[1]]
    if len(returns) != len(lengths) or r_steps != l_steps:
        at = next((i for i, (a, b) in enumerate(zip(r_steps, l_steps)) if a != b), min(len(r_steps), len(l_steps)))
        raise ResultsError(
            f"{what}: {len(returns)} {CLEANRL_TAGS[0]} but {len(lengths)} {CLEANRL_TAGS[1]} scalars, which "
            f"part at the {at + 1}th (global steps {r_steps[at:at + 1]} and {l_steps[at:at + 1]}): every "
            "episode needs its return and its length at the same global step"
        )
    steps = np.asarray(lengths, dtype=np.float64)
    if len(steps) and (not np.isfinite(steps).all() or (steps < 0).any() or (steps != np.round(steps)).any()):
        bad = next(x for x in lengths if not (math.isfinite(x) and x >= 0 and x == round(x)))
        raise ResultsError(f"{what}: {CLEANRL_TAGS[1]} must be whole numbers of steps (found {bad})")
    return Episodes.from_columns(
        steps.astype(np.int64), returns, r_times, initial_reset_timestamp=scalars.first_wall_time, what=what
    )


def _sb3_episodes(scalars: EventScalars, what: str) -> Episodes:
    """Episodes rebuilt from SB3's rolling means (module docstring): at each log point, the steps since
    the last one (plus what was left over) become ``round(steps / ep_len_mean)`` episodes of the
    point's mean return and mean length, ending evenly between the two points' wall times."""
    steps, times, means = scalars.series[SB3_TAGS[0]]
    l_steps, _, mean_lengths = scalars.series[SB3_TAGS[1]]
    by_step = dict(zip(l_steps, mean_lengths))
    lengths: list[int] = []
    rewards: list[float] = []
    stamps: list[float] = []
    previous_step = 0
    previous_time = scalars.first_wall_time if scalars.first_wall_time is not None else times[0]
    carry = 0.0
    for step, time, mean in zip(steps, times, means):
        mean_length = by_step.get(step)
        if mean_length is None:
            raise ResultsError(
                f"{what}: {SB3_TAGS[0]} at step {step} has no {SB3_TAGS[1]} at the same step"
            )
        if not (math.isfinite(mean_length) and mean_length > 0):
            raise ResultsError(f"{what}: {SB3_TAGS[1]} at step {step} is {mean_length}, not a positive length")
        carry += max(step - previous_step, 0)
        count = max(round(carry / mean_length), 1 if not lengths else 0)
        if count:
            total = max(round(count * mean_length), count)
            base, extra = divmod(total, count)
            lengths += [base + 1] * extra + [base] * (count - extra)
            rewards += [float(mean)] * count
            stamps += np.linspace(previous_time, time, count + 1)[1:].tolist()
            carry = max(carry - total, 0.0)
            previous_time = time
        previous_step = step
    return Episodes.from_columns(
        lengths, rewards, stamps, initial_reset_timestamp=scalars.first_wall_time, what=what
    )


def cleanrl_run_name(paths: list[str]) -> re.Match[str] | None:
    """CleanRL's ``{env_id}__{exp_name}__{seed}__{time}`` in the name of the run's folder, if it is one."""
    return CLEANRL_RUN_NAME.match(os.path.basename(os.path.dirname(os.path.abspath(paths[0]))))


def _provenance(env_id: str, source: str, started: float | None, notes: list[str], seed: int | None) -> dict[str, Any]:
    """The provenance document of the import (docs/provenance.md): what is known of what ran, and
    where the episodes came from (``config``, which the evaluation page lists)."""
    document: dict[str, Any] = {
        "format": 1,
        "recorded_by": f"palaestra {__version__} import tensorboard",
        "started": (
            datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds") if started else None
        ),
        "env": {"id": env_id},
        "config": {"imported_from": f"TensorBoard event files ({source})", **({"import_note": notes[0]} if notes else {})},
    }
    if seed is not None:
        document["seeds"] = [{"reset": 0, "seed": seed}]
        document["resets"] = 1
    return document


def import_tensorboard(
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    env_id: str | None = None,
    force: bool = False,
) -> TensorBoardImport:
    """Convert one run's TensorBoard event files (an event file, or its run's folder) into the
    training directory ``out_dir`` (module docstring: which tags, and what is approximate).

    ``env_id`` defaults to the one in a CleanRL run folder's name. The files are read and checked
    before anything is written; ``out_dir`` must not already hold a training run, unless ``force``.
    """
    paths = find_event_files(path)
    run_name = cleanrl_run_name(paths)
    if env_id is None:
        if run_name is None:
            raise ResultsError(
                f"TensorBoard files do not record the environment, and {os.path.dirname(paths[0]) or '.'} is "
                "not a CleanRL run folder (ENV_ID__EXP__SEED__TIME); name it with --env-id ID (env_id=... in Python)"
            )
        env_id = run_name["env_id"]
    what = paths[0] if len(paths) == 1 else f"{os.path.dirname(paths[0])} ({len(paths)} event files)"
    scalars = read_event_scalars(paths, (*CLEANRL_TAGS, *SB3_TAGS))
    notes: list[str] = []
    if scalars.has(CLEANRL_TAGS[0]) or scalars.has(CLEANRL_TAGS[1]):
        missing = [t for t in CLEANRL_TAGS if not scalars.has(t)]
        if missing:
            raise ResultsError(
                f"{what} has {' and '.join(t for t in CLEANRL_TAGS if t not in missing)} but no scalar tag "
                f"{missing[0]}: each episode needs its return and its length. Scalar tags found: "
                f"{', '.join(sorted(scalars.tags))}"
            )
        tags, episodes = CLEANRL_TAGS, _cleanrl_episodes(scalars, what)
    elif scalars.has(SB3_TAGS[0]) and scalars.has(SB3_TAGS[1]):
        tags, episodes = SB3_TAGS, _sb3_episodes(scalars, what)
        notes.append(SB3_NOTE)
    else:
        found = ", ".join(sorted(scalars.tags)) or "none"
        raise ResultsError(
            f"{what} has no episode scalars: neither CleanRL's {' and '.join(CLEANRL_TAGS)} nor "
            f"Stable-Baselines3's {' and '.join(SB3_TAGS)}. Scalar tags found: {found}"
        )
    directory = os.fspath(files.ensure_directory(out_dir))
    if force:
        files.clear_monitor_files(directory)
    elif files.detect_training_manifests(directory):
        raise ResultsError(
            f"{directory} already holds a training run; import into an empty directory, or pass --force "
            "(force=True) to replace it."
        )
    source = os.path.basename(os.path.dirname(os.path.abspath(paths[0])))  # the run's name
    info = {
        "env_id": env_id,
        "gym_version": gymnasium.__version__,
        "palaestra_version": __version__,
        "imported_from": f"tensorboard {tags[0]}",
        **({"import_note": notes[0]} if notes else {}),
    }
    stats = files.stats_name(INFIX)
    # the Monitor's own writer of big stats documents (orjson over the numpy columns)
    files.atomic_write_json_columns(os.path.join(directory, stats), episodes.to_stats_columns(palaestra_keys=False))
    seed = int(run_name["seed"]) if run_name is not None else None
    files.atomic_write_json(
        os.path.join(directory, files.provenance_name(INFIX)),
        _provenance(env_id, source, scalars.first_wall_time, notes, seed),
    )
    files.atomic_write_json(os.path.join(directory, files.manifest_name(INFIX)), files.manifest_document(stats, [], info))
    logger.debug("Imported %d episodes of %s from %s into %s", len(episodes), env_id, what, directory)
    return TensorBoardImport(
        directory=directory, env_id=env_id, source=what, episodes=len(episodes), tags=tags, notes=notes
    )
