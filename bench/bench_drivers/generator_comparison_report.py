"""The markdown report of bench/generator_vs_peers.py (bench_drivers.generator_comparison
runs, this writes): the keep-alive, connection-setup, system-call, profile and HTTP/2 sections."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Optional

from loadbench.core import _core
from loadbench.report.markdown import bold_best, fmt_number, table

from . import generators as gl
from . import handshake_proof
from . import perf_profiles as pf
from .repeats import summarize
from .report_text import report_head

BUSY_LIMIT = 0.95  # a generator using >= 95 % of its one pinned core is saturated
SAT = "†"
GEN_BOUND = (
    "§"  # connection setup: the generator's CPU per connection / handshake exceeded the server's
)


def ssl_version() -> str:
    """The OpenSSL loadbench's core runs with (not the Python ssl module's)."""
    return _core.build_info()["openssl"]


def _select(records: list[dict], **match: object) -> list[dict]:
    return [r for r in records if all(r.get(k) == v for k, v in match.items())]


def _status(rows: list[dict]) -> Optional[str]:
    """'n/a' or 'FAIL' when no run of a cell succeeded; None when there is data."""
    if not rows or any(r["status"] == "ok" for r in rows):
        return None
    return rows[0]["status"]


def _median(rows: list[dict], key: str) -> Optional[float]:
    s = summarize(r.get(key) for r in rows if r["status"] == "ok")
    return s.median if s else None


def _saturated(rows: list[dict]) -> bool:
    busy = _median(rows, "gen_busy")
    return busy is not None and busy >= BUSY_LIMIT


def _setup_bound(rows: list[dict]) -> bool:
    """The generator spent more CPU per new connection (or handshake) than the server: with a core
    each, the cell's rate is the generator's limit (the report model's rule, loadbench.analysis)."""
    gen, srv = _median(rows, "gen_cpu_us_per_conn"), _median(rows, "server_cpu_us_per_conn")
    return gen is not None and srv is not None and gen > srv


def _grid(
    records: list[dict],
    generators: list[gl.Generator],
    columns: list[tuple[str, dict]],
    key: str,
    lowest: bool,
    digits: int,
    mark_saturation: bool,
) -> str:
    """Rows = generators, columns = (title, record filter); best per column in bold."""
    values: list[list[Optional[float]]] = []
    notes: list[list[str]] = []
    for gen in generators:
        row_values, row_notes = [], []
        for _, match in columns:
            rows = _select(records, generator=gen.name, **match)
            if not gen.available:
                row_values.append(None)
                row_notes.append("n/a")
                continue
            status = _status(rows)
            row_values.append(_median(rows, key))
            marks = (SAT if mark_saturation and _saturated(rows) else "") + (
                GEN_BOUND
                if key in ("conn_per_s", "gen_cpu_us_per_conn") and _setup_bound(rows)
                else ""
            )
            row_notes.append(status or marks)
        values.append(row_values)
        notes.append(row_notes)
    body = []
    for i, gen in enumerate(generators):
        row = [gen.name]
        for j in range(len(columns)):
            column = bold_best([values[k][j] for k in range(len(generators))], lowest, digits)
            note = notes[i][j]
            row.append(
                note
                if values[i][j] is None and note
                else f"{column[i]}{(' ' + note) if note else ''}"
            )
        body.append(row)
    return table(["Generator"] + [title for title, _ in columns], body)


def _pair_grid(
    records: list[dict],
    generators: list[gl.Generator],
    columns: list[tuple[str, dict]],
    keys: tuple[str, str],
) -> str:
    """Rows = generators, columns = (title, record filter); each cell the medians of two keys."""
    body = []
    for gen in generators:
        row = [gen.name]
        for _, match in columns:
            rows = _select(records, generator=gen.name, **match)
            values = [_median(rows, key) for key in keys]
            row.append("n/a" if None in values else " / ".join(f"{v:.2f}" for v in values))
        body.append(row)
    return table(["Generator"] + [title for title, _ in columns], body)


def _engine_us(r: dict) -> Optional[float]:
    return r["extra"].get("self_cpu_us_per_req") if r["status"] == "ok" else None


def _ratio_lines(
    records: list[dict],
    servers: list[str],
    concs: list[int],
    engine: bool = False,
    mine: str = "loadbench",
    other: str = "wrk",
) -> list[str]:
    """Per server and concurrency: `mine` vs `other`, generator CPU per response (engine=True:
    both loadbench builds' own engine figure; wrk's is rusage, its start-up being a few ms)."""

    def us(generator: str, server: str, c: int) -> Optional[float]:
        rows = _select(records, part="keepalive", generator=generator, server=server, connections=c)
        if engine and generator.startswith("loadbench"):
            engine_us = summarize(_engine_us(r) for r in rows)
            return engine_us.median if engine_us else None
        return _median(rows, "gen_cpu_us_per_resp")

    lines = []
    for server in servers:
        parts = []
        for c in concs:
            a, b = us(mine, server, c), us(other, server, c)
            parts.append(
                f"c={c}: n/a"
                if a is None or b is None
                else f"c={c}: {a:.2f} vs {b:.2f} us ({a / b:.2f}x)"
            )
        lines.append(f"- against {server}: " + "; ".join(parts))
    return lines


HANDSHAKE_TOOLS = (
    ("loadbench", "loadbench (OpenSSL)"),
    ("loadbench-rustls", "loadbench-rustls"),
    ("loadbench-wolfssl", "loadbench-wolfssl"),
    ("oha", "oha (rustls)"),
    ("wrk", "wrk (OpenSSL)"),
)


def _handshake_lines(records: list[dict], servers: list[str], reference: str = "oha") -> list[str]:
    """Generator CPU per full TLS handshake of each of loadbench's TLS libraries beside oha's and
    wrk's, against each server (whole process, median), and the server's own per handshake."""
    lines = []
    for server in servers:

        def us(gen: str, key: str = "gen_cpu_us_per_conn", server: str = server) -> Optional[float]:
            return _median(
                _select(records, part="setup", generator=gen, server=server, scheme="https"), key
            )

        ref = us(reference)
        parts = []
        for gen, label in HANDSHAKE_TOOLS:
            value = us(gen)
            if value is not None:
                ratio = f" ({value / ref:.2f}x {reference})" if ref and gen != reference else ""
                parts.append(f"{label} {value:.1f} us{ratio}")
        srv = us("loadbench", "server_cpu_us_per_conn")
        if parts:
            lines.append(
                f"- against {server}: "
                + ", ".join(parts)
                + (f"; the server {srv:.1f} us per handshake" if srv is not None else "")
            )
    return lines


def _setup_ratio_lines(
    records: list[dict], servers: list[str], other: str = "wrk", mine: str = "loadbench"
) -> list[str]:
    lines = []
    for scheme, noun in (("http", "new connection"), ("https", "TLS handshake")):
        parts = []
        for server in servers:
            rows = _select(records, part="setup", generator=mine, server=server, scheme=scheme)
            lb, srv, engine = (
                _median(rows, key)
                for key in (
                    "gen_cpu_us_per_conn",
                    "server_cpu_us_per_conn",
                    "gen_engine_us_per_conn",
                )
            )
            theirs = _median(
                _select(records, part="setup", generator=other, server=server, scheme=scheme),
                "gen_cpu_us_per_conn",
            )
            if lb is None or theirs is None:
                parts.append(f"{server}: n/a")
            else:
                parts.append(
                    f"{server}: {mine} {lb:.1f} vs {other} {theirs:.1f} us ({lb / theirs:.2f}x; "
                    + (
                        f"loadbench's engine threads alone {engine:.1f} us, {engine / theirs:.2f}x; "
                        if engine is not None
                        else ""
                    )
                    + f"the server {srv:.1f} us)"
                )
        lines.append(f"- per {noun}: " + "; ".join(parts))
    return lines


def _syscall_lines(records: list[dict], setup: bool = False) -> list[str]:
    """System calls per response (keep-alive) or per new connection / handshake (setup) under
    strace -c -f, start-up's calls taken out; a tool that cannot do a mode is left out."""
    unit, count = ("conn", "new_connections") if setup else ("resp", "responses")
    rows = []
    for r in records:
        label = f"{r['generator']} ({r['scheme']})" if setup else r["generator"]
        if r["status"] == "n/a" and setup:
            continue
        if r["status"] != "ok":
            rows.append([label, r["status"], "", r["reason"][:200]])
            continue
        top = ", ".join(f"{name} {n:.2f}" for name, n in list(r[f"per_{unit}_by_call"].items())[:6])
        rows.append([label, f"{r[f'calls_per_{unit}']:.2f}", f"{r[count]:,}", top])
    what = (
        ("per new connection (http) / handshake (https)", "new connections")
        if setup
        else ("per response", "responses")
    )
    return [
        table(
            [
                "Generator",
                f"system calls {what[0]}",
                f"{what[1]} (under strace)",
                f"the most frequent, {what[0].split(' (')[0]}",
            ],
            rows,
        )
    ]


def _noise(records: list[dict], generators: list[gl.Generator], key: str) -> str:
    rows = []
    for gen in generators:
        spreads = []
        cells: dict[tuple, list[float]] = {}
        for r in _select(records, generator=gen.name, status="ok"):
            cells.setdefault((r["part"], r["server"], r["scheme"], r["connections"]), []).append(
                r[key]
            )
        for values in cells.values():
            s = summarize(values)
            if s and s.count > 1:
                spreads.append(s.spread_pct)
        rows.append(
            [
                gen.name,
                f"{min(spreads):.1f} %" if spreads else "n/a",
                f"{sorted(spreads)[len(spreads) // 2]:.1f} %" if spreads else "n/a",
                f"{max(spreads):.1f} %" if spreads else "n/a",
            ]
        )
    return table(["Generator", "smallest", "median", "largest"], rows)


def report(
    records: list[dict],
    env: dict,
    args: argparse.Namespace,
    command: str,
    generators: list[gl.Generator],
) -> str:
    startup = {r["generator"]: r["startup_cpu_s"] for r in records if r["part"] == "startup"}
    syscalls = [
        r for r in records if r["part"] == "syscalls" and r.get("mode", "keepalive") == "keepalive"
    ]
    setup_calls = [r for r in records if r["part"] == "syscalls" and r.get("mode") == "setup"]
    profiled = [r for r in records if r["part"] == "profile"]
    proof, proof_headline = handshake_proof.report_lines(records), handshake_proof.headline(records)
    records = [r for r in records if r["part"] not in ("startup", "syscalls", "profile", "proof")]
    before = any(g.name == "loadbench-before" for g in generators)
    concs = args.concurrencies
    servers = args.servers
    ka = [r for r in records if r["part"] == "keepalive"]
    setup = [r for r in records if r["part"] == "setup"]

    def ka_only(
        lines: list[str],
    ) -> list[str]:  # --only-setup / --no-keepalive-part: no empty tables
        return lines if ka else []

    def per_server(key: str, lowest: bool, digits: int, mark: bool) -> list[str]:
        out = []
        for server in servers:
            cols = [(f"c = {c}", {"server": server, "connections": c}) for c in concs]
            out += [
                f"Against {server}:",
                "",
                _grid(ka, generators, cols, key, lowest, digits, mark),
                "",
            ]
        return out

    def setup_table(scheme: str) -> list[str]:
        cols: list[tuple[str, dict]] = []
        out = []
        noun = "handshake" if scheme == "https" else "connection"
        for key, title, lowest, digits in (
            ("conn_per_s", f"{noun}s/s", False, 0),
            ("gen_cpu_us_per_conn", f"generator us/{noun}", True, 1),
            ("server_cpu_us_per_conn", f"server us/{noun}", True, 1),
        ):
            cols = [
                (f"{server}: {title}", {"server": server, "scheme": scheme}) for server in servers
            ]
            out += [
                f"{title}:",
                "",
                _grid(
                    setup, generators, cols, key, lowest, digits, key != "server_cpu_us_per_conn"
                ),
                "",
            ]
        if any(r.get("tcp_segments_per_conn") is not None for r in setup):
            cols = [
                (f"{server}: segments / resets", {"server": server, "scheme": scheme})
                for server in servers
            ]
            out += [
                "TCP segments and resets sent per new connection, both ends together, by the kernel's own "
                "counters (/proc/net/snmp `Tcp: OutSegs`, `OutRsts`: what `nstat` shows) over each run:",
                "",
                _pair_grid(
                    setup, generators, cols, ("tcp_segments_per_conn", "tcp_resets_per_conn")
                ),
                "",
            ]
        return out

    failures = [r for r in records if r["status"] == "FAIL"]
    unsupported = sorted({(r["generator"], r["reason"]) for r in records if r["status"] == "n/a"})
    not_installed = [g for g in generators if not g.available]
    errors = [r for r in records if r["status"] == "ok" and (r["errors"] or r["non_2xx"])]
    lb_self = [
        r
        for r in records
        if r["status"] == "ok"
        and r["generator"] == "loadbench"
        and r["extra"].get("self_cpu_us_per_req") is not None
    ]

    settings = {
        "Workload": f"GET {args.path} (14-byte `Hello, World!\\n`, text/plain), HTTP/1.1",
        "Generators": f"each pinned to CPU {args.generator_cpu} with `taskset -c {args.generator_cpu}`, "
        "one thread / one OS CPU: `loadbench run -t 1 --cpus 1`, `wrk -t1`, `h2load --h1 -t1`, "
        "`hey -cpus 1`, bombardier and oha (runtime sized by the affinity mask: 1 CPU), ab",
        "Servers": f"pinned to CPU {args.server_cpu}, one worker: nginx `worker_processes 1` "
        "(bench/peers/nginx), loadbench-server `--workers 1`",
        "Keep-alive part": f"c = {', '.join(str(c) for c in concs)}; median of {args.repeats} x "
        f"{args.duration} s; repeats outermost, generators innermost (interleaved)",
        "Setup part": f"c = {args.setup_concurrency}, one connection per request (wrk and bombardier "
        "`-H 'Connection: close'`, loadbench/hey/oha `--disable-keepalive`, ab without -k; checked "
        "against loadbench-server's accept counter: one new connection per response for every tool); "
        f"median of {args.repeats} x {args.duration} s",
        "TLS handshakes": "self-signed EC P-256 certificates. nginx runs without session cache and tickets, "
        "loadbench-server with `--no-tls-resumption` (no cache, no tickets): every handshake "
        "is a full one for every client, against both servers. loadbench: "
        f"{ssl_version()}, X25519 key share, certificate not verified (the chain walk "
        "skipped; the CertificateVerify signature is checked), certificate keys decoded in a "
        "library context offering only the SubjectPublicKeyInfo decoders (tls_library.cpp); "
        "loadbench-wolfssl (where measured): the same run with `--tls-library wolfssl` "
        "(Debian's wolfSSL 5.5, X25519 key share, certificate not verified, signature checked); "
        "loadbench-rustls (where measured): `--tls-library rustls` (rustls 0.23 with ring's "
        "assembly crypto, linked into loadbench; X25519 key share, certificate not verified, "
        "signature checked, resumption off)",
        "TCP exchange": "every tool's default (the handshake's last ACK sent alone, FIN close); "
        "loadbench-lean-tcp (where measured): loadbench with `--ack-with-request --rst-close` - the "
        "last ACK rides on the request (TCP_QUICKACK off before connect) and a connection the "
        "server has closed is closed with RST (SO_LINGER 0): the kernel counters' table shows "
        "the packets each tool's exchange took",
        "Generator CPU": "ru_utime+ru_stime of the generator process from os.wait4() (its whole life, start-up "
        "included) / the exact responses (or new connections) the generator itself reports",
        "Server CPU": "utime+stime of the server's process tree from /proc/<pid>/stat right before and after "
        "each generator run / the generator's exact response count",
        "Saturation": f"{SAT} = the generator's core was >= {int(BUSY_LIMIT * 100)} % busy (median over repeats): "
        "the cell may be generator-bound, and is when the server's core was not saturated. "
        f"{GEN_BOUND} (connection setup) = the generator's CPU per new connection / handshake "
        "exceeded the server's: the rate is the generator's limit, not the server's",
        "Command": f"`{command}`",
    }
    parts = [
        *report_head(
            "Load generators compared: loadbench vs wrk, h2load, hey, bombardier, oha, ab",
            "bench/generator_vs_peers.py",
            env,
            settings,
            f"every run, with the tool's own output, in `{Path(args.out).name}.jsonl`",
        ),
        "## Headline: loadbench vs wrk, generator CPU us per response (keep-alive, median)"
        if ka
        else "## Headline: loadbench vs wrk, generator CPU us per new connection / handshake (median)",
        "",
        *ka_only(
            [
                "Whole process (rusage, start-up included - the same figure as for every other tool):",
                "",
                *_ratio_lines(ka, servers, concs),
                "",
                "loadbench's engine threads only (its own `generator.cpu_s` over the measured window) vs wrk "
                "(rusage, whose start-up is a few ms):",
                "",
                *_ratio_lines(ka, servers, concs, engine=True),
                "",
            ]
        ),
        "Connection setup, generator CPU per new connection / per handshake (whole process, median; against "
        "nginx and loadbench-server every handshake is a full one for every tool: no session cache, no tickets):",
        "",
        *_setup_ratio_lines(setup, servers),
        "",
        *(
            []
            if not _select(setup, generator="loadbench-lean-tcp")
            else [
                "The same with loadbench's opt-in TCP exchange (`--ack-with-request --rst-close`: fewer packets per "
                "connection, so the server's kernel sees another exchange than wrk's - compare its server column too):",
                "",
                *_setup_ratio_lines(setup, servers, mine="loadbench-lean-tcp"),
                "",
            ]
        ),
        *(
            []
            if not _handshake_lines(setup, servers)
            else [
                "Full TLS handshake, generator CPU per handshake by TLS library (whole process, median):",
                "",
                *_handshake_lines(setup, servers),
                "",
                *proof_headline,
            ]
        ),
        *(
            []
            if not before
            else [
                "## Before and after: loadbench (this build) vs loadbench-before (the --before build)",
                "",
                f"The --before build: {env.get('Generator loadbench-before', '')}",
                "",
                *ka_only(
                    [
                        "Generator CPU us per response, keep-alive, whole process:",
                        "",
                        *_ratio_lines(
                            ka, servers, concs, mine="loadbench", other="loadbench-before"
                        ),
                        "",
                        "Engine threads only:",
                        "",
                        *_ratio_lines(
                            ka,
                            servers,
                            concs,
                            engine=True,
                            mine="loadbench",
                            other="loadbench-before",
                        ),
                        "",
                    ]
                ),
                "Connection setup, generator CPU per new connection / per handshake:",
                "",
                *_setup_ratio_lines(setup, servers, other="loadbench-before"),
                "",
            ]
        ),
        *(
            []
            if not syscalls
            else [
                f"## System calls per response (keep-alive, c={syscalls[0]['connections']}, against "
                f"{syscalls[0]['server']}, `strace -c -f`)",
                "",
                "Every thread's calls over the whole run, minus those of a one-request run of the same tool "
                "(start-up and shutdown; wrk has none), / the responses it counted. strace slows each tool many "
                "times over, so only the counts mean anything here, not the rates.",
                "",
                *_syscall_lines(syscalls),
                "",
            ]
        ),
        *ka_only(
            [
                "## Generator CPU us per response, keep-alive (median; lower is better)",
                "",
                *per_server("gen_cpu_us_per_resp", True, 2, True),
                "## Throughput, req/s as each generator counted it (median; higher is better)",
                "",
                *per_server("rps", False, 0, True),
                "## Server CPU us per response under each generator (median)",
                "",
                "The server's cost should not depend on who loads it; where it does, the generator shaped the "
                "traffic (pacing, batching, connection reuse).",
                "",
                *per_server("server_cpu_us_per_resp", True, 2, False),
                "## Generator core use (fraction of CPU 1 over the run, median)",
                "",
                *per_server("gen_busy", True, 2, False),
                "## Other work on the machine during the runs (cores busy outside server and generator, median)",
                "",
                "Machine busy time (/proc/stat) minus the server's and the generator's own CPU. Near 0 means the "
                "two pinned cores were ours; above that, other processes competed for them.",
                "",
                *per_server("foreign_cores", True, 2, False),
            ]
        ),
    ]
    if setup:
        parts += [
            "## Connection setup: http, one connection per request",
            "",
            *setup_table("http"),
            "## Connection setup: https, one full TLS handshake per request",
            "",
            *setup_table("https"),
        ]
    if any(r["status"] != "n/a" for r in setup_calls):
        parts += [
            f"## System calls per new connection and per full TLS handshake (c={setup_calls[0]['connections']}, "
            f"against {setup_calls[0]['server']}, `strace -c -f`)",
            "",
            "One connection per request, as in the setup part (https: loadbench-server "
            "`--no-tls-resumption`, a full handshake each). Every thread's calls over the whole run, minus "
            "those of a one-request run of the same tool against the same URL (start-up, shutdown and its "
            "one connection; wrk has none), / the new connections it counted (loadbench: its "
            "`connections_opened`; the others: one per response). Only the counts mean anything under "
            "strace, not the rates.",
            "",
            *_syscall_lines(setup_calls, setup=True),
            "",
        ]
    parts += proof
    parts += pf.report_lines(profiled, setup)
    if lb_self:
        fixed = startup.get("loadbench")
        parts += [
            "## loadbench: engine CPU vs whole-process CPU",
            "",
            "loadbench measures the CPU of its engine threads inside the measured window (`generator.cpu_s` "
            "in its JSON); rusage covers the whole process: interpreter start-up, imports, result writing. "
            + (
                f"A one-request `loadbench run -n 1` costs {fixed * 1e3:.0f} ms of CPU (median of 3): that "
                "fixed cost of the Python shell, spread over a run's responses, is most of the difference; "
                "the last column takes it out of the rusage figure."
                if fixed is not None
                else ""
            ),
            "",
            table(
                [
                    "Part",
                    "Server",
                    "c",
                    "engine (self) us/resp",
                    "rusage us/resp",
                    "rusage minus start-up us/resp",
                ],
                _lb_self_rows(lb_self, fixed),
            ),
        ]
    parts += [
        "",
        "## Noise: spread (max-min)/median of the repeats, generator CPU us per response, over all cells",
        "",
        _noise(records, generators, "gen_cpu_us_per_resp"),
        "",
        "## Not measured, failures and errors",
        "",
    ]
    parts += [f"- {g.name}: {g.missing_reason} - n/a everywhere" for g in not_installed]
    parts += [f"- {gen}: {reason} - n/a" for gen, reason in unsupported]
    parts += [
        f"- FAIL {r['generator']} vs {r['server']} ({r['scheme']}, {r['part']}, c={r['connections']}, "
        f"repeat {r['repeat']}): {r['reason'][:300]}"
        for r in failures
    ]
    parts += [
        f"- {r['generator']} vs {r['server']} ({r['scheme']}, {r['part']}, c={r['connections']}, "
        f"repeat {r['repeat']}): {r['errors']} socket errors, {r['non_2xx']} non-2xx"
        for r in errors
    ]
    if not (not_installed or unsupported or failures or errors):
        parts.append("- none")
    parts.append("")
    return "\n".join(parts)


def _lb_self_rows(rows: list[dict], fixed_cpu_s: Optional[float]) -> list[list[str]]:
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault(
            (
                r["part"],
                r["server"] + ("" if r["scheme"] == "http" else " (https)"),
                r["connections"],
            ),
            [],
        ).append(r)
    out = []
    for (part, server, c), group in sorted(
        cells.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])
    ):
        own: Callable[[dict], float] = lambda r: r["extra"]["self_cpu_us_per_req"]
        self_s = summarize(own(r) for r in group)
        rusage_s = summarize(r["gen_cpu_us_per_resp"] for r in group)
        net_s = summarize(
            (r["gen_cpu_s"] - fixed_cpu_s) / r["responses"] * 1e6
            for r in group
            if fixed_cpu_s is not None and r["responses"]
        )
        out.append(
            [
                part,
                server,
                str(c),
                fmt_number(self_s.median if self_s else None, 2),
                fmt_number(rusage_s.median if rusage_s else None, 2),
                fmt_number(net_s.median if net_s else None, 2),
            ]
        )
    return out


