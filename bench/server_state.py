#!/usr/bin/env python3
"""Does the server's state before a run - not the generator - decide its throughput? loadbench,
wrk and h2load against freshly started and primed servers (one connection the client opened and
closed first, as wrk's own address check does): reports/server-state.{md,jsonl}. The driver is
bench_drivers.server_state (`--help` for its options).

    python3 bench/server_state.py
    python3 bench/server_state.py --peers python-asyncio,beast,nginx -r 5
"""

import sys
from pathlib import Path

from bench_drivers.server_state import main

if __name__ == "__main__":
    sys.exit(main(repo=Path(__file__).resolve().parents[1]))
