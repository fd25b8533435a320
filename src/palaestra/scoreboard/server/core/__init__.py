"""The server's infrastructure, the floor every other stands on: configuration, the clock, ids, logs,
the database (engine and sessions), blob storage, upload signing, background work, migrations and the
running state (``ServerState``) with the FastAPI dependencies that reach it.

Nothing here knows an evaluation, a page or a route. ``signing`` and ``state`` stand on the tables
(:mod:`..tables`); the rest stands on nothing of the server.
"""
