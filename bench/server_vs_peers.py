#!/usr/bin/env python3
"""Server baseline: wrk against loadbench-server, nginx and node:http (`--setup`: also a new
connection / full TLS handshake per request; `--protocol h2`: h2load against the HTTP/2 servers).
The servers are entries of bench/peers/peers.toml; the driver is bench_drivers.server_comparison
(`--help` for its options).

    python3 bench/server_vs_peers.py                     # reports/server-baseline.{md,jsonl}
    python3 bench/server_vs_peers.py --protocol h2       # reports/server-h2.{md,jsonl}
"""

import sys
from pathlib import Path

from bench_drivers.server_comparison import main

if __name__ == "__main__":
    sys.exit(main(repo=Path(__file__).resolve().parents[1]))
