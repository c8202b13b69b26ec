"""CPU profiles of the load generators (`perf record`) for bench/generator_vs_peers.py: where a
generator's own CPU goes when every request opens a new connection (http) or pays a full TLS
handshake (https). Recording, reading `perf report` and the report's tables live here; the
driver decides when (after every measured run: a profiled run is never a measured one).

Symbols: the kernel's from kallsyms (root), the shared libraries' from their dynamic symbol
tables. Functions a library does not export (most of libcrypto's big-number and elliptic-curve
code) have no name there: perf lists each of their sampled addresses apart, so they are added
up into one `(not exported)` entry per library here rather than crowding the top entries.
Call graphs are unwound from DWARF (.eh_frame, present in stripped libraries), not frame
pointers, which libcrypto does not keep: that is what lets the exported entry points a
handshake goes through (EVP_DigestVerifyFinal, EVP_PKEY_generate, ...) and the kernel's system
calls be given their inclusive time, naming where the unexported code's time is spent.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from loadbench.core.profile import perf_missing, perf_path
from loadbench.report.markdown import fmt_number, table
from loadbench.sweep.targets import program_version

from . import generators as gl
from .repeats import summarize

FREQUENCY_HZ = 2000
DELAY_MS = (
    1000  # `perf record -D`: the first second (interpreter start-up, imports, connecting) left out
)
CALL_GRAPH = "dwarf,16384"  # bytes of stack copied per sample: deep enough for a handshake
TOP = 12
INCLUSIVE_TOP = 10
RAW_LINES = 120  # of the per-symbol report kept in the JSONL (the per-library one is kept whole)
UNEXPORTED = "(not exported)"
# Columns of the per-library summary, in this order; a library matching none is "other".
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kernel", ("[kernel",)),
    ("libcrypto", ("libcrypto",)),
    ("libssl", ("libssl",)),
    ("libwolfssl", ("libwolfssl",)),
    ("libc", ("libc.so", "libc-")),
    ("libstdc++", ("libstdc++",)),
    ("loadbench _core", ("_core.",)),
    ("python", ("python", "libpython")),
    ("wrk", ("wrk",)),
)
_EVENT = re.compile(r"^# Samples: .* of event '([^']+)'", re.M)
_ENTRY = re.compile(
    r"^\s*(?:([\d.]+)%\s+)?([\d.]+)%\s+(?:(\d+)\s+)?(\S+)(?:\s+\[(.)\]\s+(.*?))?\s*$"
)
TLS_GROUPS = ("libcrypto", "libssl", "libwolfssl")
# loadbench-rustls: rustls and ring are linked into loadbench's _core, so their functions are
# told apart from the engine's by name (perf demangles Rust symbols).
RUSTLS_SYMBOLS = ("rustls::", "ring::", "ring_core_", "lb_rustls_")


def unavailable() -> Optional[str]:
    """None when `perf record` works here, else why not (said in the report's environment block)."""
    if perf_missing() is not None:  # the same perf (and $LOADBENCH_PERF) as run --profile
        return "perf not installed (bash bench/install-peers.sh installs linux-perf)"
    with tempfile.TemporaryDirectory(prefix="bench-perf-check-") as tmp:
        try:
            proc = subprocess.run(
                [perf_path() or "perf", "record", "-q", "-o", f"{tmp}/check.data", "--", "true"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"perf record failed: {exc}"
    if proc.returncode != 0:
        return f"perf record failed (kernel.perf_event_paranoid?): {(proc.stderr or proc.stdout)[-300:]}"
    return None


def perf_version() -> str:
    return program_version(["perf", "--version"], r"perf version \S+")


def dso_group(dso: str) -> str:
    name = dso.lower()
    return next(
        (
            group
            for group, prefixes in GROUPS
            if any(name.startswith(p) or f"/{p}" in name for p in prefixes)
        ),
        "other",
    )


def parse_report(text: str) -> list[dict]:
    """`perf report --stdio -n --sort dso[,sym]` -> [{percent, samples, dso, symbol}], in its order;
    with --children, percent is the inclusive share (children) and self the entry's own."""
    entries = []
    for line in text.splitlines():
        match = _ENTRY.match(line)
        if match and not line.lstrip().startswith("#"):
            children, percent, samples, dso, kind, symbol = match.groups()
            entry = {
                "percent": float(children or percent),
                "samples": int(samples or 0),
                "dso": dso,
                "symbol": f"[{kind}] {symbol}" if kind else "",
            }
            if children:
                entry["self"] = float(percent)
            entries.append(entry)
    return entries


def _named(entry: dict) -> bool:
    return not entry["symbol"].split(" ", 1)[-1].startswith("0x")


def entry_points(inclusive: list[dict], n: int = INCLUSIVE_TOP) -> list[dict]:
    """The largest inclusive shares among the TLS library's exported functions and the kernel's
    system calls: what a connection's time goes to, below the tool's own code."""

    def wanted(e: dict) -> bool:
        if dso_group(e["dso"]) in TLS_GROUPS:
            return _named(e)
        if dso_group(e["dso"]) == "loadbench _core":  # rustls and ring are linked into it
            return any(k in e["symbol"] for k in RUSTLS_SYMBOLS)
        return dso_group(e["dso"]) == "kernel" and e["symbol"].startswith("[k] __x64_sys_")

    return [e for e in inclusive if wanted(e)][:n]


def top_entries(entries: list[dict], n: int = TOP) -> list[dict]:
    """The n largest self shares, each library's unnamed addresses summed into one entry."""
    folded: dict[tuple[str, str], dict] = {}
    for e in entries:
        unnamed = not _named(e)
        key = (e["dso"], UNEXPORTED if unnamed else e["symbol"])
        entry = folded.setdefault(
            key, {"percent": 0.0, "samples": 0, "dso": key[0], "symbol": key[1], "addresses": 0}
        )
        entry["percent"] += e["percent"]
        entry["samples"] += e["samples"]
        entry["addresses"] += 1 if unnamed else 0
    return sorted(folded.values(), key=lambda e: -e["percent"])[:n]


def shares_by_group(by_dso: list[dict]) -> dict[str, float]:
    shares: dict[str, float] = {}
    for e in by_dso:
        group = dso_group(e["dso"])
        shares[group] = shares.get(group, 0.0) + e["percent"]
    return shares


def _perf_report(data: Path, sort: str, children: bool = False, limit: float = 0) -> str:
    proc = subprocess.run(
        [
            "perf",
            "report",
            "-i",
            str(data),
            "--children" if children else "--no-children",
            "--sort",
            sort,
            "--stdio",
            "-n",
            "-g",
            "none",
            "--percent-limit",
            str(limit),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"perf report exited {proc.returncode}: {proc.stderr[-400:]}")
    return proc.stdout


def record(
    gen: gl.Generator, url: str, connections: int, duration_s: int, cpus: Sequence[int]
) -> dict:
    """One connection-per-request run of `gen` under `perf record` (perf itself not pinned): the
    run's counts and the profile's entries - self per symbol and per library, inclusive per
    exported TLS-library function and system call."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{gen.name}-perf-") as tmp:
        data = Path(tmp) / "perf.data"
        child, result = gen.run(
            url,
            connections,
            duration_s,
            False,
            cpus,
            wrap=perf_record(data),
            timeout_s=duration_s * 5 + 60,
        )
        by_sym_text, by_dso_text = _perf_report(data, "dso,sym"), _perf_report(data, "dso")
        inclusive_text = _perf_report(data, "dso,sym", children=True, limit=0.5)
    by_dso = parse_report(by_dso_text)
    entries = parse_report(by_sym_text)
    if not by_dso:
        raise ValueError(f"perf report has no samples: {by_dso_text[-400:]!r}")
    event = _EVENT.search(by_dso_text)
    return {
        "argv": " ".join(child.argv),
        "duration_s": duration_s,
        "delay_ms": DELAY_MS,
        "event": event.group(1) if event else "unknown",
        "frequency_hz": FREQUENCY_HZ,
        "responses": result.responses,
        "errors": result.errors,
        "new_connections": result.connections or result.responses,
        "samples": sum(e["samples"] for e in by_dso),
        "by_dso": by_dso,
        "by_group": shares_by_group(by_dso),
        "top": top_entries(entries, 3 * TOP),
        "entry_points": entry_points(parse_report(inclusive_text), 30),
        "perf_report": "\n".join(by_sym_text.splitlines()[:RAW_LINES]),
        "perf_report_dso": by_dso_text,
        "perf_report_children": "\n".join(inclusive_text.splitlines()[:RAW_LINES]),
    }


def perf_record(data: Path) -> list[str]:
    return command().split() + ["-o", str(data), "--"]


def command() -> str:
    return f"perf record -q -F {FREQUENCY_HZ} --call-graph {CALL_GRAPH} -D {DELAY_MS}"


def describe(r: dict) -> str:
    head = f"  profile   {r['scheme']:<5} {r['server']:<16} {r['generator']:<17}"
    if r["status"] != "ok":
        return f"{head} {r['status']}: {r.get('reason', '')[:160]}"
    groups = ", ".join(
        f"{g} {p:.0f} %" for g, p in sorted(r["by_group"].items(), key=lambda kv: -kv[1])[:4]
    )
    return f"{head} {r['samples']:,} samples; {groups}"


def _label(r: dict) -> str:
    return f"{r['generator']}, {'https (full handshake)' if r['scheme'] == 'https' else 'http'}"


def _event_note(profiles: list[dict]) -> list[str]:
    events = sorted({r.get("event", "unknown") for r in profiles})
    if not any(e.startswith("cpu-clock") for e in events):
        return [f"Sampled event: {', '.join(events)}."]
    return [
        f"Sampled event: {', '.join(events)} - a timer, as this machine offers perf no hardware counters "
        "(a VM): a sample that falls while the kernel runs with interrupts off is credited to where it "
        "turns them back on, so `_raw_spin_unlock_irqrestore` and its kind stand for kernel work before "
        "them (TCP, softirq on loopback), not for lock contention."
    ]


def report_lines(profiles: list[dict], setup: list[dict]) -> list[str]:
    """The report's profile section: shares by library (beside the generator's CPU per new
    connection / handshake measured in the setup part), then each profile's top entries."""
    shown = [r for r in profiles if r["status"] != "n/a"]  # n/a: the tool cannot do the mode
    if not shown:
        return []
    ok = [r for r in shown if r["status"] == "ok"]
    groups = [
        g for g, _ in GROUPS + (("other", ()),) if any(r["by_group"].get(g, 0) >= 0.05 for r in ok)
    ]
    summary = []
    for r in shown:
        if r["status"] != "ok":
            summary.append([_label(r), r["status"], ""] + [""] * len(groups))
            continue
        measured = summarize(
            s.get("gen_cpu_us_per_conn")
            for s in setup
            if s["status"] == "ok"
            and s["generator"] == r["generator"]
            and s["server"] == r["server"]
            and s["scheme"] == r["scheme"]
        )
        summary.append(
            [_label(r), f"{r['samples']:,}", fmt_number(measured.median if measured else None, 1)]
            + [f"{r['by_group'].get(g, 0.0):.1f} %" for g in groups]
        )
    first = ok[0] if ok else shown[0]
    lines = [
        f"## Where the generator's CPU goes: perf profiles, one connection per request (c={first['connections']}, "
        f"against {first['server']})",
        "",
        f"Each tool pinned to its core as above, under `{first.get('argv', command()).split(' -o ')[0]}` "
        f"(every thread, user and kernel; the first {first.get('delay_ms', DELAY_MS)} ms - interpreter start-up "
        "and imports - left out) "
        f"for a {first.get('duration_s', '?')} s run made after every measured one; https against "
        "loadbench-server `--tls --no-tls-resumption` (a full handshake per connection). Self time "
        "(`perf report --no-children`); the shares are of the generator's sampled CPU. Functions a library "
        f"does not export have no name in its dynamic symbol table: they are summed as `{UNEXPORTED}`. "
        "The us column is the generator's CPU per new connection / handshake measured in the setup part "
        "(whole process, median; against this server): a share of it is that library's cost per connection.",
        *_event_note(ok),
        "",
        "By shared object:",
        "",
        table(["Generator, scheme", "samples", "generator us/conn (setup part)"] + groups, summary),
        "",
    ]
    for r in shown:
        if r["status"] != "ok":
            lines += [f"Top entries, {_label(r)}: {r['status']} - {r.get('reason', '')[:200]}", ""]
            continue
        rows = [
            [
                f"{e['percent']:.1f} %",
                e["dso"],
                f"`{e['symbol']}`"
                + (f" ({e['addresses']} addresses)" if e.get("addresses") else ""),
            ]
            for e in r["top"][:TOP]
        ]
        lines += [
            f"Top {TOP} entries, {_label(r)} ({r['samples']:,} samples):",
            "",
            table(["self", "shared object", "symbol"], rows),
            "",
        ]
        points = [
            [f"{e['percent']:.1f} %", e["dso"], f"`{e['symbol']}`"]
            for e in r.get("entry_points", [])[:INCLUSIVE_TOP]
        ]
        if points:
            lines += [
                f"Inclusive (self + callees), {_label(r)}: the TLS library's exported functions and the "
                "system calls with the largest shares (nested: one may contain another):",
                "",
                table(["inclusive", "shared object", "function"], points),
                "",
            ]
    skipped = [f"{_label(r)} ({r.get('reason', '')})" for r in profiles if r["status"] == "n/a"]
    if skipped:
        lines += ["Not profiled: " + "; ".join(skipped) + ".", ""]
    return lines
