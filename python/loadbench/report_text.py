"""The prose blocks of report.md: how it was generated, settings, environment, known limits.

Each sentence is derived from what the results folder holds, so the report never claims a
setting the run did not use or hides a measurement it did not make.
"""
from __future__ import annotations

from typing import Optional

from . import analysis
from .results import Aggregate


def _cpus(cpus: Optional[list]) -> str:
    if not cpus:
        return "unpinned"
    return ("CPU " if len(cpus) == 1 else "CPUs ") + ", ".join(str(c) for c in cpus)


def _workload_line(w: dict, default_cs: list) -> str:
    body = w.get("body")
    size = body.get("bytes") if isinstance(body, dict) else (len(body) if body else 0)
    what = (f"{len(w['requests'])} requests round-robin" if w.get("requests")
            else f"{w.get('method', 'GET')} {w.get('path', '/')}" + (f" with a {size}-byte body" if size else ""))
    cs = w.get("concurrencies") or default_cs
    return f"{w['name']}: {what} (C = {', '.join(str(c) for c in cs)})"


def intro(generated: str, settings: dict, environment: dict, rows: list[dict]) -> list[str]:
    version = environment.get("loadbench") or environment.get("loadbench_version") or ""
    started = sorted(r["started"] for r in rows if r.get("started"))
    measured = f", measured by `loadbench sweep` from {started[0]} to {started[-1]}" if started else ""
    lines = [
        f"Generated {generated} by `loadbench report` from the raw results in this folder "
        f"(`results.jsonl`, one line per cell and repeat; `sweep.json` the settings; "
        f"`environment.json` the machine){measured}{' with loadbench ' + str(version) if version else ''}. "
        "Do not edit by hand: `loadbench report DIR` rewrites it from those files.",
        "",
        "Servers measured:",
        "",
    ]
    seen = {r["target"] for r in rows}
    for t in settings.get("targets", []):
        if t.get("name") in seen:
            how = t.get("description") or (" ".join(t.get("argv") or []) if t.get("kind") == "command" else t.get("kind"))
            lines.append(f"- **{t['name']}**: {how}")
    lines += [
        "",
        "Read the throughput columns, not the latency columns, at high concurrency. These are "
        "closed-loop measurements: the generator holds C connections open and sends the next request "
        "the instant one returns. The effective in-flight count is req/s x mean latency (Little's "
        f"law); when it falls below {analysis.STARVED_FRACTION:g} x C the extra connections queue "
        f"outside the server, req/s is still its saturation throughput but the percentiles describe "
        f"only the requests truly in flight: those cells are marked ‡ and never bold for latency.",
        "",
        "The CPU us/req row is the one to compare across servers. It is server CPU time (utime+stime "
        "of every thread of the server's process tree, read from /proc around exactly the measured "
        "window) divided by the exact number of responses in that window, so unlike req/s it does not "
        "move when the generator pushes harder or softer. It rises with the worker count and with an "
        "unpinned generator; the Settings and Environment blocks state both.",
        "",
    ]
    return lines


