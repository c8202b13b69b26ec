"""The prose blocks of report.md: how it was generated, settings, environment, known limits.

Each sentence is derived from what the results folder holds, so the report never claims a
setting the run did not use or hides a measurement it did not make.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..core import analysis, protocols
from ..core.environment import Environment
from ..core.tcp_exchange import tcp_exchange_text
from .behaviour import growth_notes, reconnect_notes, rss_growth
from .markdown import table
from .model import Aggregate


def _cpus(cpus: Optional[list]) -> str:
    if not cpus:
        return "unpinned"
    return ("CPU " if len(cpus) == 1 else "CPUs ") + ", ".join(str(c) for c in cpus)


def _workload_line(w: dict, default_cs: list, sweep_pipeline: int = 1) -> str:
    body = w.get("body")
    size = body.get("bytes") if isinstance(body, dict) else (len(body) if body else 0)
    what = (
        f"{len(w['requests'])} requests round-robin"
        if w.get("requests")
        else f"{w.get('method', 'GET')} {w.get('path', '/')}"
        + (f" with a {size}-byte body" if size else "")
    )
    depth = w.get("pipeline") or sweep_pipeline
    if depth > 1:
        what += f", {depth} pipelined per HTTP/1.1 connection"
    cs = w.get("concurrencies") or default_cs
    return f"{w['name']}: {what} (C = {', '.join(str(c) for c in cs)})"


def _pipelined(settings: dict) -> bool:
    """Whether any workload of the sweep ran its HTTP/1.1 cells pipelined."""
    sweep = settings.get("pipeline") or 1
    return any((w.get("pipeline") or sweep) > 1 for w in settings.get("workloads", []))


def intro(generated: str, environment: dict, rows: list[dict]) -> list[str]:
    """The report's first paragraph: when and from what it was generated."""
    version = environment.get("loadbench") or environment.get("loadbench_version") or ""
    started = sorted(r["started"] for r in rows if r.get("started"))
    measured = (
        f", measured by `loadbench sweep` from {started[0]} to {started[-1]}" if started else ""
    )
    lines = [
        f"Generated {generated} by `loadbench report` from the raw results in this folder "
        f"(`results.jsonl`, one line per cell and repeat; `sweep.json` the settings; "
        f"`environment.json` the machine){measured}{' with loadbench ' + str(version) if version else ''}. "
        "Do not edit by hand: `loadbench report DIR` rewrites it from those files.",
        "",
    ]
    return lines


def servers_measured(settings: dict, rows: list[dict]) -> list[str]:
    """A bullet per measured server with what it is (its peers.toml or sweep description) and
    the binaries its cells measured (SHA-256: a rebuilt binary mid-sweep shows as two). A
    server the sweep named but never measured (not installed) is named once, under Known
    limits, with why; one that FAILed is listed (its failures are findings)."""
    lines = []
    seen = {r["target"] for r in rows if r.get("status") != "skipped"}
    for t in settings.get("targets", []):
        if t.get("name") in seen:
            how = t.get("description") or (
                " ".join(t.get("argv") or []) if t.get("kind") == "command" else t.get("kind")
            )
            lines.append(f"- **{t['name']}**: {how}")
            binaries: dict = {}
            versions: dict = {}
            for r in rows:
                if r["target"] == t["name"]:
                    if r.get("server_version") not in (None, "n/a"):
                        versions[r["server_version"]] = True
                    for e in r.get("executables") or []:
                        binaries.setdefault((e["path"], e.get("sha256")), e.get("role"))
            lines += [f"  - version: {v}" for v in versions]
            for (path, sha), role in binaries.items():
                lines.append(f"  - {role}: `{path}` sha256 `{sha or 'unreadable'}`")
    return lines + [""]


