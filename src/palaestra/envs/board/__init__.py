"""Go and Hex against real opponents (GNU Go, Pachi, any GTP engine, MCTS, random), after gym 2017's
board games, on the Gymnasium API; and the same games as two-player PettingZoo AEC environments.

Modules: ``go`` (:class:`GoEnv`), ``hex`` (:class:`HexEnv`), ``env`` (their shared step logic),
``rules`` (OpenSpiel underneath, the 2017 encoding on top), ``opponents``, ``gtp`` (the GTP client),
``rendering``, ``pettingzoo``. Make them by id (``gymnasium.make("Go9x9-v0")``, see
:mod:`palaestra.envs`); this package imports nothing heavy.

Rules engine: OpenSpiel's C++ Go and Hex (``open_spiel`` on PyPI), chosen by measurement. Random
9x9 play driven from Python: OpenSpiel about 300,000 moves/s, a pure-Python Go prototype (flood-fill
groups, legal-move list each move) about 3,000 moves/s, PettingZoo's ``go_v5`` (MiniGo in numpy)
about 2,000. ``bench/board_games.py`` compares the finished environments.

Go rules: area scoring, Tromp-Taylor (no dead-stone removal: games are played out, and GNU Go runs
with ``--capture-all-dead``); komi 7.5 by default (the usual area-scoring komi, as in Chinese rules,
CGOS, OpenSpiel and PettingZoo; the half point rules out drawn scores; 2017's komi was 0, which
handed black the game); suicide illegal; simple ko illegal (the immediate recapture is masked);
a non-pass move that repeats an earlier whole-board position (positional superko) ends the game as
a draw, as OpenSpiel plays it (like "no result" for a triple ko under Japanese rules); two passes
in a row end the game, and so does ``max_moves`` (default 2·N² moves, passes included), then scored.

Hex rules: black joins top and bottom, white left and right, on the 2017 neighbourhood; the
optional swap (pie) rule mirrors black's first stone into a white one.
"""
