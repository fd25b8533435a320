import sys

from palaestra.cli import main

sys.exit(main())
