#!/usr/bin/env python3
"""Does a sweep survive a re-run? Two results folders of the same sweep read side by side:
cell medians inside the other run's intervals, certain orders reversed, the A/A pair, capacity
against the open-loop table: reports/rerun-agreement.md. The driver is
bench_drivers.rerun_agreement.

    python3 bench/rerun_agreement.py reports/FIRST reports/SECOND
"""

import sys
from pathlib import Path

from bench_drivers.rerun_agreement import main

if __name__ == "__main__":
    sys.exit(main(repo=Path(__file__).resolve().parents[1]))