def settings_table(settings: dict, rows: list[dict], aggs: dict) -> str:
    from .report import table

    repeats, duration, warmup = settings.get("repeats"), settings.get("duration"), settings.get("warmup")
    cs = settings.get("concurrencies") or []
    status = {s: sum(1 for r in rows if r["status"] == s) for s in ("ok", "fail", "skipped")}
    items = [
        ("Throughput/latency", f"median of {repeats} x {duration:g} s closed-loop runs, keep-alive, "
                               f"after a {warmup:g} s warm-up excluded from every figure"),
        ("Concurrencies", ", ".join(str(c) for c in cs)),
        ("Workloads", "; ".join(_workload_line(w, cs) for w in settings.get("workloads", []))),
        ("Protocols", ", ".join(settings.get("protocols", []))),
    ]
    if settings.get("open_fractions"):
        items.append(("Open loop", "constant rate at " + ", ".join(f"{round(100 * f)} %" for f in settings["open_fractions"])
                      + f" of each server's best closed-loop req/s ({settings.get('open_loop_workload')}), "
                      f"{repeats} x {duration:g} s; latency corrected for coordinated omission"))
    if settings.get("connection_setup"):
        items.append(("Connection-setup rate", f"a new connection per request (no keep-alive) at "
                      f"c = {settings.get('connection_setup_concurrency')}, {settings.get('connection_setup_workload')}, "
                      f"{repeats} x {duration:g} s"))
    if "https" in settings.get("protocols", []):
        items.append(("TLS", "self-signed EC P-256 certificate (CN=localhost); the generator does not verify it "
                             "and resumes no sessions, so every new connection is a full handshake"))
    items += [
        ("Core isolation", f"servers on {_cpus(settings.get('server_cpus'))}, generator on "
                           f"{_cpus(settings.get('generator_cpus'))} (sched_setaffinity, taskset semantics)"),
        ("Worker threads", f"{settings.get('workers')} per server, passed as each runtime expects: "
                           + "; ".join(_worker_passing(t, settings.get("workers")) for t in settings.get("targets", []))),
        ("Generator threads", str(settings.get("generator_threads") or len(settings.get("generator_cpus") or [1]))),
        ("Per-request timeout", f"{settings.get('timeout'):g} s"),
        ("Cells", f"{len(rows)} ({status['ok']} measured, {status['fail']} FAIL, {status['skipped']} not run)"),
        ("Sweep wall time", f"{sum(r.get('wall_s') or 0 for r in rows) / 60:.1f} min of cells, server starts included"),
    ]
    return table(["Setting", "Value"], [[k, v] for k, v in items])


def _worker_passing(target: dict, workers: int) -> str:
    kind, name = target.get("kind"), target.get("name")
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
    from .report import table

    settings = settings or {}
    try:
        from .environment import Environment

        env = dict(environment)
        env["loadavg_at_start"] = tuple(env.get("loadavg_at_start") or (0.0, 0.0, 0.0))
        items = list(Environment(**env).rows())
    except (TypeError, ValueError, ImportError):
        items = _flatten_env(environment)  # an environment.json from another loadbench version
    if settings.get("workers"):
        items.append(("Workers per server", f"{settings['workers']} (the same for every server; see Settings)"))
    steal = [r["steal_share"] for r in rows if r.get("steal_share") is not None]
    if steal:
        items.append(("Machine steal during windows",
                      f"median {100 * analysis.median_spread(steal).median:.1f} %, max {100 * max(steal):.1f} % of CPU time"))
    else:
        items.append(("Machine steal during windows", "not measured"))
    idle = [r["idle_share"] for r in rows if r.get("idle_share") is not None]
    if idle:
        items.append(("Machine idle during windows",
                      f"median {100 * analysis.median_spread(idle).median:.1f} %, min {100 * min(idle):.1f} % "
                      "of all CPU time (near 0 % on a 2-core run is expected: server + generator)"))
    return table(["Item", "Value"], [[k, v] for k, v in items])