def analysis_median(values: list[float]) -> Optional[float]:
    summary = summarize(values)
    return summary.median if summary else None


def h2_report(records: list[dict], args: argparse.Namespace) -> str:
    """The HTTP/2 part: per server and c x m cell, each tool's req/s and its own CPU per response
    (median of the repeats), and loadbench's CPU per response over h2load's."""
    rows = [r for r in records if r.get("part") == "h2"]
    if not rows:
        return "## HTTP/2 part\n\nNo HTTP/2 runs.\n"
    gens = sorted({r["generator"] for r in rows}, key=lambda g: (g != "loadbench", g))
    servers = sorted({r["server"] for r in rows})
    cells = sorted(
        {(r["connections"], r["streams"]) for r in rows}, key=lambda cm: (cm != (25, 10), cm)
    )
    headers = (
        ["server", "c x m"]
        + [f"{g} req/s" for g in gens]
        + [f"{g} CPU us/resp" for g in gens]
        + ["loadbench engine us/resp", "loadbench / h2load CPU"]
    )
    body = []
    for server in servers:
        for c, m in cells:
            group = [
                r
                for r in rows
                if r["server"] == server and r["connections"] == c and r["streams"] == m
            ]
            if not group:
                continue
            rps, cpu = [], []
            for g in gens:
                ok = [r for r in group if r["generator"] == g and r.get("status") == "ok"]
                status = _status([r for r in group if r["generator"] == g])
                rps.append(_median(ok, "rps") if ok else None)
                cpu.append(_median(ok, "gen_cpu_us_per_resp") if ok else None)
                if not ok and status:
                    rps[-1] = cpu[-1] = None
            lb = cpu[gens.index("loadbench")] if "loadbench" in gens else None
            h2 = cpu[gens.index("h2load")] if "h2load" in gens else None
            ratio = f"{lb / h2:.2f}" if lb and h2 else "n/a"
            selfs = [
                r["extra"].get("self_cpu_us_per_req")
                for r in group
                if r["generator"] == "loadbench" and r.get("status") == "ok" and r.get("extra")
            ]
            engine = analysis_median([v for v in selfs if v is not None])
            body.append(
                [server, f"{c} x {m}"]
                + [fmt_number(v) for v in rps]
                + [fmt_number(v, 2) for v in cpu]
                + [fmt_number(engine, 2), ratio]
            )
    fails = [
        f"- {r['status']} {r['generator']} vs {r['server']} c={r['connections']} m={r['streams']}: "
        f"{r.get('reason', '')[:200]}"
        for r in rows
        if r.get("status") != "ok"
    ]
    text = [
        "## HTTP/2 part",
        "",
        f"Keep-alive, one generator thread pinned to CPU {args.generator_cpu}, the server on CPU "
        f"{args.server_cpu}; {args.duration} s per run, median of {args.repeats}. CPU per response is the "
        "generator process's own ru_utime + ru_stime over the responses it reports. nginx is TLS with ALPN h2; "
        "loadbench-server and h2o are h2c (prior knowledge). m = streams per connection (h2load -m, oha -p, "
        "loadbench -p/--streams). loadbench's rusage includes the interpreter's start-up; its engine column is "
        "the engine threads' own CPU inside the window (`generator.cpu_us_per_req`).",
        "",
        table(headers, body),
        "",
    ]
    if fails:
        text += ["Runs that did not complete:", ""] + fails + [""]
    return "\n".join(text)