def reading_notes() -> list[str]:
    """How to read the tables' rows and marks (the appendix opens with it)."""
    return [
        "Read the throughput columns, not the latency columns, at high concurrency. These are "
        "closed-loop measurements: the generator holds C connections open and sends the next request "
        "the instant one returns. The effective in-flight count is req/s x mean latency (Little's "
        "law), which stays at C as long as every connection keeps cycling requests; when it falls below "
        f"{analysis.UNDERDRIVEN_FRACTION:g} x C because connections were lost to errors or reconnects, the "
        "server saw less load than the column claims: those cells are marked ‡ (under-driven) and never "
        "bold for latency.",
        "",
        "Every table has a non-2xx + errors row: a server that sheds load as fast error answers looks "
        f"fast, so a cell with more than {100 * analysis.DIRTY_SHARE:g} % non-2xx answers or errors is "
        "marked ✗ and never bold or ranked. A cell during whose window other processes took a share of the "
        "machine's CPU is re-run and, if still contended, marked ⚑ and left out of peaks and averages.",
        "",
        "The CPU us/req row is the one to compare across servers. It is server CPU time (utime+stime "
        "of every thread of the server's process tree, read from /proc around exactly the measured "
        "window) divided by the exact number of responses in that window, so unlike req/s it does not "
        "move when the generator pushes harder or softer. It rises with the worker count and with an "
        "unpinned generator; the Settings and Environment blocks state both.",
        "",
        "Who limited a cell is decided from both sides' CPU (one rule, core/limits.py): when the "
        "server's process tree kept at least 90 % of the cores it was pinned to busy, the server was the "
        "limit whatever the generator did, and the figure is the server's. A generator-bound cell (§) is "
        "one where loadbench's own generator, not the server, was the limit (its threads saturated while "
        "the server had CPU to spare) - common on a small machine, where a non-pipelined HTTP/1.1 request "
        "costs the generator about what it costs a fast server. Its req/s is then a lower bound on the "
        'server\'s, written "≥ N" in every table and hatched in the charts, closed from above by the '
        "server's CPU ceiling - its cores / its CPU time per response, \"(≤ N by CPU)\" - so the server's "
        "value lies in [measured, ceiling]. It enters peaks, averages and ranks as that interval. Its CPU "
        "us/req and peak memory are the server's own at the load it got and rank as measured; its latency "
        "percentiles are the generator's and are not ranked. A pool-bound open-loop cell (¶) is one whose "
        "sends waited for a free connection while the server had CPU to spare: its latency is the pool's "
        "queue, not the server's.",
        "",
        "Orders and ranks claim only what is certain beyond the repeats' noise: X is above Y when X's lower "
        "end (its slowest repeat, or its lower bound) exceeds Y's upper end (its fastest repeat, or its CPU "
        'ceiling). Otherwise the pair is within noise - written "≈" in the summary and "±N %" (half the '
        "repeats' range over the median) beside a peak - or, where a bound leaves it open, open; a rank is "
        "then a range naming the servers it is not ordered against.",
        "",
        "A cell marked ↗ (not steady) is one whose repeats, in the order they ran, only climbed - each above "
        f"the one before, the last at least {analysis.NOT_STEADY_CLIMB:g}x the first (e.g. 737 -> 1 019 -> "
        "3 175 req/s: a JIT still compiling, a cache still filling). Its median is no steady figure, so it is "
        "shown with its mark and left out of peaks, averages, ranks and bold marks; a longer warm-up "
        "(the target's `warmup`) measures the steady server.",
        "",
    ]


def transport_text(transport: str) -> str:
    """How the generator reached the servers: a unix-socket figure is never to be read as TCP."""
    if transport == "unix":
        return (
            "unix socket (loadbench-server --unix in a private directory): the same requests "
            "without TCP's loopback cost - not comparable with figures measured over TCP"
        )
    return "TCP over loopback"


