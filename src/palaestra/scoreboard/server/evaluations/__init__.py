"""Evaluations, the board's main resource: everything between an upload and a stored, derived row.

- :mod:`.create`: an upload made into an evaluation, once (:mod:`.repeats`: the same episodes again
  from their uploader answer the evaluation they made, or are refused with other details);
- :mod:`.ingest`: an uploaded episode batch and video archive read and checked;
- :mod:`.derive`: what is derived once and stored ("solved" statistics, curve series, task scores);
- :mod:`.conditions`: the evaluation's protocol card, from its provenance;
- :mod:`.records`: the one record of an evaluation (and an algorithm) read by ``/v1`` and the pages;
- :mod:`.benchmarking`: task scores and benchmark-run aggregates;
- :mod:`.index_stats`: per-user and per-algorithm aggregates kept at ingest;
- :mod:`.rescore`: deriving stored evaluations again;
- :mod:`.scorelog`: the hash-chained log of every score (:mod:`.coverage`: what each entry version hashes);
- :mod:`.pictures`, :mod:`.video_integrity`: an env's picture and a stored video's checks.
"""
