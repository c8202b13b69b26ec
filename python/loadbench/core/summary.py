"""The human-readable summary of a Result (CLI output and notebook display).

It reads a Result's attributes only, so result.py can offer it as Result.summary_lines()
without this module importing that one."""

from __future__ import annotations

import os
from typing import Any, Optional

from . import analysis
from .phases import CONNECTION_PHASES, LABELS, RESPONSE_PHASES
from .schedule import connections_schedule_of, schedule_of
from .schedule_audit import audit_sentence
from .tcp_exchange import tcp_exchange_text, uses_lean_exchange


def format_us(us: float) -> str:
    if us >= 1_000_000:
        return f"{us / 1_000_000:.2f} s"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.0f} us"


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def phase_lines(r: Any) -> list[str]:
    """Where the responses' time went (write, first byte, transfer: always, when measured) and,
    when connections were opened in the window, their set-up (connect, TLS or QUIC handshake)."""

    def cell(name: str, with_count: bool) -> str:
        h = r.phases[name]
        count = f" ({h.count:,})" if with_count else ""
        return (
            f"{LABELS[name]} p50 {format_us(h.percentile(50))} "
            f"p99 {format_us(h.percentile(99))}{count}"
        )

    lines = []
    per_response = [cell(n, False) for n in RESPONSE_PHASES if n in r.phases]
    if per_response:
        lines.append("  phases        " + " | ".join(per_response))
    setup = [cell(n, True) for n in CONNECTION_PHASES if n in r.phases]
    if setup:
        lines.append("  set-up        " + " | ".join(setup))
    return lines