def settings_table(settings: dict, rows: list[dict], aggs: dict, held: Sequence[dict] = ()) -> str:
    """``held``: the hold cells' records (memory per idle connection), counted beside the load cells."""
    measured = {r["target"] for r in rows if r.get("status") != "skipped"}
    repeats, duration, warmup = (
        settings.get("repeats"),
        settings.get("duration"),
        settings.get("warmup"),
    )
    cs = settings.get("concurrencies") or []
    status = {s: sum(1 for r in rows if r["status"] == s) for s in ("ok", "fail", "skipped")}
    window = (
        f"{settings['requests']:,} requests (responses + errors)".replace(",", " ")
        if settings.get("requests")
        else f"{duration:g} s"
    )
    items = [
        (
            "Throughput/latency",
            f"median of {repeats} x {window} closed-loop runs, keep-alive, "
            f"after a {warmup:g} s warm-up excluded from every figure",
        ),
        ("Concurrencies", ", ".join(str(c) for c in cs)),
        (
            "Workloads",
            "; ".join(
                _workload_line(w, cs, settings.get("pipeline") or 1)
                for w in settings.get("workloads", [])
            ),
        ),
        ("Protocols", ", ".join(settings.get("protocols", []))),
        ("Transport", transport_text(settings.get("transport") or "tcp")),
    ]
    if settings.get("open_fractions"):
        items.append(
            (
                "Open loop",
                "constant rate at "
                + ", ".join(f"{round(100 * f)} %" for f in settings["open_fractions"])
                + f" of each server's best closed-loop req/s ({settings.get('open_loop_workload')}), "
                f"{repeats} x {duration:g} s; latency corrected for coordinated omission",
            )
        )
    if settings.get("connection_setup"):
        items.append(
            (
                "Connection-setup rate",
                f"a new connection per request (no keep-alive) at "
                f"c = {settings.get('connection_setup_concurrency')}, {settings.get('connection_setup_workload')}, "
                f"{repeats} x {duration:g} s; " + tcp_exchange_text(settings),
            )
        )
    h2 = [p for p in settings.get("protocols", []) if p in protocols.names(family="HTTP/2")]
    if h2:
        streams = settings.get("streams")
        per = {p: (streams.get(p, 10) if isinstance(streams, dict) else streams or 10) for p in h2}
        items.append(
            (
                "HTTP/2",
                "; ".join(f"{p}: {per[p]} concurrent streams per connection" for p in h2)
                + " (h2c: prior knowledge on the plain port; h2: ALPN over TLS); HTTP/1.1: one request "
                "in flight per connection"
                + (" unless its workload is pipelined" if _pipelined(settings) else ""),
            )
        )
    if held:
        asked = sorted({r.get("connections") for r in held if r.get("connections")})
        items.append(
            (
                "Memory per idle connection",
                (
                    f"{', '.join(str(n) for n in asked)} idle keep-alive "
                    f"connections held per server, {repeats} repeat(s), each on a freshly started server; plain "
                    "http only (the holder speaks cleartext HTTP/1.1)"
                ),
            )
        )
    if any(p in ("https", "h2") for p in settings.get("protocols", [])):
        library = settings.get("tls_library") or "openssl"
        items.append(
            (
                "TLS",
                "self-signed EC P-256 certificate (CN=localhost); the generator does not verify it "
                "and resumes no sessions, so every new connection is a full handshake; the "
                f"generator's TLS library: {library}",
            )
        )
    items += [
        (
            "Core isolation",
            f"servers on {_cpus(settings.get('server_cpus'))}, generator on "
            f"{_cpus(settings.get('generator_cpus'))} (sched_setaffinity, taskset semantics)",
        ),
        (
            "Worker threads",
            f"{settings.get('workers')} per server, passed as each runtime expects: "
            + "; ".join(
                _worker_passing(t, settings.get("workers"))
                for t in settings.get("targets", [])
                # the servers measured (a server that was not installed has no workers to pass)
                if t.get("name") in measured or not measured
            ),
        ),
        (
            "Generator threads",
            str(settings.get("generator_threads") or len(settings.get("generator_cpus") or [1])),
        ),
        ("Per-request timeout", f"{settings.get('timeout') or 0:g} s"),
        (
            "Cells",
            f"{len(rows)} ({status['ok']} measured, {status['fail']} FAIL, {status['skipped']} not run)"
            + (
                f" + {len(held)} hold cell(s) ({sum(1 for r in held if r.get('status') == 'ok')} ok)"
                if held
                else ""
            ),
        ),
        (
            "Sweep wall time",
            (
                f"{sum(r.get('wall_s') or 0 for r in list(rows) + list(held)) / 60:.1f} min of "
                "cells, server starts included"
            ),
        ),
    ]
    return table(["Setting", "Value"], [[k, v] for k, v in items])


