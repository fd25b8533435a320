"""Live runs: created, appended to chunk by chunk, sealed into an evaluation (:mod:`.runs`)."""
