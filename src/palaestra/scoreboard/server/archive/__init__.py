"""A board that outlives its server: export and import of a whole board, and the hash chain of scores.

- :mod:`.format`: the archive format (version, layout, manifest, how rows become JSON lines);
  ``docs/archive.md`` is its description for people.
- :mod:`.export`: ``palaestra server export DEST`` (one read snapshot, incremental, content-addressed blobs).
- :mod:`.restore`: ``palaestra server import SRC`` into an empty board (every hash checked first).
- :mod:`..evaluations.scorelog`: the tamper-evident log: every scored evaluation and benchmark run, hash-chained.
- :mod:`.verify`: ``palaestra server verify [DEST|URL]``: the chain and every blob, checked.
- :mod:`.static`: ``palaestra server export --static DEST``: the board as a static website.
"""
