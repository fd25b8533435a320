"""Idempotency keys that follow from what is uploaded and how, so that a retried request, or the same
upload run again after a crash, gets what the first attempt created (the server replays its answer)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["idempotency_key", "sha256_file"]

IDEMPOTENCY_NAMESPACE = "palaestra-upload/1"


def idempotency_key(kind: str, *parts: Any) -> str:
    """A key that depends only on ``kind`` and ``parts`` (JSON-encoded), so a rerun reuses it."""
    h = hashlib.sha256(IDEMPOTENCY_NAMESPACE.encode())
    for part in (kind, *parts):
        data = json.dumps(part, sort_keys=True, separators=(",", ":"), default=str).encode()
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return f"pal-{kind}-{h.hexdigest()}"


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
