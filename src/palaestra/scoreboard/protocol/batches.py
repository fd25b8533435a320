"""The episode batch as it goes up: the one writer of the 2017 document, used by the upload client
(:mod:`palaestra.scoreboard.client.preparation`) and by the server when it seals a live run
(:mod:`palaestra.scoreboard.server.live.runs`), so that both store the same bytes.

- :func:`episode_batch_document`: the document, validated with :func:`.parse_episode_batch`;
- :func:`encode_episode_batch`: its bytes.
"""

from __future__ import annotations

import json
from typing import Any

from palaestra.errors import ResultsError
from palaestra.scoreboard import protocol

__all__ = ["encode_episode_batch", "episode_batch_document"]


def episode_batch_document(results: Any, training_dir: str) -> dict[str, Any]:
    """The episode-batch document, validated with the protocol's schema: exactly the 2017 keys, plus
    ``env_index`` where the run's episodes came from more than one sub-environment of a vector env
    (the scoreboard keeps it; a run all of sub-environment 0 sends what a 2017 client sent)."""
    doc = {
        "data_sources": results["data_sources"],
        "episode_lengths": results["episode_lengths"],
        "episode_rewards": results["episode_rewards"],
        "episode_types": results["episode_types"],
        "initial_reset_timestamps": results["initial_reset_timestamps"],
        "timestamps": results["timestamps"],
    }
    if any(results.get("env_index") or ()):
        doc["env_index"] = results["env_index"]
    try:
        protocol.parse_episode_batch(doc)
    except protocol.EpisodeBatchError as e:
        raise ResultsError(f"The episodes recorded in {training_dir} cannot be uploaded: {e}") from None
    return doc


def encode_episode_batch(results: Any, training_dir: str) -> bytes:
    """The bytes of the episode batch that goes up for ``results``: also what the scoreboard stores
    when it seals a live run (:mod:`palaestra.scoreboard.server.live.runs`), so the two are the same bytes."""
    return json.dumps(episode_batch_document(results, training_dir), separators=(",", ":")).encode("utf-8")