def known_limits(settings: dict, environment: dict, rows: list[dict], aggs: dict[tuple, Aggregate]) -> list[str]:
    """What this run did not measure, most important first, as markdown bullets."""
    out = []
    if not any(r["mode"] == "open" for r in rows):
        out.append("- **No open-loop latency.** Every latency here is closed-loop: when a server stalls, the "
                   "generator stops sending and never measures the requests that would have waited "
                   "(coordinated omission). Service-level latency needs an open-loop run at fixed fractions "
                   "of each server's capacity.")
    cpus = sorted(set(settings.get("server_cpus") or []) | set(settings.get("generator_cpus") or []))
    if len(cpus) < 4:
        out.append(f"- **Few cores.** Servers and generator shared {len(cpus)} CPU(s) "
                   f"(servers {_cpus(settings.get('server_cpus'))}, generator {_cpus(settings.get('generator_cpus'))}); "
                   "multi-worker scaling was not measured, and one generator core caps every req/s figure.")
    bound = sorted({_cell_name(a) for a in aggs.values() if a.generator_bound})
    if bound:
        out.append(f"- **Generator-bound cells ({len(bound)}, marked §):** {', '.join(bound)}. Their req/s is "
                   "loadbench's ceiling on this machine, not the server's.")
    starved = sorted(_cell_name(a) for a in aggs.values() if a.starved)
    if starved:
        out.append(f"- **Starved cells ({len(starved)}, marked ‡):** {', '.join(starved)}. Their latency "
                   "percentiles are not service-level numbers.")
    skipped: dict = {}
    for r in rows:
        if r["status"] == "skipped":
            entry = skipped.setdefault((r["target"], r.get("error") or ""), ({}, {}))
            entry[0][r["protocol"]] = None
            entry[1][r["workload"]] = None
    all_workloads = {r["workload"] for r in rows}
    for (target, why), (protocols, workloads) in skipped.items():
        what = "all workloads" if set(workloads) == all_workloads else ", ".join(workloads)
        out.append(f"- **{target}, {what}, over {' and '.join(protocols)}: not measured** ({why}).")
    busy = _contended(rows)
    if busy:
        out.append(busy)
    failed = sorted({(r["target"], r["protocol"], r["workload"], r["connections"], r["mode"]) for r in rows if r["status"] == "fail"})
    if failed:
        first = next(r for r in rows if r["status"] == "fail")
        out.append(f"- **{len(failed)} cell(s) FAIL** (server died or never became ready), e.g. "
                   f"{first['target']} {first['protocol']} {first['workload']} c={first['connections']}: {first['error']}")
    spreads = [(a.rps.relative_range, a) for a in aggs.values() if a.rps is not None and a.rps.n > 1]
    if spreads:
        spreads.sort(key=lambda pair: pair[0])
        median = spreads[len(spreads) // 2][0]
        worst, cell = spreads[-1]
        out.append(f"- **Repeat spread.** req/s of the repeats of one cell spread over a median of "
                   f"{100 * median:.0f} % of their median (max - min); the widest was {_cell_name(cell)} "
                   f"at {100 * worst:.0f} %. Differences between servers "
                   "smaller than the spread are not established by this run.")
    if (settings.get("repeats") or 1) < 3:
        out.append(f"- **{settings.get('repeats')} repeat(s) per cell:** too few for a spread; differences under "
                   "~10 % between servers are not established by this run.")
    out.append("- **HTTP/1.1 only, loopback only.** No HTTP/2 or HTTP/3, no real network (no latency, "
               "loss or NIC offload), no slow clients, no large responses, no long (soak) runs.")
    out.append("- **One machine, one time.** A shared VM's steal time and frequency scaling move the "
               "numbers between runs; the Environment block gives the steal measured in the windows.")
    return out


def _cell_name(a: Aggregate) -> str:
    load = {"closed": f"c={a.connections}", "connect": f"new-conn c={a.connections}",
            "open": f"open loop {a.connections} %"}.get(a.mode, str(a.connections))
    return f"{a.target} {a.protocol} {a.workload} {load}"


def _contended(rows: list[dict]) -> str:
    """A note when neither the server nor the generator used its CPU fully: something else did."""
    shares = [(r["server_cpu_share"], r["generator_utilisation"]) for r in rows
              if r["status"] == "ok" and r["mode"] == "closed" and r["connections"] and r["connections"] > 1
              and r.get("server_cpu_share") is not None and r.get("generator_utilisation") is not None]
    if not shares:
        return ""
    server = analysis.median_spread([s for s, _ in shares]).median
    generator = analysis.median_spread([g for _, g in shares]).median
    if server >= 0.6 or generator >= 0.6:
        return ""
    return (f"- **CPU contention from outside the benchmark.** In the median closed-loop cell above C = 1 the "
            f"server used {100 * server:.0f} % of a core and the generator {100 * generator:.0f} % of its "
            "threads' time, yet neither was waiting on the other: other processes on this machine took "
            "the pinned CPUs. Absolute req/s and latency understate every server; CPU us/req (per response, "
            "not per second) is the figure least affected.")
