"""`python3 -m loadbench ...` is the same as the `loadbench` console script."""

import sys

from .cli import main

sys.exit(main())
