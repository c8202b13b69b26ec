#!/usr/bin/env python3
"""loadbench's open-loop latency (and a sweep's capacities) checked against wrk2 - an open-loop,
coordinated-omission corrected generator no one here wrote - at the same rate and connections,
each run on a freshly started server: reports/open-loop-vs-wrk2.{md,jsonl}. The driver is
bench_drivers.open_loop_check (`--help` for its options); wrk2 is built from source
(giltene/wrk2, `make`) and named with --wrk2 or WRK2=.

    WRK2=/path/to/wrk2/wrk python3 bench/open_loop_vs_wrk2.py
    WRK2=... python3 bench/open_loop_vs_wrk2.py --capacities reports/SWEEP --out reports/capacity-vs-wrk2.md
"""

import sys
from pathlib import Path

from bench_drivers.open_loop_check import main

if __name__ == "__main__":
    sys.exit(main(repo=Path(__file__).resolve().parents[1]))
