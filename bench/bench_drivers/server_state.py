"""Does the server's state before a run - not the generator - decide its throughput?

A freshly started CPython asyncio server costs several times more CPU per request until a
client first closes a connection (docs/open-loop.md: its 256 KiB receive buffers are shrunk,
never freed, so glibc never raises its mmap threshold; the first recv that returns EOF frees
one whole and raises it for the life of the process). wrk and wrk2 close one connection before
every run without saying so: `wrk.resolve` in their src/wrk.lua calls `wrk.connect` (src/script.c
script_wrk_connect: socket, connect, close) for each address. So wrk meets such a server
already switched, and loadbench and h2load - which open their connections and keep them - meet
it fresh; their figures differ by the server's state, and the same tool's second run differs
from its first.

This driver measures it: every run on a freshly started server pinned to CPU 0, one generator
thread pinned to CPU 1, the same keep-alive connections; the server's state before the run is
`fresh` (untouched) or `primed` (one TCP connection opened and closed by the client, no request:
what wrk's address check does). The server's user and system CPU per response come from /proc
(the peer's process tree, read before and after by loadbench.sampler), the same for every tool.

    python3 bench/server_state.py                  # -> reports/server-state.{md,jsonl}
    python3 bench/server_state.py --peers python-asyncio,beast -r 5 -d 4
"""

from __future__ import annotations

import argparse
import re
import shlex
import socket
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Optional

from loadbench import run as loadbench_run
from loadbench.core import analysis
from loadbench.core.errors import LoadbenchError

from .checkout import peers_dir as default_peers_dir
from .child import run_child, taskset
from .environment_block import environment, machine_note
from .gate import add_gate_args, gate_before_text, make_gate, wait_quiet
from .jsonl import JsonlWriter
from .peers import PeerChoice, launch_peer, unavailable
from .report_text import add_report_args, report_head, report_paths, rewrite_report, write_report

SERVER_CPUS, GENERATOR_CPUS = [0], [1]
STATES = ("fresh", "primed")
TOOLS = ("loadbench", "wrk", "h2load")
# the CPython server whose state the first client close changes, and a C server as the control
DEFAULT_PEERS = ("python-asyncio", "beast")
_WRK_REQUESTS = re.compile(r"(\d+) requests in ([\d.]+)(ms|s|m)")
_H2LOAD_REQUESTS = re.compile(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded")


def prime(url: str) -> None:
    """What wrk's address check does: connect, and close without a request."""
    parts = urllib.parse.urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=5):
        pass
    time.sleep(0.2)  # the server reads the EOF on its own loop


def responses_of(tool: str, stdout: str) -> Optional[int]:
    """The successful responses a wrk or h2load run printed (None when it printed none)."""
    if tool == "wrk":
        m = _WRK_REQUESTS.search(stdout)
        return int(m.group(1)) if m else None
    m = _H2LOAD_REQUESTS.search(stdout)
    return int(m.group(3)) if m else None


def _measure(tool: str, url: str, connections: int, seconds: float) -> int:
    if tool == "loadbench":
        # without its own priming (core/prime.py): the server's state is this driver's to set
        r = loadbench_run(
            url, connections=connections, duration=seconds, warmup=0.0, cpus=GENERATOR_CPUS,
            prime=False,
        )  # fmt: skip
        return int(r.responses)
    if tool == "wrk":
        argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", url]
    else:
        argv = ["h2load", "--h1", "-t1", f"-c{connections}", f"-D{seconds:g}", url]
    child = run_child([*taskset(GENERATOR_CPUS), *argv], timeout_s=seconds + 30)
    n = responses_of(tool, child.stdout)
    if child.returncode != 0 or not n:
        # its own count of what failed, when it printed one (h2load --h1 against hypercorn:
        # "requests: 4165 total, ..., 0 succeeded, 4165 failed" - "status codes: 0 2xx")
        said = [
            line for line in child.stdout.splitlines() if line.startswith(("requests", "status"))
        ]
        why = "; ".join(said) or child.stdout[-300:]
        raise LoadbenchError(f"{argv[0]} failed (exit {child.returncode}): {why}")
    return n