def _worker_passing(target: dict, workers: int) -> str:
    kind, name = target.get("kind"), target.get("name")
    workers = target.get("workers") or workers  # a target's own count (e.g. a variant) wins
    if kind == "beast":
        return f"{name} --workers {workers}"
    if kind == "url":
        return f"{name} already running (not controlled)"
    via = [f"{target['workers_env']}={workers}"] if target.get("workers_env") else []
    if any("{workers}" in a for a in target.get("argv") or []):
        via.append("argv")
    return f"{name} " + (" + ".join(via) if via else f"LOADBENCH_WORKERS={workers}")


def _flatten_env(data: dict, prefix: str = "") -> list[tuple[str, str]]:
    out = []
    for key, value in data.items():
        label = f"{prefix}{key}"
        if isinstance(value, dict):
            out += _flatten_env(value, label + " ")
        elif isinstance(value, list):
            out.append((label, ", ".join(str(v) for v in value)))
        elif value is not None and value != "":
            out.append((label, str(value)))
    return out


def environment_table(environment: dict, rows: list[dict], settings: Optional[dict] = None) -> str:
    settings = settings or {}
    gate = environment.get("gate") if isinstance(environment.get("gate"), dict) else None
    try:
        env = {k: v for k, v in environment.items() if k != "gate"}
        env["loadavg_at_start"] = tuple(env.get("loadavg_at_start") or (0.0, 0.0, 0.0))
        items = list(Environment(**env).rows())
    except (TypeError, ValueError, ImportError):
        items = _flatten_env(environment)  # an environment.json from another loadbench version
    items += quiet_rows(gate, rows, settings)
    if settings.get("workers"):
        items.append(
            (
                "Workers per server",
                f"{settings['workers']} (the same for every server; see Settings)",
            )
        )
    steal = [r["steal_share"] for r in rows if r.get("steal_share") is not None]
    if steal:
        items.append(
            (
                "Machine steal during windows",
                f"median {100 * analysis.median(steal):.1f} %, max {100 * max(steal):.1f} % of CPU time",
            )
        )
    else:
        items.append(("Machine steal during windows", "not measured"))
    idle = [r["idle_share"] for r in rows if r.get("idle_share") is not None]
    if idle:
        items.append(
            (
                "Machine idle during windows",
                f"median {100 * analysis.median(idle):.1f} %, min {100 * min(idle):.1f} % "
                "of all CPU time (near 0 % on a 2-core run is expected: server + generator)",
            )
        )
    return table(["Item", "Value"], [[k, v] for k, v in items])


def _gate_text(gate: dict) -> str:
    if gate.get("skipped"):
        return "not waited for (--no-wait)"
    state = (
        f"proceeded after the {gate.get('timeout_s', 0):g} s timeout, machine NOT quiet"
        if gate.get("timed_out")
        else f"quiet after {gate.get('waited_s', 0):.0f} s"
    )
    load = gate.get("load1")
    outside = gate.get("outside_share")
    return (
        (f"{state} (1-min load {load:.2f}" if load is not None else f"{state} (")
        + (
            f", outside CPU {100 * outside:.0f} % over the last second"
            if outside is not None
            else ""
        )
        + f"; quiet = load below {gate.get('quiet_load', 0):g} or outside CPU below {100 * gate.get('quiet_outside', 0):g} %)"
    )


