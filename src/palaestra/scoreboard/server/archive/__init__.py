"""A board that outlives its server: export and import of a whole board, the static mirror
(:mod:`.static`), the hash-chained log of scores and its verification."""