def _closed_cpu(records: list[dict], tool: str, server: str, c: int, key: str) -> Optional[float]:
    """The median CPU per response (``key``) of ``tool``'s keep-alive runs against ``server`` at
    ``c`` connections: the closed loop an open-loop run is held against."""
    return analysis_median(
        [
            (r.get("extra") or {}).get(key) or r.get(key)
            for r in records
            if r.get("part") == "keepalive"
            and (r["generator"], r["server"], r["connections"]) == (tool, server, c)
            and r.get("status") == "ok"
            and ((r.get("extra") or {}).get(key) or r.get(key))
        ]
    )


def _or_na(value: object) -> str:
    return "n/a" if value is None else str(value)


def open_loop_report(records: list[dict], args: argparse.Namespace) -> str:
    """The open-loop part: per server and rate, each loadbench build's achieved rate, what it left
    unfinished, how late it sent, and its CPU per response beside its own closed loop's over the
    same connections (the keep-alive part) - the cost of keeping a schedule."""
    rows = [r for r in records if r.get("part") == "open"]
    builds = sorted({r["generator"] for r in rows}, key=lambda g: (g != "loadbench", g))
    headers = [
        "server",
        "rate",
        "pool",
        "build",
        "req/s",
        "unfinished",
        "late sends",
        "lateness p99 us",
        "latency p99 us",
        "wake-ups / resp",
        "CPU us/resp",
        "engine us/resp",
        "closed us/resp",
        "open / closed",
        "engine busy",
        "outside CPU",
    ]
    body = []
    for server in sorted({r["server"] for r in rows}):
        for rate in sorted({r["rate"] for r in rows if r["server"] == server}):
            for gen in builds:
                group = [
                    r
                    for r in rows
                    if (r["server"], r["rate"], r["generator"]) == (server, rate, gen)
                ]
                ok = [r for r in group if r.get("status") == "ok"]
                if not group:
                    continue
                pool = group[0]["connections"]
                if not ok:
                    body.append(
                        [server, fmt_number(rate), str(pool), gen, _status(group) or "fail"]
                    )
                    continue
                extra = [r.get("extra") or {} for r in ok]
                lateness = [(e.get("rate") or {}).get("lateness_us", {}).get("p99") for e in extra]
                latency = [(r.get("latency_us") or {}).get("p99") for r in ok]
                wakeups = [
                    (e.get("rate") or {}).get("wakeups", 0) / r["responses"]
                    for e, r in zip(extra, ok)
                    if (e.get("rate") or {}).get("wakeups") and r.get("responses")
                ]
                engine = analysis_median(
                    [e["self_cpu_us_per_req"] for e in extra if e.get("self_cpu_us_per_req")]
                )
                # the same tool's closed loop over the same connections: loadbench's engine thread
                # (its fixed start-up excluded), a tool without one its whole process
                key = "self_cpu_us_per_req" if engine else "gen_cpu_us_per_resp"

                # an open-loop-only variant of loadbench is held against loadbench's closed loop
                closed = _closed_cpu(records, gen, server, pool, key) or (
                    _closed_cpu(records, "loadbench", server, pool, key) if engine else None
                )
                opened = engine or _median(ok, "gen_cpu_us_per_resp")
                outside = analysis_median(
                    [r["outside_share"] for r in ok if r.get("outside_share") is not None]
                )
                busy = analysis_median(
                    [
                        e["self_cpu_s"] / r["duration_s"]
                        for e, r in zip(extra, ok)
                        if e.get("self_cpu_s") is not None and r.get("duration_s")
                    ]
                )
                body.append(
                    [
                        server,
                        f"{fmt_number(rate)} ({ok[0].get('rate_basis', '')})",
                        str(pool),
                        gen,
                        fmt_number(_median(ok, "rps")),
                        " / ".join(_or_na(e.get("unfinished")) for e in extra),
                        " / ".join(_or_na((e.get("rate") or {}).get("late_sends")) for e in extra),
                        fmt_number(analysis_median([v for v in lateness if v is not None])),
                        fmt_number(analysis_median([v for v in latency if v is not None])),
                        fmt_number(analysis_median(wakeups), 2),
                        fmt_number(_median(ok, "gen_cpu_us_per_resp"), 2),
                        fmt_number(engine, 2),
                        fmt_number(closed, 2),
                        f"{opened / closed:.2f}" if opened and closed else "n/a",
                        f"{100 * busy:.0f} %" if busy is not None else "n/a",
                        f"{100 * outside:.1f} %" if outside is not None else "n/a",
                    ]
                )
    text = [
        "## Open loop",
        "",
        f"`loadbench run -q RATE --max-connections POOL -c POOL`, one generator thread pinned to CPU "
        f"{args.generator_cpu}, the server on CPU {args.server_cpu}; {args.duration} s per run, "
        f"medians of {args.repeats} (unfinished and late sends listed per repeat). CPU us/resp: the "
        "whole generator process (getrusage), per response; engine: loadbench's event-loop thread "
        "alone; closed: the same tool in the keep-alive part at the pool's connections (no "
        "schedule to keep; loadbench's engine, another tool's whole process), and open / closed "
        "divides the same two kinds of figure; engine busy: the event-loop thread's CPU from the "
        "window's start to the end of its drain over the window (above 100 %: it was still "
        "sending the window's requests after it). Lateness: how long after its due time each "
        "request was handed to the socket (the corrected latency includes it; oha and wrk2 report "
        "none). Latency: each tool's own p99 from the intended send time (wrk2's covers the "
        "window after its 10 s calibration; its requests and CPU cover the whole run). Wake-ups: "
        "loadbench's event-loop waits in the window per response (`rate.wakeups`). "
        "Outside CPU: other processes and the hypervisor's steal, as a share of the machine, in the "
        "window - on this VM the host takes the CPU back while the guest idles between sends, so "
        "low-rate runs are where it shows.",
        "",
    ]
    text.append(table(headers, body))
    return "\n".join(text) + "\n"


