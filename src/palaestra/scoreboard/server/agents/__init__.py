"""Agents the board evaluates itself: an uploaded ONNX agent's job, queued, claimed with a lease and
renewed by heartbeats (:mod:`.jobs`); the worker that runs it in the sandbox and stores the run through
evaluations' own create path, its evaluation verified (:mod:`.worker`), on a Ray cluster with
``--ray`` (:mod:`.ray`). ``api/agents.py`` parses and answers; ``tables/agents.py`` is only tables."""