def measure(choice: PeerChoice, peers: Path, tool: str, state: str, args) -> dict:
    with launch_peer(choice, cpus=SERVER_CPUS, peers_dir=peers) as server:
        url = server.url("/plaintext")
        if state == "primed":
            prime(url)
        before, t0 = server.snapshot(), time.monotonic()
        responses = _measure(tool, url, args.connections, args.duration)
        after, t1 = server.snapshot(), time.monotonic()
    return {
        "responses": responses,
        "rps": responses / args.duration,
        "server_user_us_per_req": (after.utime_s - before.utime_s) * 1e6 / responses,
        "server_sys_us_per_req": (after.stime_s - before.stime_s) * 1e6 / responses,
        "server_busy": (after.cpu_s - before.cpu_s) / (t1 - t0),
    }


def render(records: list[dict], env: dict, command: str, raw_name: str) -> str:
    from loadbench.report.markdown import table

    settings = {
        "Command": f"`{command}`",
        "Pinning": "server on CPU 0 (a fresh start per run, one worker), generator on CPU 1",
        "Load": "closed loop, keep-alive, GET /plaintext, one generator thread: "
        "`loadbench run -c C --no-prime`, `wrk -t1 -cC`, `h2load --h1 -t1 -cC`",
        "States": "fresh: untouched; primed: one TCP connection opened and closed by the "
        "client before the run - what wrk's own address check does in every wrk run (so wrk "
        "never meets a fresh server) and what loadbench does by default (core/prime.py; "
        "--no-prime here)",
        "Server CPU": "user and system CPU of the peer's process tree from /proc, per response",
    }
    lines = report_head("Server state, not the generator", command, env, settings, raw_name)
    load1 = float(env.get("Load average at start", "0").split()[0] or 0)
    gate = {"quiet": True} if env.get("Load gate", "").startswith("quiet") else None
    lines += [f"Machine: {machine_note(load1, gate)}.", ""]
    cells: dict[tuple, list[dict]] = {}
    for rec in records:
        if "error" not in rec:
            cells.setdefault((rec["peer"], rec["state"], rec["tool"]), []).append(rec)

    def spread(values: list[float], fmt: str) -> str:
        s = analysis.median_spread(values)
        return f"{fmt.format(s.median)} ({fmt.format(s.min)}-{fmt.format(s.max)})"

    rows = []
    for (peer, state, tool), recs in cells.items():
        rows.append(
            [
                peer, state, tool,
                spread([r["rps"] for r in recs], "{:,.0f}").replace(",", " "),
                spread([r["server_user_us_per_req"] for r in recs], "{:.1f}"),
                spread([r["server_sys_us_per_req"] for r in recs], "{:.1f}"),
                spread([100 * r["server_busy"] for r in recs], "{:.0f} %"), str(len(recs)),
            ]
        )  # fmt: skip
    lines += [
        "## Throughput and the server's CPU per response: median (min-max) over the repeats",
        "",
        table(
            [
                "Server",
                "State",
                "Generator",
                "req/s",
                "server user us/req",
                "server sys us/req",
                "server busy",
                "n",
            ],
            rows,
        ),  # fmt: skip
        "",
        "## Verdict",
        "",
        verdict(cells),
        "",
        "## Every run, in the order measured (each on a freshly started server)",
        "",
        "req/s, and the server's user + system CPU per response: a server whose cost differs "
        "from one process to the next shows it here, whichever generator measured it.",
        "",
    ]
    for (peer, state, tool), recs in cells.items():
        runs = ", ".join(
            f"{r['rps']:,.0f} ({r['server_user_us_per_req']:.1f} + "
            f"{r['server_sys_us_per_req']:.1f})".replace(",", " ")
            for r in recs
        )
        lines.append(f"- {peer} {state} {tool}: {runs}")
    lines.append("")
    errors = [r for r in records if "error" in r]
    if errors:
        lines += ["## Runs that failed", ""]
        lines += [
            f"- {r['peer']} {r['state']} {r['tool']} (repeat {r['repeat']}): "
            + " ".join(r["error"].split())[:240]
            for r in errors
        ] + [""]
    return "\n".join(lines)


