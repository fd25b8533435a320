"""Object ids: ``eval_...``, ``file_...``, ``brun_...``, ``alg_...``, ``req_...``, ``key_...``."""

from __future__ import annotations

import secrets

from palaestra.scoreboard.protocol import ID_PREFIX


def new_id(kind: str, nbytes: int = 12) -> str:
    """A fresh random id of ``kind`` (a key of :data:`palaestra.scoreboard.protocol.ID_PREFIX`)."""
    return ID_PREFIX[kind] + secrets.token_hex(nbytes)