def summary_lines(r: Any) -> list[str]:
    """The lines `loadbench run` prints for a loadbench.Result ``r``."""
    cfg = r.config
    lat = r.latency
    mode = (
        f"{cfg.get('requests'):,} requests"
        if cfg.get("requests")
        else f"{cfg.get('duration_s', r.duration_s):g} s"
    )
    shaped = bool(schedule_of(cfg))
    if shaped:
        mode += (
            f", open loop along a rate schedule ({len(r.stages)} stage"
            f"{'s' if len(r.stages) != 1 else ''}, mean {r.target_rate:,.1f}/s)"
        )
    elif r.open_loop:
        mode += f", open loop at {r.target_rate:g}/s"
    elif connections_schedule_of(cfg):
        mode += (
            f", closed loop along a connections schedule ({len(r.stages)} stage"
            f"{'s' if len(r.stages) != 1 else ''})"
        )
    over = cfg.get("unix_socket")
    head = (
        f"{r.url}{f' via unix:{over}' if over and not r.url.startswith('unix:') else ''}: "
        f"{cfg.get('connections', '?')} connections, {r.threads} thread{'s' if r.threads != 1 else ''}, "
        f"{mode}{', no keep-alive' if cfg.get('keepalive') is False else ''}"
        f"{', warm-up %g s' % cfg['warmup_s'] if cfg.get('warmup_s') else ''}"
        f"{'  [INTERRUPTED]' if r.interrupted else ''}"
    )
    lines = [head]
    if cfg.get("protocol") == "h2":
        tls = r.url.lower().startswith("https:")
        lines.append(
            f"  protocol      HTTP/2 ({'h2, negotiated with ALPN' if tls else 'h2c, prior knowledge'}), "
            f"{cfg.get('streams', 1)} stream{'s' if cfg.get('streams', 1) != 1 else ''} per connection"
        )
    if cfg.get("protocol") == "h3":
        lines.append(
            f"  protocol      HTTP/3 (QUIC, ALPN h3), "
            f"{cfg.get('streams', 1)} stream{'s' if cfg.get('streams', 1) != 1 else ''} per connection"
        )
    if (cfg.get("pipeline") or 1) > 1:
        lines.append(
            f"  protocol      HTTP/1.1 pipelined, up to {cfg['pipeline']} requests in flight per connection"
        )
    lines.append(
        f"  requests/s    {r.rps:,.2f}  ({r.responses:,} responses in {r.duration_s:.3f} s)"
    )
    if r.unfinished:
        lines.append(
            f"  unfinished    {r.unfinished:,} requests of the window had no answer when the drain ended"
            + (" (in the corrected latency with the time they had waited)" if r.open_loop else "")
        )
    if lat.count and r.open_loop and r.latency_uncorrected is not None:
        unc = r.latency_uncorrected
        lines.append(
            f"  rate          target {'mean ' if shaped else ''}{r.target_rate:,.1f}/s "
            f"({cfg.get('arrival', 'constant')}), achieved "
            f"{r.achieved_rate:,.1f}/s; {r.due:,} due, {r.late_sends:,} of {r.sends:,} sends late (> 1 ms), "
            f"lateness p99 {format_us(r.lateness.percentile(99)) if r.lateness else 'n/a'}"
        )
        if r.loop_lateness is not None:
            pool = r.pool
            lines.append(
                f"  sends         the loop released them {format_us(r.loop_lateness.percentile(99))} "
                f"late (p99); {r.slot_waits:,} waited for a free connection; pool "
                f"{pool.get('start', '?')} -> {pool.get('size', '?')} connections (at most "
                f"{pool.get('cap', '?')})"
                + (
                    f"; {r.wakeups / r.responses:.2f} loop wake-ups per response"
                    if r.wakeups and r.responses
                    else ""
                )
            )
            audit = r.schedule_audit
            if audit:
                lines.append(f"  schedule      {audit_sentence(audit)}")
            if r.warmup_dropped:
                lines.append(
                    f"  warm-up       {r.warmup_dropped:,} of its requests were still waiting for a "
                    "connection when the window opened: dropped unsent (the server was behind in "
                    "the warm-up)"
                )
        lines.append(
            "  latency       " + " ".join(f"{h:>10}" for h in ("p50", "p90", "p99", "p99.9", "max"))
        )
        for label, h in (("corrected", lat), ("service", unc)):
            cells = [format_us(h.percentile(q)) for q in (50, 90, 99, 99.9)] + [format_us(h.max)]
            lines.append(f"    {label:<11} " + " ".join(f"{c:>10}" for c in cells))
        lines.append(
            "                (corrected: from the intended send time; service: from the actual send)"
        )
        if r.stages:
            lines.extend(stage_lines(r.stages))
    elif lat.count:
        pct = "  ".join(f"p{q:g} {format_us(lat.percentile(q))}" for q in (50, 90, 99, 99.9))
        lines.append(f"  latency       {pct}  max {format_us(lat.max)}")
        lines.append(
            f"                mean {format_us(lat.mean)}  stdev {format_us(lat.stdev)}  min {format_us(lat.min)}"
        )
        if r.stages:
            lines.extend(connection_stage_lines(r.stages))
    else:
        lines.append("  latency       no responses")
    lines.extend(phase_lines(r))
    codes = ", ".join(f"{code}: {n:,}" for code, n in sorted(r.status_codes.items())) or "none"
    errors = sum(int(n) for n in r.errors.values())
    share = analysis.bad_share(analysis.non_2xx(r.status_codes), errors, r.responses)
    if share:  # the report's non-2xx + errors figure; above 1 % a sweep never ranks the cell
        codes += f"  (non-2xx + errors: {100 * share:.2f} % of outcomes" + (
            ", above the 1 % a report ranks)" if share > analysis.DIRTY_SHARE else ")"
        )
    lines.append(f"  status codes  {codes}")
    errs = ", ".join(f"{kind} {n:,}" for kind, n in r.errors.items() if n)
    if errs:
        lines.append(f"  errors        {errs}")
        if r.first_error:
            lines.append(f"                first: {r.first_error}")
    else:
        lines.append("  errors        none")
    conn = f"{r.connections_opened:,} opened ({r.connections_per_s:,.1f}/s)"
    if r.tls_handshakes:
        conn += f", TLS handshakes {r.tls_handshakes:,} ({r.tls_handshakes_per_s:,.1f}/s)"
        if r.config.get("tls_session_resumption"):
            conn += f", {r.tls_resumed:,} resumed"
        if r.config.get("quic_early_data"):
            conn += (
                f", 0-RTT on {r.quic_zero_rtt_attempted:,} (accepted {r.quic_zero_rtt_accepted:,},"
                f" rejected and re-sent {r.quic_zero_rtt_rejected:,})"
            )
    if r.reconnects:
        conn += f", {r.reconnects:,} reopened after the server closed"
    if uses_lean_exchange(r.config):
        conn += "; " + tcp_exchange_text(r.config)
    lines.append(f"  connections   {conn}")
    if r.config.get("protocol") == "h3" and r.udp:
        lines.extend(_quic_lines(r))
    if r.goaways or r.retried or r.streams_reset:
        resets = ", ".join(f"{name} {n:,}" for name, n in sorted(r.streams_reset.items())) or "none"
        lines.append(
            f"  http/2        GOAWAY {r.goaways:,}, refused and re-sent {r.retried:,}, RST_STREAM {resets}"
        )
    lines.append(
        f"  transfer      read {format_bytes(r.bytes_read)}, written {format_bytes(r.bytes_written)}"
    )
    per_req = f"{r.cpu_us_per_req:.2f} us/response" if r.cpu_us_per_req is not None else "n/a"
    work = (
        f"; busy-poll: {(r.work_share or 0) * 100:.0f} % of it working"
        + (f" ({r.work_us_per_req:.2f} us/response)" if r.work_us_per_req is not None else "")
        + ", the rest polling"
        if r.busy_polled
        else ""
    )
    lines.append(
        f"  generator     CPU {r.cpu_s:.3f} s = {per_req}, {r.cpu_utilisation * 100:.0f} % of "
        f"{r.threads} thread{'s' if r.threads != 1 else ''}{work}"
        f"{'  SATURATED: the generator may be the bottleneck' if r.saturated else ''}"
    )
    if r.open_loop and cfg.get("loop"):
        lines.append(f"  loop          {cfg['loop']}")
    if cfg.get("loop_warning"):
        lines.append(f"  warning       {cfg['loop_warning']}")
    server = r.extras.get("server")
    if server:
        lines.extend(server_lines(server))
    profile = r.extras.get("profile")
    if profile:
        lines.extend(profile_lines(profile))
    lines.append(
        f"  in flight     {r.in_flight:.1f} (Little's law: req/s x mean latency; "
        f"{cfg.get('connections', '?')} connections)"
    )
    limit = r.extras.get("limit")
    if limit:
        lines.append(f"  limited by    {limit['by']}: {limit['reason']}")
    return lines


