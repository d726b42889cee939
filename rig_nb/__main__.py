"""`python -m rig_nb`: the command line of `rig_nb.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
