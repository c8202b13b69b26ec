#!/usr/bin/env python3
"""Where a sweep's variance lives on this machine - between windows, server processes and
minutes (Kalibera & Jones): reports/variance-split.md from the sweep in reports/variance-split/.
The driver is bench_drivers.variance_split (`--help` for its options).

    python3 bench/variance_split.py
    python3 bench/variance_split.py --servers beast,nginx --blocks 5
"""

import sys
from pathlib import Path

from bench_drivers.variance_split import main

if __name__ == "__main__":
    sys.exit(main(repo=Path(__file__).resolve().parents[1]))