def stage_lines(stages: list[dict]) -> list[str]:
    """A load shape's stages, one row each: the schedule's rate and its mean (target) beside the
    rates the stage's requests (those due in it) were sent and answered at, their corrected
    latency and errors."""
    unfinished = any(st["unfinished"] for st in stages)
    heads = ("time", "schedule/s", "target/s", "sent/s", "answered/s", "p50", "p99", "errors")
    heads += ("unfinished",) if unfinished else ()
    widths = (13, 15, 10, 10, 11, 10, 10, 8, 11)

    def rate(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x:,.1f}"

    lines = ["  stages      " + " ".join(f"{h:>{w}}" for h, w in zip(heads, widths))]
    for st in stages:
        r0, r1 = st["rate_from"], st["rate_to"]
        shape = f"{r0:,.0f}" if r0 == r1 else f"{r0:,.0f}->{r1:,.0f}"
        answered = st["responses"] > 0
        cells = (
            f"{st['t_s']:g}-{st['until_s']:g} s",
            shape,
            rate(st["target_rps"]),
            rate(st["achieved_rps"]),
            rate(st["answered_rps"]),
            format_us(st["latency_us"]["p50"]) if answered else "-",
            format_us(st["latency_us"]["p99"]) if answered else "-",
            f"{st['errors']:,}",
        ) + ((f"{st['unfinished']:,}",) if unfinished else ())
        lines.append("              " + " ".join(f"{c:>{w}}" for c, w in zip(cells, widths)))
    lines.append("                (each stage's own requests, those due in it; latency corrected)")
    return lines


