#!/usr/bin/env python3
"""QUIC handshakes per second against loadbench-server: full, resumed (--tls-resume) and 0-RTT
(--h3-0rtt), one request per connection, pinned, repeated. The driver is
bench_drivers.h3_handshakes (`--help` for its options).

    python3 bench/h3_handshakes.py                  # reports/h3-handshakes.{md,jsonl}
    python3 bench/h3_handshakes.py -d 1 -r 1        # a smoke run
"""

import sys
from pathlib import Path

from bench_drivers.h3_handshakes import main

if __name__ == "__main__":
    sys.exit(main(repo=Path(__file__).resolve().parents[1]))