def quiet_rows(gate: Optional[dict], rows: list[dict], settings: dict) -> list[tuple[str, str]]:
    """The load gate before the sweep and before each cell, and the contended cells."""
    items = []
    if gate:
        items.append(("Load gate before the sweep", _gate_text(gate)))
    gates = [r["gate"] for r in rows if isinstance(r.get("gate"), dict)]
    if gates:
        late = sum(1 for g in gates if g.get("timed_out"))
        waited = sum(g.get("waited_s") or 0 for g in gates)
        skipped = all(g.get("skipped") for g in gates)
        vouched = sum(1 for g in gates if g.get("source") == "previous window")
        by_window = (
            f"; {vouched} of them went ahead without a probe because the window just before showed "
            f"other processes below {100 * gates[0].get('quiet_outside', 0):g} % of the machine"
            if vouched
            else ""
        )
        items.append(
            (
                "Load gate before each cell",
                "not waited for (--no-wait)"
                if skipped
                else f"waited {waited:.0f} s in all; {late} of {len(gates)} cell(s) proceeded after the timeout "
                f"on a busy machine{by_window}",
            )
        )
    elif not gate:
        items.append(("Load gate", "none (results from before the gate existed)"))
    outside = [r["outside_share"] for r in rows if r.get("outside_share") is not None]
    share = settings.get("contended_share") or analysis.CONTENDED_SHARE
    if outside:
        contended = sum(1 for r in rows if r.get("contended") and r["status"] == "ok")
        reran = sum(1 for r in rows if r.get("reruns"))
        reruns = sum(r.get("reruns") or 0 for r in rows)
        per_process = all(
            r.get("outside_source") == "processes"
            for r in rows
            if r.get("outside_share") is not None
        )
        how = (
            "CPU of every process other than the server tree and loadbench itself, read per process at each "
            "window's edges, plus the hypervisor's steal"
            if per_process
            else "machine busy time not used by the server tree or the generator - results from before loadbench "
            "read other processes' CPU per process; that busy time also holds kernel work no process is "
            "charged for, a few % on a busy loopback"
        )
        items.append(
            (
                "Outside CPU during windows",
                f"median {100 * analysis.median(outside):.1f} %, max {100 * max(outside):.1f} % of the machine "
                f"({how})",
            )
        )
        if "contended_reruns" in settings:
            rerun_text = (
                f"{reran} cell(s) re-run ({reruns} re-runs, up to {settings['contended_reruns']} each) "
                f"because other processes (or the hypervisor, as steal) took more than {100 * share:g} % of "
                "the machine; "
            )
        else:
            rerun_text = (
                f"none re-run (measured before loadbench re-ran contended cells); judged now at "
                f"{100 * share:g} % of the machine, without the irq/softirq correction those results "
                "lack (the benchmark's own loopback softirq, a few %, counts as outside): "
            )
        items.append(
            (
                "Contended cells",
                rerun_text + f"{contended} repeat(s) contended, marked ⚑ and left out "
                "of peaks and averages",
            )
        )
    return items


