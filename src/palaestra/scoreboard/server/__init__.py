"""The scoreboard service: the 2017 ``/v1`` API and the web pages (``palaestra server``).

Needs the ``server`` extra (``pip install 'palaestra[server]'``); importing this package without it
raises :class:`palaestra.errors.DependencyNotInstalled` naming the extra.
"""

from palaestra.extras import require

require("server", "The scoreboard server (palaestra server, users and demo)")