def connection_stage_lines(stages: list[dict]) -> list[str]:
    """The closed loop's stages along a connections schedule: active connections (the
    schedule, its mean) beside the req/s, latency and errors of the requests started in each."""
    heads = ("time", "connections", "mean", "req/s", "p50", "p99", "errors")
    widths = (13, 13, 8, 11, 10, 10, 8)
    lines = ["  stages      " + " ".join(f"{h:>{w}}" for h, w in zip(heads, widths))]
    for st in stages:
        n0, n1 = st["connections_from"], st["connections_to"]
        answered = st["responses"] > 0
        cells = (
            f"{st['t_s']:g}-{st['until_s']:g} s",
            f"{n0}" if n0 == n1 else f"{n0}->{n1}",
            "n/a" if st["connections"] is None else f"{st['connections']:.1f}",
            "n/a" if st["rps"] is None else f"{st['rps']:,.1f}",
            format_us(st["latency_us"]["p50"]) if answered else "-",
            format_us(st["latency_us"]["p99"]) if answered else "-",
            f"{st['errors']:,}",
        )
        lines.append("              " + " ".join(f"{c:>{w}}" for c, w in zip(cells, widths)))
    lines.append("                (each stage's own requests, those started in it)")
    return lines


def profile_lines(profile: dict, shown: int = 5) -> list[str]:
    """The `profile` block (core/profile.py): its top functions by self share, where its files
    are, what lacks symbols - or why there is none."""
    if profile.get("error"):
        return [f"  profile       none: {profile['error']}"]
    lines = [
        f"  profile       {profile['samples']:,} samples at {profile['frequency_hz']} Hz "
        f"({profile.get('event') or 'no event'}, call graph {profile['call_graph']}); "
        "a profiled window is slower: its req/s is not the server's"
    ]
    for t in profile.get("top", [])[:shown]:
        us = t.get("self_us_per_req")
        lines.append(
            f"                {100 * t['self_share']:5.1f} % self {100 * t['inclusive_share']:5.1f} % incl"
            f"{f'  {us:.3f} us/req' if us is not None else ''}  {t['function']} ({t['module']})"
        )
    if profile.get("hint"):
        modules = ", ".join(profile.get("unknown_modules") or [])
        lines.append(
            f"                {100 * profile['unknown_share']:.1f} % of samples have no symbol"
            f"{f' (in {modules})' if modules else ''}: {profile['hint']}"
        )
    if profile.get("event_note"):
        lines.append(f"                {profile['event_note']}")
    lines.append(f"                flame graph {profile['svg']}, folded stacks {profile['folded']}")
    return lines


def kernel_text(server: dict) -> str:
    """'1.00 context switches/response (1,999 voluntary, 1 involuntary); 7.00 syscalls/response
    (14,000 in the window)', with "syscalls n/a - <reason>" where the kernel refused to count them
    (last: the reason can be long)."""
    if server.get("syscalls_per_req") is not None:
        calls = f"{server['syscalls_per_req']:.2f} syscalls/response ({server['syscalls']:,} in the window)"
    elif server.get("syscalls_na"):
        calls = f"syscalls n/a - {server['syscalls_na']}"
    else:
        calls = "syscalls n/a (no responses)"
    ctx = server.get("ctx_switches_per_req")
    switches = (
        f"{ctx:.2f} context switches/response ({server['ctx_switches_voluntary']:,} voluntary, "
        f"{server['ctx_switches_involuntary']:,} involuntary)"
        if ctx is not None
        else "context switches/response n/a (no responses)"
    )
    return f"{switches}; {calls}"


