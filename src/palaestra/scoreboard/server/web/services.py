"""Where the pages find the server's database and blob store: the app's ``ServerState``."""

from __future__ import annotations

from fastapi import Request

from palaestra.scoreboard.server.db import Database
from palaestra.scoreboard.server.deps import get_state
from palaestra.scoreboard.server.storage import BlobStore


def database(request: Request) -> Database:
    return get_state(request).db


def blob_store(request: Request) -> BlobStore:
    return get_state(request).store
