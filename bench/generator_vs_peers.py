#!/usr/bin/env python3
"""Generator comparison: loadbench, wrk, h2load, hey, bombardier, oha and ab against nginx and
loadbench-server - keep-alive, a new connection / full TLS handshake per request, system calls,
perf profiles and an HTTP/2 part. The servers are entries of bench/peers/peers.toml; the driver
is bench_drivers.generator_comparison (`--help` for its options).

    python3 bench/generator_vs_peers.py                  # reports/generator-vs-peers.{md,jsonl}
    python3 bench/generator_vs_peers.py --only-h2 -d 2 -r 1 --h2-cells 25x10   # HTTP/2 smoke
"""

import sys
from pathlib import Path

from bench_drivers.generator_comparison import main

if __name__ == "__main__":
    sys.exit(main(repo=Path(__file__).resolve().parents[1]))
