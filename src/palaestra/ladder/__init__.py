"""Board-game ladders: matches between players, game records, replay checking and ratings.

* :mod:`~palaestra.ladder.players`: what can play (built-in opponents, GTP engines, Python policies);
* :mod:`~palaestra.ladder.match`: ``palaestra match``, N games into a match folder;
* :mod:`~palaestra.ladder.sgf` and :mod:`~palaestra.ladder.records`: the game records (SGF for Go,
  JSON for Hex);
* :mod:`~palaestra.ladder.replay`: a recorded game checked against the rules;
* :mod:`~palaestra.ladder.rated`: which checked games count for the ratings, and a game's content digest;
* :mod:`~palaestra.ladder.ratings`: Bradley-Terry ratings with calibrated 95 % intervals, anchored.
"""
