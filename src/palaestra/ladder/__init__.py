"""Board-game ladders: matches between players, game records, replay checking and ratings.

* :mod:`~palaestra.ladder.players`: what can play (built-in opponents, GTP engines, Python policies);
* :mod:`~palaestra.ladder.match`: ``palaestra match``, N games into a match folder;
* :mod:`~palaestra.ladder.sgf` and :mod:`~palaestra.ladder.records`: the game records (SGF for Go,
  JSON for Hex);
* :mod:`~palaestra.ladder.replay`: a recorded game checked against the rules;
* :mod:`~palaestra.ladder.ratings`: Bradley-Terry ratings with bootstrap intervals, anchored.
"""
