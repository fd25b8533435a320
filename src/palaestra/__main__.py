"""``python -m palaestra``: the ``palaestra`` command."""

import sys

from palaestra.cli import main

if __name__ == "__main__":
    sys.exit(main())