def open_loop_document(
    records: list[dict], env: dict, args: argparse.Namespace, command: str
) -> str:
    """The whole report of `--only-open-loop`: settings, environment, the open-loop table and the
    closed loop it is held against (the keep-alive runs of the same tools), nothing empty."""
    settings = {
        "Workload": f"GET {args.path}, HTTP/1.1 keep-alive",
        "Generators": f"each pinned to CPU {args.generator_cpu} with `taskset`, one thread",
        "Servers": f"pinned to CPU {args.server_cpu}, one worker: nginx `worker_processes 1`, "
        "loadbench-server `--workers 1`",
        "Closed loop": f"c = {', '.join(map(str, args.concurrencies))}; {args.repeats} x "
        f"{args.duration} s; repeats outermost, tools innermost",
        "Open loop": f"{', '.join(f'{r:g}' for r in args.open_rates)} req/s over {args.open_pool} "
        "connections, and "
        + ", ".join(f"{100 * f:g} %" for f in args.open_fractions)
        + " of loadbench's closed-loop peak against each server over that cell's connections",
        "Command": f"`{command}`",
    }
    head = report_head(
        "loadbench's open loop: cost per response beside its closed loop, oha and the engine "
        "before issue 28",
        "bench/generator_vs_peers.py --only-open-loop",
        env,
        settings,
        f"every run, with the tool's own output, in `{Path(args.out).name}.jsonl`",
    )
    ka = [r for r in records if r.get("part") == "keepalive" and r.get("status") == "ok"]
    body = []
    for server in sorted({r["server"] for r in ka}):
        for gen in sorted({r["generator"] for r in ka}, key=lambda g: (g != "loadbench", g)):
            for c in sorted({r["connections"] for r in ka}):
                rows = [
                    r
                    for r in ka
                    if (r["server"], r["generator"], r["connections"]) == (server, gen, c)
                ]
                if not rows:
                    continue
                engine = analysis_median(
                    [
                        r["extra"]["self_cpu_us_per_req"]
                        for r in rows
                        if (r.get("extra") or {}).get("self_cpu_us_per_req")
                    ]
                )
                body.append(
                    [
                        server,
                        gen,
                        str(c),
                        fmt_number(_median(rows, "rps")),
                        fmt_number(_median(rows, "gen_cpu_us_per_resp"), 2),
                        fmt_number(engine, 2),
                    ]
                )
    closed = [
        "## The closed loop (keep-alive runs of the same tools)",
        "",
        "Medians of the repeats; engine: loadbench's event-loop thread alone.",
        "",
        table(["server", "tool", "c", "req/s", "CPU us/resp", "engine us/resp"], body),
        "",
    ]
    return "\n".join([*head, open_loop_report(records, args), *closed])
