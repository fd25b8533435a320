"""An evaluation's conditions (its protocol card): derived once, at ingest, from its provenance.

* :func:`derive_conditions` -- the card: the env id and version, the step limit, every env argument
  that differs from the registry's and, for Atari, the protocol of Machado et al. (2018): registry
  family (v0/v4/v5, NoFrameskip, Deterministic, ram), sticky-action probability, frameskip, full or
  minimal action set, frame cap and observation type. An upload without provenance (the 2017
  client) gets a card that says so.
* :func:`conditions_key` -- a short digest of the card: evaluations with equal keys ran under the
  same conditions, and only those are ranked, averaged or drawn together by default.
* :func:`differences` -- the fields in which cards differ, and their values, for the notices that
  name them.

How the board decides that two runs are comparable is in docs/provenance.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ATARI_FIELDS",
    "Difference",
    "atari_family",
    "conditions_key",
    "conditions_label",
    "derive_conditions",
    "differences",
]

#: The arguments of an Atari env that make up its protocol (what Machado et al. 2018 ask to report).
ATARI_FIELDS = (
    "repeat_action_probability",
    "frameskip",
    "full_action_space",
    "max_num_frames_per_episode",
    "obs_type",
)
_VERSION = re.compile(r"-v(\d+)$")
_ATARI_ID = re.compile(
    r"^(?:ALE/)?[A-Za-z0-9]+?(?P<ram>-ram)?(?P<det>Deterministic)?(?P<nfs>NoFrameskip)?-v(?P<v>\d+)$"
)


def _version(env_id: str) -> str | None:
    match = _VERSION.search(env_id)
    return f"v{match.group(1)}" if match else None


def _is_atari(env_id: str, env: Mapping[str, Any]) -> bool:
    entry_point = str(env.get("entry_point") or "")
    return (
        env_id.startswith("ALE/")
        or "ale_py" in entry_point
        or "repeat_action_probability" in (env.get("kwargs") or {})
    )


def atari_family(env_id: str) -> str | None:
    """``"v5"``, ``"NoFrameskip-v4"``, ``"ram-Deterministic-v4"``…: the registry family of an Atari id."""
    match = _ATARI_ID.match(env_id)
    if match is None:
        return None
    parts = [
        name
        for name, group in (("ram", "ram"), ("Deterministic", "det"), ("NoFrameskip", "nfs"))
        if match.group(group)
    ]
    return "-".join([*parts, f"v{match.group('v')}"])


def derive_conditions(env_id: str, provenance: Mapping[str, Any] | None) -> dict[str, Any]:
    """The conditions card of an evaluation of ``env_id`` with this (validated) provenance."""
    card: dict[str, Any] = {"env": env_id, "version": _version(env_id)}
    env = (provenance or {}).get("env")
    if not isinstance(env, Mapping) or env.get("id") != env_id:
        card["recorded"] = False  # the 2017 client, or a provenance of another env: nothing is known
        return card
    card["recorded"] = True
    kwargs: Mapping[str, Any] = env.get("kwargs") or {}
    registry: Mapping[str, Any] = env.get("registry_kwargs") or {}
    card["max_episode_steps"] = env.get("max_episode_steps")
    atari = _is_atari(env_id, env)
    if atari:
        card["atari"] = {"family": atari_family(env_id), **{f: kwargs.get(f) for f in ATARI_FIELDS}}
    changed = {
        k: v
        for k, v in sorted(kwargs.items())
        if registry.get(k, _MISSING) != v and not (atari and k in ATARI_FIELDS)
    }
    if changed:
        card["arguments"] = changed
    return card


_MISSING = object()


def conditions_key(card: Mapping[str, Any]) -> str:
    """16 hex digits naming the card; equal cards, equal keys."""
    canonical = json.dumps(card, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _flat(card: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in card.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flat(value, f"{name}."))
        else:
            flat[name] = value
    return flat


@dataclass(frozen=True)
class Difference:
    """One field in which some of the compared cards differ, and the values they have."""

    field: str
    values: tuple[Any, ...]

    @property
    def text(self) -> str:
        """The field in words a reader knows, then its name as code writes it, and the values:
        ``"the episode step limit (max_episode_steps: 40 vs 60)"``."""
        shown = " vs ".join("not recorded" if v is _MISSING else json.dumps(v) for v in self.values)
        plain = _PLAIN_FIELDS.get(self.field, f"the argument {self.field}")
        return f"{plain} ({self.field}: {shown})"


#: The fields of a conditions card in plain words (the issue 36 review found the bare names jargon).
_PLAIN_FIELDS = {
    "max_episode_steps": "the episode step limit",
    "repeat_action_probability": "the sticky-action probability",
    "frameskip": "the frame skip",
    "full_action_space": "the action set",
    "max_num_frames_per_episode": "the frame limit per episode",
    "obs_type": "the observation type",
    "recorded": "whether the conditions were recorded",
}


def differences(cards: Sequence[Mapping[str, Any]]) -> list[Difference]:
    """The fields in which ``cards`` differ (a field one card lacks counts as differing), in order."""
    flats = [_flat(card) for card in cards]
    names = list(dict.fromkeys(name for flat in flats for name in flat))
    found = []
    for name in names:
        distinct: dict[str, Any] = {}
        for flat in flats:
            value = flat.get(name, _MISSING)
            distinct.setdefault("\0" if value is _MISSING else json.dumps(value, default=str), value)
        if len(distinct) > 1:
            found.append(
                Difference(name.removeprefix("atari.").removeprefix("arguments."), tuple(distinct.values()))
            )
    return found


def conditions_label(card: Mapping[str, Any] | None) -> str:
    """A short label of a card for tables: ``"not recorded"``, ``"as registered"`` or what differs."""
    if not card or not card.get("recorded"):
        return "not recorded"
    parts = [f"{k}={json.dumps(v)}" for k, v in (card.get("arguments") or {}).items()]
    atari = card.get("atari")
    if atari:
        parts.insert(
            0, f"sticky {atari.get('repeat_action_probability')}, frameskip {atari.get('frameskip')}"
        )
    if card.get("max_episode_steps") is not None:
        parts.append(f"limit {card['max_episode_steps']} steps")
    return "; ".join(parts) if parts else "as registered"
