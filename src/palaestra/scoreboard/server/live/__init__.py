"""Live runs: created, appended to chunk by chunk, sealed into an evaluation (:mod:`.runs`); what
their pages show, derived once per chunk (:mod:`.derived`); a sealed run's directory uploaded again
(:mod:`.twins`)."""