def verdict(cells: dict[tuple, list[dict]]) -> str:
    """Per server: how far the tools' medians spread in each state, and what priming changed
    for loadbench - the two facts that say whether a difference is the generator's or the
    server's state."""
    out = []
    for peer in dict.fromkeys(p for p, _, _ in cells):
        parts = []
        medians = {}
        for state in STATES:
            m = {
                tool: analysis.median([r["rps"] for r in cells[(peer, state, tool)]])
                for tool in TOOLS
                if (peer, state, tool) in cells
            }
            medians[state] = m
            if len(m) > 1:
                lo, hi = min(m.values()), max(m.values())
                parts.append(
                    f"{state}, the generators' medians span {hi / lo:.2f}x "
                    f"({', '.join(f'{t} {v:,.0f}'.replace(',', ' ') for t, v in m.items())})"
                )
        fresh, primed = medians.get("fresh", {}), medians.get("primed", {})
        if "loadbench" in fresh and "loadbench" in primed:
            parts.append(
                f"one client-closed connection moved loadbench "
                f"{primed['loadbench'] / fresh['loadbench']:.2f}x"
            )
        out.append(f"- **{peer}**: " + "; ".join(parts) + ".")
    return "\n".join(out)


def _choices(p: argparse.ArgumentParser, flag: str, text: str, known: tuple) -> list[str]:
    chosen = [x for x in text.split(",") if x]
    wrong = [x for x in chosen if x not in known]
    if wrong or not chosen:
        p.error(f"{flag}: expected some of {', '.join(known)}, got {text!r}")
    return chosen


def main(argv: Optional[list[str]] = None, repo: Optional[Path] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--peers", default=",".join(DEFAULT_PEERS), help="registry peers, comma-separated"
    )
    p.add_argument("-c", "--connections", type=int, default=50, help="keep-alive connections")
    p.add_argument("-d", "--duration", type=float, default=4.0, help="seconds per run")
    p.add_argument("-r", "--repeats", type=int, default=3, help="runs per peer, state and tool")
    p.add_argument(
        "--tools", default=",".join(TOOLS), help=f"generators, comma-separated ({', '.join(TOOLS)})"
    )
    p.add_argument(
        "--states",
        default=",".join(STATES),
        help=f"server states, comma-separated ({', '.join(STATES)})",
    )
    add_report_args(p, "server-state.md")
    add_gate_args(p)
    args = p.parse_args(argv)
    tools, states = (
        _choices(p, "--tools", args.tools, TOOLS),
        _choices(p, "--states", args.states, STATES),
    )
    out, raw = report_paths(args.out, repo, "server-state.md")
    if args.report_only:
        rewrite_report(out, raw, render)
        return 0
    peers = default_peers_dir(repo)
    env = environment()
    gate = make_gate(args)
    env["Load gate"] = gate_before_text(wait_quiet(gate))
    command = shlex.join([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
    writer = JsonlWriter(raw)
    writer.write({"record": "environment", "environment": env, "command": command})
    records = []
    for peer in [x for x in args.peers.split(",") if x]:
        choice = PeerChoice(peer, peer, "http")
        why = unavailable(choice, peers)
        if why:
            print(f"{peer}: n/a - {why}", file=sys.stderr)
            continue
        for repeat in range(args.repeats):
            # the order rotates with the repeat: no tool and no state always runs first
            order = [(s, t) for s in states for t in tools]
            shift = repeat % len(order)
            for state, tool in order[shift:] + order[:shift]:
                rec = {"peer": peer, "state": state, "tool": tool, "repeat": repeat,
                       "connections": args.connections, "gate": wait_quiet(gate)}  # fmt: skip
                try:
                    rec.update(measure(choice, peers, tool, state, args))
                except (LoadbenchError, OSError) as exc:
                    rec["error"] = str(exc)
                writer.write(rec)
                records.append(rec)
                print(
                    f"{peer} {state} {tool}: "
                    + (rec.get("error") or f"{rec['rps']:,.0f} req/s, server "
                       f"{rec['server_user_us_per_req']:.1f} + {rec['server_sys_us_per_req']:.1f} us/req"),
                    file=sys.stderr, flush=True,
                )  # fmt: skip
    writer.close()
    write_report(out, render(records, env, command, raw.name))
    print(f"wrote {out} and {raw}")
    return 0