def server_lines(server: dict) -> list[str]:
    """The sampled server (`server` block): CPU per response, memory, fds, machine noise."""
    per_req = (
        f"{server['cpu_us_per_req']:.2f} us/response"
        if server.get("cpu_us_per_req") is not None
        else "n/a"
    )
    pids = server.get("pids") or [server.get("pid")]
    who = f"pid {server.get('pid')}" + (f" + {len(pids) - 1} descendants" if len(pids) > 1 else "")
    source = f", {server['cpu_source']}" if server.get("cpu_source") else ""
    if (
        server.get("rss_max_kib") is not None
    ):  # the window's own peak, sampled; PSS counts shared pages once
        memory = f"peak RSS {format_bytes(server['rss_max_kib'] * 1024)} (sampled in the window)"
        if server.get("pss_kib") is not None:
            memory += f", PSS {format_bytes(server['pss_kib'] * 1024)}"
    else:
        memory = f"peak RSS {format_bytes(server['rss_peak_kib'] * 1024)}"
    lines = [
        f"  server        CPU {server['cpu_s']:.3f} s = {per_req} ({who}{source})"
        f"{'  EXITED during the run' if server.get('exited') else ''}",
        f"                {memory}, fds {server['fds_start']}"
        f" -> {server['fds_end']}, {server['threads']} threads, {server['ctx_switches']:,} context switches",
    ]
    if "syscalls_per_req" in server or "syscalls_na" in server:
        lines.append(f"                {kernel_text(server)}")
    allocations = server.get("allocations")
    if allocations:
        if allocations.get("na"):
            lines.append(f"  allocations   n/a - {allocations['na']}")
        else:
            per = allocations.get("calls_per_req")
            nbytes = allocations.get("bytes_per_req")
            lines.append(
                f"  allocations   {allocations['calls']:,} malloc calls, {allocations['frees']:,} frees,"
                f" {format_bytes(allocations['bytes'])}"
                + (
                    f" = {per:.4g} allocs/response, {nbytes:,.0f} bytes/response"
                    if per is not None and nbytes is not None
                    else ""
                )
                + " (libc malloc)"
            )
    machine = server.get("machine") or {}
    if machine.get("idle_share") is not None:
        lines.append(
            f"  machine       idle {machine['idle_share'] * 100:.1f} %, steal {machine['steal_share'] * 100:.1f} %"
            " of all CPU time in the window"
        )
    outside = analysis.outside_share(server, os.cpu_count())
    if server.get("others_cpu_s") is not None and outside is not None:
        top = ", ".join(
            [
                f"{o['command']} {o['cpu_s']:.2f} s"
                for o in server.get("others_top") or []
                if o.get("cpu_s")
            ]
            + (
                [f"steal {server['steal_s']:.2f} s"]
                if (server.get("steal_s") or 0) >= 0.005
                else []
            )
        )
        lines.append(
            f"  others        {outside * 100:.1f} % of the machine taken by other processes and steal"
            + (f" ({top})" if top else "")
            + (
                "  CONTENDED: a sweep would re-run this window"
                if outside > analysis.CONTENDED_SHARE
                else ""
            )
        )
    return lines


def saturation_warning(r) -> Optional[str]:
    """One line for stderr when the generator's own threads were busy for nearly the whole
    window: then the req/s above may be loadbench's limit rather than the server's."""
    if not r.saturated:
        return None
    threads = f"{r.threads} thread{'s' if r.threads != 1 else ''}"
    load = r.work_share if r.busy_polled else r.cpu_utilisation
    return (
        f"loadbench: warning: the generator was saturated ({(load or 0) * 100:.0f} % of "
        f"{threads}): these figures may be its limit, not the server's; give it more threads "
        "and cores (-t N --cpus LIST)"
    )


def _quic_lines(r: Any) -> list[str]:
    """HTTP/3: datagrams both ways, the UDP buffers granted and the kernel's receive drops."""
    mib = 1 << 20
    out = [
        f"  quic          datagrams sent {r.quic_datagrams_sent:,} in {r.quic_send_calls:,} send calls,"
        " received "
        f"{r.quic_datagrams_received:,} in {r.quic_receive_calls:,} receive calls"
        f" (GRO {'on' if r.udp.get('gro') else 'off'}); UDP buffers granted: receive "
        f"{r.udp.get('receive_buffer', 0) / mib:.1f} MiB, send {r.udp.get('send_buffer', 0) / mib:.1f} MiB"
    ]
    if not r.udp.get("drops_measured"):
        out.append("                kernel UDP drops not measured (/proc/net/snmp unreadable)")
    elif r.udp.get("in_errors"):
        full = r.udp.get("rcvbuf_errors", 0)
        out.append(
            f"                the kernel dropped {r.udp['in_errors']:,} UDP datagrams"
            f" ({full:,} of them: receive buffer full) - machine-wide counters, other UDP"
            " receivers included"
        )
    return out
