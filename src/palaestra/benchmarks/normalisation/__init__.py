"""Human-normalised Atari scores: the published random and human score tables, and the Atari env ids.

A human-normalised score is ``(score - random) / (human - random)``: 0 is uniformly random play, 1 a
professional games tester, on the numbers of one published table. The tables are data files of this
package (``<name>.json``), each with its name, a version (of palaestra's copy: a corrected number
gives a new version), its source (paper and table) and a score pair per game, keyed by ale-py's ROM
id (``pong``, ``ms_pacman``, ``up_n_down``):

* ``atari57`` (the default): the 57 games of R2D2, Agent57, DQN Zoo and rliable's Atari analyses.
  It is what papers since 2019 normalise with, and the only table that has every game of the Atari-57,
  Atari-100k and Atari-5 benchmarks (Phoenix, Berzerk, Surround, ... are not among DQN's 49).
* ``dqn2015``: the 49 games of the Nature DQN paper (Mnih et al. 2015), as printed, for reproducing
  numbers normalised the 2015 way. Its human scores are an earlier measurement, so the same raw
  score normalises differently (Pong's human is 9.3 here, 14.6 in ``atari57``).

:func:`game_of` maps an Atari env id to its game (``ALE/Pong-v5``, ``PongNoFrameskip-v4``,
``Pong-ramDeterministic-v0`` -> ``pong``), :func:`env_ids` a game to its ids, and
:func:`human_normalised` does the whole thing for a stored mean.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from palaestra.errors import Error

__all__ = [
    "DEFAULT_TABLE",
    "GameScores",
    "HumanNormalisedScore",
    "NormalisationTable",
    "env_ids",
    "game_name",
    "game_of",
    "human_normalised",
    "table",
    "table_names",
]

#: The table used where none is named (see the module docstring for why).
DEFAULT_TABLE = "atari57"
_TABLE_NAMES = ("atari57", "dqn2015")


@dataclass(frozen=True)
class GameScores:
    """The random and human scores of one game in one table."""

    random: float
    human: float


@dataclass(frozen=True)
class NormalisationTable:
    """One published table of random and human scores, with where it comes from."""

    name: str
    version: int
    title: str
    citation: str
    table: str
    url: str
    protocol: str
    notes: tuple[str, ...]
    #: ale-py ROM id -> scores, in the file's order
    scores: Mapping[str, GameScores]

    @property
    def label(self) -> str:
        """``atari57 v1``: how results name the table they were normalised with."""
        return f"{self.name} v{self.version}"

    @property
    def games(self) -> tuple[str, ...]:
        return tuple(self.scores)

    def scores_of(self, game: str) -> GameScores:
        """The scores of ``game``; an :class:`~palaestra.errors.Error` naming the table if it has none."""
        try:
            return self.scores[game]
        except KeyError:
            raise Error(
                f"The {self.label} table has no scores for the game {game!r} "
                f"(its {len(self.scores)} games: {', '.join(self.scores)})"
            ) from None

    def normalise(self, game: str, score: float) -> float:
        """``(score - random) / (human - random)`` with this table's numbers for ``game``."""
        pair = self.scores_of(game)
        return (float(score) - pair.random) / (pair.human - pair.random)

    def describe(self) -> dict[str, Any]:
        """The table's name, version and source, as results record them (no scores)."""
        return {
            "table": self.name,
            "version": self.version,
            "title": self.title,
            "citation": self.citation,
            "source_table": self.table,
            "url": self.url,
        }


