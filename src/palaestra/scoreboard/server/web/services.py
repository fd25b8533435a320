"""Where the pages find the server's database and blob store: the app's ``ServerState``."""

from __future__ import annotations

from fastapi import Request

from palaestra.scoreboard.server.db import Database
from palaestra.scoreboard.server.deps import state_of
from palaestra.scoreboard.server.storage import BlobStore


def database(request: Request) -> Database:
    return state_of(request).db


def blob_store(request: Request) -> BlobStore:
    return state_of(request).store
