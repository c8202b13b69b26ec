#!/usr/bin/env python3
"""The default sweep again, for the servers named: a re-run of `loadbench sweep --twin beast`
(the same settings, cells and rules) over a subset of its servers, so bench/rerun_agreement.py
can read the two folders' common cells side by side in less than a whole sweep's time.

    python3 bench/rerun_sweep.py reports/2026-12-07-vm-b --servers beast,nginx,h2o,go,node
"""

import argparse
import sys

from loadbench.core.gate import LoadGate
from loadbench.report.document import write_report
from loadbench.report.html import write_html
from loadbench.sweep.file import default_sweep


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the results folder")
    parser.add_argument("--servers", required=True, help="server names, comma-separated")
    parser.add_argument("--twin", default="beast", help="the server listed twice (A/A)")
    args = parser.parse_args()
    sweep = default_sweep()
    keep = set(args.servers.split(","))
    unknown = keep - {t.name for t in sweep.targets}
    if unknown:
        parser.error(f"not in the default sweep: {', '.join(sorted(unknown))}")
    sweep.targets = [t for t in sweep.targets if t.name in keep]
    sweep.twins = [args.twin]
    sweep.add_twins()
    sweep.run(args.out, gate=LoadGate(on_wait=lambda text: print(f"  {text}", flush=True)))
    write_report(args.out)
    write_html(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
