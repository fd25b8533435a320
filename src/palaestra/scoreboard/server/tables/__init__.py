"""The scoreboard's tables: one module per table family on one declarative base (:mod:`.base`).

- :mod:`.base`: ``Base``, the shared column types, ``snapshot``/``from_row``, ``utcnow``;
- :mod:`.scores`: algorithms, benchmark runs, evaluations, envs and the per-user/algorithm aggregates;
- :mod:`.accounts`: users, API keys, web sessions, invites;
- :mod:`.service`: uploaded files, idempotency keys, rate counters, signing keys, the score log, caches;
- :mod:`.ladders`: ladder players, games and ratings;
- :mod:`.live`: live runs, their sources and chunks.
- :mod:`.agents`: agent jobs (agents the board evaluates itself).

Only tables and the statements that keep a row's own columns consistent: no service logic.
"""
