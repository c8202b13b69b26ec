#!/usr/bin/env python3
"""HTTP/3 generator cost: CPU per response of loadbench, oha (http3 build) and ngtcp2's example
client over HTTP/3, beside HTTP/2 and HTTP/1.1 (loadbench, oha, h2load), pinned, against caddy.
The driver is bench_drivers.h3_generator_cost (`--help` for its options).

    python3 bench/h3_generator_cost.py                   # reports/h3-generator-cost.{md,jsonl}
    python3 bench/h3_generator_cost.py -c 10 -d 2 -r 1   # a smoke run
"""

import sys
from pathlib import Path

from bench_drivers.h3_generator_cost import main

if __name__ == "__main__":
    sys.exit(main(repo=Path(__file__).resolve().parents[1]))