def known_limits(
    settings: dict, environment: dict, rows: list[dict], aggs: dict[tuple, Aggregate]
) -> list[str]:
    """What this run did not measure, most important first, as markdown bullets."""
    out = []
    if not any(r["mode"] == "open" for r in rows):
        out.append(
            "- **No open-loop latency.** Every latency here is closed-loop: when a server stalls, the "
            "generator stops sending and never measures the requests that would have waited "
            "(coordinated omission). Service-level latency needs an open-loop run at fixed fractions "
            "of each server's capacity."
        )
    cpus = sorted(
        set(settings.get("server_cpus") or []) | set(settings.get("generator_cpus") or [])
    )
    if len(cpus) < 4:
        out.append(
            f"- **Few cores.** Servers and generator shared {len(cpus)} CPU(s) "
            f"(servers {_cpus(settings.get('server_cpus'))}, generator {_cpus(settings.get('generator_cpus'))}); "
            "multi-worker scaling was not measured, and one generator core caps every req/s figure."
        )
    widened = [r for r in rows if r.get("generator_widened_cpus")]
    if widened:
        out.append(
            f"- **Generator headroom.** {len(widened)} repeat(s) saturated the generator's own core(s) "
            "and were measured again with a generator thread on every spare CPU "
            f"({_cpus(widened[0]['generator_widened_cpus'])}); the first attempts are kept in the raw data."
        )
    bound = sorted(
        {
            _cell_name(a)
            for a in aggs.values()
            if a.bounded_by_generator and not a.pool_bound and a.status == "ok"
        }
    )
    pooled = sorted({_cell_name(a) for a in aggs.values() if a.pool_bound and a.status == "ok"})
    if pooled:
        out.append(
            f"- **Pool-bound open-loop cells ({len(pooled)}, marked ¶):** {', '.join(pooled)}. "
            "Their sends waited for a free connection while the server had CPU to spare: the "
            "corrected latency is the pool's queue, not the server's (a larger --max-connections "
            "would have sent them on time); not ranked for latency."
        )
    if bound:
        out.append(
            f"- **Generator-bound cells ({len(bound)}, marked §):** {', '.join(bound)}. Their req/s is "
            "loadbench's ceiling on this machine, so the server's own is only known to be at least that "
            '("≥") and at most its CPU ceiling (cores / CPU per response): their peaks and ranks are '
            "that interval, and a faster generator (more generator cores) is needed to measure the "
            "servers' real limits. Their latency percentiles are not ranked; their CPU us/req and peak "
            "memory are the server's own and stay ranked. (A cell whose server kept 90 % of its cores "
            "busy is the server's figure even when the generator was saturated too.)"
        )
    starved = sorted(f"{_cell_name(a)} ({a.starved_cause})" for a in aggs.values() if a.starved)
    if starved:
        out.append(
            f"- **Under-driven cells ({len(starved)}, marked ‡):** {', '.join(starved)}. The server saw "
            "fewer requests in flight than the column's C; their latency is not the C-connection number."
        )
    out += reconnect_notes(aggs.values()) + growth_notes(rss_growth(rows))
    skipped: dict = {}
    for r in rows:
        if r["status"] == "skipped":
            entry = skipped.setdefault((r["target"], r.get("error") or ""), ({}, {}))
            entry[0][r["protocol"]] = None
            entry[1][r["workload"]] = None
    all_workloads = {r["workload"] for r in rows}
    for (target, why), (not_served, workloads) in skipped.items():
        what = "all workloads" if set(workloads) == all_workloads else ", ".join(workloads)
        names = list(not_served)
        over = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
        out.append(f"- **{target}, {what}, over {over}: not measured** ({why}).")
    contended = sorted({_cell_name(a) for a in aggs.values() if a.contended and a.status == "ok"})
    if contended:
        ok = sum(1 for a in aggs.values() if a.status == "ok")
        which = (
            ", ".join(contended)
            if len(contended) <= 12
            else f"{len(contended)} of the {ok} measured cells"
        )
        stolen = sorted(
            {
                _cell_name(a)
                for a in aggs.values()
                if a.contended
                and a.status == "ok"
                and a.steal_share is not None
                and a.outside_share is not None
                and a.steal_share >= a.outside_share / 2
            }
        )
        by_steal = (
            f" In {len(stolen)} of them the hypervisor's steal was most of it: this virtual machine did "
            "not get the CPU it asked for (other guests, or its own CPU quota)."
            if stolen
            else ""
        )
        out.append(
            f"- **Contended cells ({len(contended)}, marked ⚑):** {which}. Other processes "
            "or the hypervisor took the machine's CPUs during their windows; their numbers understate the "
            f"server and are not ranked.{by_steal} Re-measure on a quiet machine."
        )
    dirty = sorted({_cell_name(a) for a in aggs.values() if a.dirty and a.status == "ok"})
    if dirty:
        out.append(
            f"- **Cells with non-2xx answers or errors ({len(dirty)}, marked ✗):** {', '.join(dirty)}. "
            "Their req/s counts error answers; they are not ranked."
        )
    failed = sorted(
        {
            (r["target"], r["protocol"], r["workload"], r["load"] or 0, r["mode"])
            for r in rows
            if r["status"] == "fail"
        }
    )
    if failed:
        first = next(r for r in rows if r["status"] == "fail")
        out.append(
            f"- **{len(failed)} cell(s) FAIL** (server died or never became ready), e.g. "
            f"{first['target']} {first['protocol']} {first['workload']} c={first['load']}: {first['error']}"
        )
    spreads = [
        (a.rps.relative_range, a) for a in aggs.values() if a.rps is not None and a.rps.n > 1
    ]
    if spreads:
        spreads.sort(key=lambda pair: pair[0])
        median = analysis.median([pair[0] for pair in spreads])
        worst, cell = spreads[-1]
        out.append(
            f"- **Repeat spread.** req/s of the repeats of one cell spread over a median of "
            f"{100 * median:.0f} % of their median (max - min); the widest was {_cell_name(cell)} "
            f"at {100 * worst:.0f} %. Differences between servers "
            "smaller than the spread are not established by this run."
        )
    if (settings.get("repeats") or 1) < 3:
        out.append(
            f"- **{settings.get('repeats')} repeat(s) per cell:** too few for a spread; differences under "
            "~10 % between servers are not established by this run."
        )
    h2 = any(
        r.get("protocol") in protocols.names(family="HTTP/2") and r.get("status") == "ok"
        for r in rows
    )
    h3 = any(r.get("protocol") == "h3" and r.get("status") == "ok" for r in rows)

    def streams_of(family: str) -> str:
        which = protocols.names(family=family)
        return ", ".join(
            str(s)
            for s in sorted({r.get("streams") or 1 for r in rows if r.get("protocol") in which})
        )

    if h3:
        measured = (f"HTTP/2 at {streams_of('HTTP/2')} and " if h2 else "") + (
            f"HTTP/3 at {streams_of('HTTP/3')}"
        )
        out.append(
            f"- **{measured} streams per connection only, loopback only.** No other stream counts "
            "or flow-control windows, no real network (no latency, loss, NIC offload or UDP "
            "segmentation offload), no slow clients, no large responses, no long (soak) runs."
        )
    elif h2:
        out.append(
            f"- **HTTP/2 at {streams_of('HTTP/2')} streams per connection only, loopback "
            "only.** No HTTP/3, no other stream counts or flow-control windows, no real network (no latency, "
            "loss or NIC offload), no slow clients, no large responses, no long (soak) runs."
        )
    else:
        out.append(
            "- **HTTP/1.1 only, loopback only.** No HTTP/2 or HTTP/3, no real network (no latency, "
            "loss or NIC offload), no slow clients, no large responses, no long (soak) runs."
        )
    out.append(
        "- **One machine, one time.** A shared VM's steal time and frequency scaling move the "
        "numbers between runs; the Environment block gives the steal measured in the windows."
    )
    return out


def _cell_name(a: Aggregate) -> str:
    load = {
        "closed": f"c={a.load}",
        "connect": f"new-conn c={a.load}",
        "open": f"open loop {a.load} %",
    }.get(a.mode, str(a.load))
    return f"{a.target} {a.protocol} {a.workload} {load}"