def _load(name: str) -> NormalisationTable:
    text = Path(__file__).with_name(f"{name}.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    scores: dict[str, GameScores] = {}
    for game, pair in doc["scores"].items():
        random, human = float(pair["random"]), float(pair["human"])
        if not (math.isfinite(random) and math.isfinite(human)) or random == human:
            raise Error(f"{name}.json: game {game!r} has unusable scores {pair!r}")
        scores[game] = GameScores(random=random, human=human)
    if len(scores) != doc["game_count"]:
        raise Error(f"{name}.json claims {doc['game_count']} games but has {len(scores)}")
    return NormalisationTable(
        name=doc["name"],
        version=int(doc["version"]),
        title=doc["title"],
        citation=doc["citation"],
        table=doc["table"],
        url=doc["url"],
        protocol=doc["protocol"],
        notes=tuple(doc.get("notes", ())),
        scores=scores,
    )


def table(name: str = DEFAULT_TABLE) -> NormalisationTable:
    """The table ``name`` (``atari57`` or ``dqn2015``); an :class:`~palaestra.errors.Error` naming
    the known tables for any other name."""
    if name not in _TABLE_NAMES:
        raise Error(f"No score normalisation table {name!r}; the tables are: {', '.join(_TABLE_NAMES)}")
    return _loaded(name)


@functools.cache
def _loaded(name: str) -> NormalisationTable:
    return _load(name)


def table_names() -> tuple[str, ...]:
    return _TABLE_NAMES


# -- Atari env ids ---------------------------------------------------------------------------------


def game_name(game: str) -> str:
    """ale-py's name of a ROM id in its env ids: ``up_n_down`` -> ``UpNDown``, ``hero`` -> ``Hero``."""
    return "".join(part.capitalize() for part in game.split("_"))


@functools.cache
def _games_by_name() -> dict[str, str]:
    games = {g for name in _TABLE_NAMES for g in table(name).scores}
    return {game_name(g): g for g in sorted(games)}


# ALE/Pong-v5 (ale-py's); Pong-v0, Pong-ram-v4, PongDeterministic-v4, PongNoFrameskip-v4 (2017's ids,
# which palaestra registers, and ale-py's own v0/v4 ids)
_ENV_ID_RE = re.compile(
    r"^(?:ALE/(?P<ale>[A-Za-z]+)-v5"
    r"|(?P<name>[A-Za-z]+?)(?:-ram)?(?:Deterministic|NoFrameskip)?-v[04])$"
)


def game_of(env_id: str) -> str | None:
    """The game (ale-py ROM id) of an Atari env id of a game some table scores, else ``None``."""
    match = _ENV_ID_RE.match(env_id)
    if match is None:
        return None
    name = match["ale"] or match["name"]
    return _games_by_name().get(name)


def env_ids(game: str) -> list[str]:
    """The ids of ``game`` that :func:`game_of` maps back to it: ale-py's ``ALE/{Name}-v5`` first,
    then the 2017 family (``{Name}NoFrameskip-v4``, ``{Name}-v4``, ``{Name}Deterministic-v4``, their
    ``-v0`` and ``-ram`` twins). Which of them exist depends on ale-py and the game (Surround has
    only its ``v5`` id; :func:`palaestra.catalogue.unavailable_reason` says)."""
    name = game_name(game)
    out = [f"ALE/{name}-v5"]
    for version in ("v4", "v0"):
        for obs in ("", "-ram"):
            out += [
                f"{name}{obs}NoFrameskip-{version}",
                f"{name}{obs}-{version}",
                f"{name}{obs}Deterministic-{version}",
            ]
    return out


# -- the score of one evaluation -------------------------------------------------------------------


@dataclass(frozen=True)
class HumanNormalisedScore:
    """A raw mean score of an Atari game, human-normalised with a named table."""

    value: float
    raw: float
    game: str
    random: float
    human: float
    table: str
    version: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "raw": self.raw,
            "game": self.game,
            "random": self.random,
            "human": self.human,
            "table": self.table,
            "version": self.version,
        }


def human_normalised(
    env_id: str | None, score: float | None, table_name: str = DEFAULT_TABLE
) -> HumanNormalisedScore | None:
    """``score`` of ``env_id`` human-normalised with table ``table_name``; ``None`` when the env is not
    an Atari game of that table or there is no finite score."""
    if env_id is None or score is None or not math.isfinite(score):
        return None
    game = game_of(env_id)
    chosen = table(table_name)
    if game is None or game not in chosen.scores:
        return None
    pair = chosen.scores[game]
    return HumanNormalisedScore(
        value=chosen.normalise(game, score),
        raw=float(score),
        game=game,
        random=pair.random,
        human=pair.human,
        table=chosen.name,
        version=chosen.version,
    )
